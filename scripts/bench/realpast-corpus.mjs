// The `realpast` bench corpora: a repository with a real past. Successive released versions of
// real npm packages (fetched once with `npm pack` into the bench folder's npm-cache/) committed by
// realpast-build.py with hg's own commit machinery: real diffs, renames, deletions, thousands of
// changesets and long delta chains, stored as this hg stores them (generaldelta, sparse-revlog).
//
//   realpast        eslint + webpack, the last 150 stable versions of each, zstd revlogs
//   realpast-zlib   the same history with zlib revlogs (hg's default compression): hg's own
//                   `clone --pull` of realpast with format.revlog-compression=zlib, stored as hg
//                   stores what it pulls (minutes of commits saved)
//
// As a script: node scripts/bench/realpast-corpus.mjs PRESET DEST
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { hgPython } from './measure.mjs';

const HERE = import.meta.dirname;

/** Presets: packages and how many of their latest stable versions, changeset size, compression. */
export const REALPAST_PRESETS = {
  realpast: { packages: { eslint: 150, webpack: 150 }, split: 4, compression: 'zstd' },
  'realpast-zlib': { from: 'realpast', compression: 'zlib' },
};

const npm = (args, cwd) => {
  const r = spawnSync('npm', args, { cwd, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`npm ${args.join(' ')}: ${r.stderr.slice(-2000)}`);
  return r.stdout;
};

/**
 * The latest `count` stable versions of `pkg`, in version order, each dated at its publish time
 * made monotonic (the registry re-dated some old versions when it republished them).
 */
function stableVersions(pkg, count) {
  const times = JSON.parse(npm(['view', pkg, 'time', '--json']));
  const key = (v) => v.split('.').map(Number);
  const byVersion = (a, b) => {
    const [x, y] = [key(a), key(b)];
    return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
  };
  let last = '';
  return Object.keys(times)
    .filter((v) => /^\d+\.\d+\.\d+$/.test(v))
    .sort(byVersion)
    .slice(-count)
    .map((version) => {
      last = times[version] > last ? times[version] : last;
      return { pkg, version, time: last };
    });
}

/** `npm pack`s the tarballs the cache lacks, a batch per npm run; returns each version's path. */
function fetchTarballs(versions, cache) {
  mkdirSync(cache, { recursive: true });
  const file = (v) => join(cache, `${v.pkg.replace(/^@/, '').replace('/', '-')}-${v.version}.tgz`);
  const missing = versions.filter((v) => !existsSync(file(v)));
  for (let i = 0; i < missing.length; i += 40) {
    npm(['pack', '--silent', ...missing.slice(i, i + 40).map((v) => `${v.pkg}@${v.version}`)], cache);
  }
  return versions.map((v) => ({ ...v, tarball: file(v) }));
}

/**
 * Builds `dest` from a plan (realpast-build.py's input): the versions to commit, in order.
 * @param {string} dest
 * @param {{ compression: string, split: number, versions: { pkg: string, version: string, time: string, tarball: string }[] }} plan
 */
export function buildFromPlan(dest, plan) {
  rmSync(dest, { recursive: true, force: true });
  mkdirSync(dest, { recursive: true });
  const planFile = `${dest}.plan.json`;
  writeFileSync(planFile, JSON.stringify(plan));
  const r = spawnSync(hgPython(), [join(HERE, 'realpast-build.py'), dest, planFile], {
    stdio: 'inherit',
    env: { ...process.env, HGPLAIN: '1', HGRCPATH: '', PYTHONHASHSEED: '0' },
  });
  rmSync(planFile, { force: true });
  if (r.status !== 0) throw new Error(`realpast-build.py ${dest} failed`);
}

/** Builds the preset's corpus at `dest` (tarballs cached in `cache`). */
export function buildRealpast(preset, dest, cache) {
  const p = REALPAST_PRESETS[preset];
  if (!p) throw new Error(`unknown realpast preset ${preset}`);
  if (p.from) {
    const source = join(dest, '..', `corpus-${p.from}`);
    if (!existsSync(join(source, '.hg', 'store', '00changelog.i'))) buildRealpast(p.from, source, cache);
    rmSync(dest, { recursive: true, force: true });
    const r = spawnSync(
      'hg',
      ['clone', '-q', '-U', '--pull', '--config', `format.revlog-compression=${p.compression}`, source, dest],
      { stdio: 'inherit', env: { ...process.env, HGPLAIN: '1', HGRCPATH: '' } },
    );
    if (r.status !== 0) throw new Error(`hg clone --pull ${source} ${dest} failed`);
    return;
  }
  const versions = Object.entries(p.packages)
    .flatMap(([pkg, count]) => stableVersions(pkg, count))
    .sort((a, b) => a.time.localeCompare(b.time));
  const fetched = fetchTarballs(versions, cache);
  buildFromPlan(dest, { compression: p.compression, split: p.split, versions: fetched });
  // the working copy served only to commit; the corpora are stores, like make-corpus.sh's
  for (const e of readdirSync(dest)) if (e !== '.hg') rmSync(join(dest, e), { recursive: true, force: true });
  spawnSync('hg', ['-R', dest, 'debugsetparents', 'null'], { stdio: 'inherit' });
  rmSync(join(dest, '.hg', 'dirstate'), { force: true });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [preset, dest] = process.argv.slice(2);
  buildRealpast(preset, resolve(dest), join(resolve(dest, '..'), 'npm-cache'));
}
