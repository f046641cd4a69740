// `npm run fuzz`: the fuzz suite (test/fuzz/*.test.ts) for a given duration, many more cases than
// the bounded run inside `vitest run`. Each round runs the suite with a fresh fast-check seed and
// FUZZ_RUNS times the usual case counts; the first failing round stops the run and prints the
// command that replays it (same seed, same multiplier).
//
//   npm run fuzz -- [--duration 10m] [--runs 50] [--only revlog|format|wire] [--seed N]
//   (durations: 90s, 10m, 2h; default 10m)
import { spawnSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '10m' },
    runs: { type: 'string', default: '50' },
    only: { type: 'string' },
    seed: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  console.log('usage: npm run fuzz -- [--duration 10m] [--runs 50] [--only revlog|format|wire] [--seed N]');
  process.exit(0);
}

function parseDuration(s) {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(s.trim());
  if (!m) throw new Error(`bad --duration ${JSON.stringify(s)} (examples: 90s, 10m, 2h)`);
  const n = Number(m[1]);
  return n * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] ?? 's'];
}

const budgetMs = parseDuration(values.duration);
const runs = Number(values.runs);
if (!Number.isFinite(runs) || runs <= 0) throw new Error(`bad --runs ${values.runs}`);
const target = values.only ? join('test', 'fuzz', `${values.only}.fuzz.test.ts`) : join('test', 'fuzz');
const vitest = join(ROOT, 'node_modules', 'vitest', 'vitest.mjs');

const started = Date.now();
let round = 0;
for (;;) {
  const seed = values.seed !== undefined ? Number(values.seed) : Math.floor(Math.random() * 2 ** 31);
  round++;
  const t0 = Date.now();
  console.log(`fuzz round ${round}: seed ${seed}, FUZZ_RUNS=${runs}, ${target}`);
  const res = spawnSync(process.execPath, [vitest, 'run', target, '--reporter=dot', '--testTimeout=0'], {
    cwd: ROOT,
    stdio: 'inherit',
    env: { ...process.env, FUZZ_RUNS: String(runs), FUZZ_SEED: String(seed) },
  });
  const secs = ((Date.now() - t0) / 1000).toFixed(0);
  if (res.status !== 0) {
    console.error(`\nfuzz round ${round} FAILED after ${secs} s. Replay with:`);
    console.error(`  FUZZ_SEED=${seed} FUZZ_RUNS=${runs} npx vitest run ${target}`);
    process.exit(1);
  }
  console.log(`fuzz round ${round}: ok in ${secs} s`);
  if (values.seed !== undefined || Date.now() - started + (Date.now() - t0) > budgetMs) break;
}
console.log(`fuzz: ${round} rounds, no failure, ${((Date.now() - started) / 1000).toFixed(0)} s`);
