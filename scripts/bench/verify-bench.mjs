// Verify benchmark: `sluice verify -q` against `hg verify -q` on the same repository (both only
// read it). Whole processes, startup included; wall, user and system CPU and peak RSS of each run
// (scripts/bench/measure.mjs); rounds interleaved, median by wall time. Also checks that both
// report the same "checked N changesets with M changes to K files".
//
// As a module (scripts/bench.mjs's verify section): run({ corpusDir, reps, say }) or run(corpusDir)
// -> markdown table. As a script:
//   node scripts/bench/verify-bench.mjs [CORPUS_DIR] [--reps N] [--json]
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fmtTable, measure, sectionArgs } from './measure.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const HG_ENV = { ...process.env, HGPLAIN: '1', HGRCPATH: '/dev/null', LC_ALL: 'C' };

function summaryLine(cmd, args, env) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', env, maxBuffer: 64 << 20 });
  const line = (r.stdout ?? '').split('\n').find((l) => l.startsWith('checked '));
  return { code: r.status, line: line ?? `(no summary; exit ${r.status}: ${(r.stderr ?? '').slice(-300)})` };
}

/**
 * @param {string | { corpusDir: string, reps?: number, say?: (line: string) => void, build?: boolean }} options
 * @returns {Promise<string>} a markdown report; `.rows` on the returned String object carries the numbers
 */
export async function run(options) {
  const opts = typeof options === 'string' ? { corpusDir: options } : options;
  const corpus = resolve(opts.corpusDir);
  const reps = opts.reps ?? 3;
  const say = opts.say ?? (() => undefined);
  if (!existsSync(join(corpus, '.hg'))) throw new Error(`verify-bench: ${corpus} is not a repository`);
  if (opts.build !== false)
    execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-cli.mjs')], { cwd: ROOT, stdio: 'inherit' });
  const sluice = join(ROOT, 'bin', 'sluice.cjs');

  const contenders = [
    {
      name: 'sluice verify',
      cmd: process.execPath,
      args: [sluice, 'verify', '-q', corpus],
      env: process.env,
    },
    { name: 'hg verify', cmd: 'hg', args: ['verify', '-q', '-R', corpus], env: HG_ENV },
  ];
  const sluiceSummary = summaryLine(process.execPath, [sluice, 'verify', corpus], process.env);
  const hgSummary = summaryLine('hg', ['verify', '-R', corpus], HG_ENV);
  say(`verify: sluice says "${sluiceSummary.line}", hg says "${hgSummary.line}"`);

  const results = new Map(contenders.map((c) => [c.name, []]));
  for (let i = 0; i < reps; i++) {
    for (const c of contenders) {
      const r = await measure(c.cmd, c.args, { env: c.env });
      if (r.code !== 0) throw new Error(`${c.name} failed (exit ${r.code}): ${r.stderr.slice(-1000)}`);
      results.get(c.name).push(r);
    }
  }
  const rows = contenders.map((c) => {
    const rs = [...results.get(c.name)].sort((a, b) => a.wallMs - b.wallMs);
    const med = rs[Math.floor(rs.length / 2)];
    return {
      name: c.name,
      wallMs: med.wallMs,
      minWallMs: rs[0].wallMs,
      userMs: med.userMs,
      sysMs: med.sysMs,
      maxRssKb: med.maxRssKb,
    };
  });
  const hgRow = rows.find((r) => r.name === 'hg verify');
  const table = fmtTable(
    ['verify', 'wall s (median)', 'min s', 'user s', 'sys s', 'peak RSS MB', 'vs hg (wall)'],
    rows.map((r) => [
      r.name,
      (r.wallMs / 1000).toFixed(2),
      (r.minWallMs / 1000).toFixed(2),
      (r.userMs / 1000).toFixed(2),
      (r.sysMs / 1000).toFixed(2),
      (r.maxRssKb / 1024).toFixed(0),
      (r.wallMs / hgRow.wallMs).toFixed(2) + 'x',
    ]),
  );
  const same = sluiceSummary.line === hgSummary.line ? 'same summary' : 'SUMMARIES DIFFER';
  const text = new String(
    `\n### verify (${corpus}, ${reps} rounds; ${same}: ${sluiceSummary.line})\n\n${table}\n`,
  );
  text.rows = rows;
  return text;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const { corpus = '/dev/shm/corpus-medium', reps } = sectionArgs(args);
  const out = await run({ corpusDir: corpus, reps, say: (l) => process.stderr.write(l + '\n') });
  process.stdout.write(args.includes('--json') ? JSON.stringify(out.rows, null, 2) + '\n' : String(out));
}
