// Changegroup bundle apply per compression: `sluice apply B NEW` against `hg unbundle B` into a
// fresh `hg init` repository (init not timed), for the none/gzip/bzip2/zstd v2 bundles `hg bundle
// -a` makes of the corpus. Whole processes; wall, user and system CPU, peak RSS (measure.mjs);
// runs interleaved, median by wall. Also the store size each produces and a check that both give
// the same `hg log` (nodes and phases).
//
// As a module (scripts/bench.mjs's unbundle section): run({ corpusDir, workDir, reps, say }).
// As a script: node scripts/bench/unbundle-bench.mjs [CORPUS_DIR] [--reps N] [--types none,zstd]
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { fmtTable, measure } from './measure.mjs';

const ROOT = resolve(fileURLToPath(import.meta.url), '..', '..', '..');
const SLUICE = join(ROOT, 'bin', 'sluice.cjs');
const HG_ENV = { ...process.env, HGPLAIN: '1', HGRCPATH: '/dev/null', LC_ALL: 'C' };
const TYPES = ['none', 'gzip', 'bzip2', 'zstd'];

function storeBytes(dir) {
  let total = 0;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = statSync(p);
    if (st.isDirectory()) total += storeBytes(p);
    else if (!/^(undo|journal)/.test(name)) total += st.size; // hg's undo files are not data
  }
  return total;
}

function hgLog(repo) {
  return execFileSync('hg', ['log', '-R', repo, '-T', '{node} {phase}\n'], {
    env: HG_ENV,
    maxBuffer: 256 << 20,
  }).toString();
}

/**
 * @param {{ corpusDir: string, workDir?: string, reps?: number, say?: (l: string) => void, types?: string[], build?: boolean }} options
 */
export async function run(options) {
  const corpus = resolve(options.corpusDir);
  const say = options.say ?? ((l) => console.log(l));
  const reps = Math.max(1, Math.min(options.reps ?? 1, 3)); // an hg unbundle of the medium corpus takes ~10 s
  const types = options.types ?? TYPES;
  const work = options.workDir ?? mkdtempSync(join(tmpdir(), 'sluice-unbundle-bench-'));
  mkdirSync(work, { recursive: true });
  if (options.build !== false)
    execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-cli.mjs')], { cwd: ROOT, stdio: 'inherit' });
  const rows = [];
  let n = 0;
  try {
    for (const type of types) {
      const bundle = join(work, `${type}-v2.hg`);
      execFileSync('hg', ['bundle', '-q', '-a', '-R', corpus, '-t', `${type}-v2`, bundle], { env: HG_ENV });
      const size = statSync(bundle).size;
      const hgRuns = [];
      const slRuns = [];
      let hgStore = 0;
      let slStore = 0;
      let same = true;
      for (let i = 0; i < reps; i++) {
        const hgDest = join(work, `hg-${n}`);
        const slDest = join(work, `sl-${n++}`);
        execFileSync('hg', ['init', hgDest], { env: HG_ENV });
        const h = await measure('hg', ['unbundle', '-q', '-R', hgDest, bundle], { env: HG_ENV });
        const s = await measure(process.execPath, [SLUICE, 'apply', bundle, slDest]);
        if (h.code !== 0) throw new Error(`hg unbundle failed: ${h.stderr.slice(-500)}`);
        if (s.code !== 0) throw new Error(`sluice apply failed: ${s.stderr.slice(-500)}`);
        hgRuns.push(h);
        slRuns.push(s);
        if (i === 0) {
          hgStore = storeBytes(join(hgDest, '.hg', 'store'));
          slStore = storeBytes(join(slDest, '.hg', 'store'));
          same = hgLog(hgDest) === hgLog(slDest);
        }
        rmSync(hgDest, { recursive: true, force: true });
        rmSync(slDest, { recursive: true, force: true });
      }
      rmSync(bundle, { force: true });
      const med = (rs) => [...rs].sort((a, b) => a.wallMs - b.wallMs)[Math.floor(rs.length / 2)];
      const h = med(hgRuns);
      const s = med(slRuns);
      const cells = (r, store) => [
        (r.wallMs / 1000).toFixed(3),
        (r.userMs / 1000).toFixed(3),
        (r.sysMs / 1000).toFixed(3),
        (r.maxRssKb / 1024).toFixed(0),
        (store / 1e6).toFixed(1),
      ];
      rows.push([`hg unbundle ${type}-v2 (${(size / 1e6).toFixed(1)} MB)`, ...cells(h, hgStore), '', '']);
      rows.push([
        `sluice apply ${type}-v2`,
        ...cells(s, slStore),
        (h.wallMs / s.wallMs).toFixed(2) + 'x',
        same ? 'yes' : 'NO',
      ]);
    }
  } finally {
    if (!options.workDir) rmSync(work, { recursive: true, force: true });
  }
  const text =
    `\n### Changegroup bundle apply per compression, ${corpus} (median of ${reps}; hg unbundle into a fresh hg init)\n` +
    fmtTable(['', 'wall s', 'user s', 'sys s', 'RSS MB', 'store MB', 'hg / sluice', 'same hg log'], rows);
  say(text);
  return '';
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { reps: { type: 'string', default: '1' }, types: { type: 'string' } },
  });
  const corpusDir = positionals[0] ?? '/dev/shm/sluice-bench/corpus-medium';
  if (!existsSync(join(corpusDir, '.hg'))) throw new Error(`${corpusDir} is not a repository`);
  await run({
    corpusDir,
    reps: Number(values.reps),
    ...(values.types ? { types: values.types.split(',') } : {}),
  });
}
