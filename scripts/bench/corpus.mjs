// Benchmark corpora: real hg repositories from ../shared/bench/make-corpus.sh, built once on tmpfs
// (like the seed's RAM disk) and reused across runs; the generator is deterministic.
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { buildRealpast, REALPAST_PRESETS } from './realpast-corpus.mjs';

export const ROOT = resolve(import.meta.dirname, '..', '..');
export const SHARED_BENCH = resolve(ROOT, '..', 'shared', 'bench');

/** tmpfs when available: disk effects (ext4 inode reuse after mass deletes) would swamp the numbers. */
export function benchBase() {
  const base = existsSync('/dev/shm') ? '/dev/shm/sluice-bench' : join(ROOT, '.bench');
  mkdirSync(base, { recursive: true });
  return base;
}

/**
 * Corpora beyond make-corpus.sh's own presets, as its options. `history`: a real project's history
 * shape (10k changesets touching ~4 files each, 5% of the files taking 80% of the changes): zstd
 * sparse revlogs whose delta chains average ~500 in the manifest and reach 1,000 (hg debugrevlog
 * -m), ~2.3 GB of file revisions behind a 66 MB store. About 10 minutes to build on 2 busy cores.
 * `small`: make-corpus.sh's defaults (2,000 files, 200 commits), for benches that run many clones
 * at once (clonebundles' 20 concurrent clones).
 */
export const EXTRA_PRESETS = {
  small: [],
  history: ['--files', '3000', '--commits', '10000', '--touch', '4', '--hot-pct', '5'],
};

export function ensureCorpus(preset) {
  // corpora made by earlier runs (or by hand at /dev/shm/corpus-PRESET) are reused
  for (const dir of [join(benchBase(), `corpus-${preset}`), `/dev/shm/corpus-${preset}`]) {
    if (existsSync(join(dir, '.hg', 'store', '00changelog.i'))) return dir;
  }
  const dir = join(benchBase(), `corpus-${preset}`);
  if (Object.hasOwn(REALPAST_PRESETS, preset)) {
    console.log(`building the ${preset} corpus in ${dir} (realpast-corpus.mjs; once)...`);
    buildRealpast(preset, dir, join(benchBase(), 'npm-cache'));
    return dir;
  }
  console.log(`building the ${preset} corpus in ${dir} (make-corpus.sh; once)...`);
  const how = EXTRA_PRESETS[preset] ?? ['--preset', preset];
  const r = spawnSync('bash', [join(SHARED_BENCH, 'make-corpus.sh'), '--force', ...how, dir], {
    stdio: 'inherit',
  });
  if (r.status !== 0) throw new Error(`make-corpus.sh --preset ${preset} failed`);
  return dir;
}

/** Sum of sizes and count of regular files below dir. */
export function treeSize(dir) {
  let bytes = 0;
  let files = 0;
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) {
        files++;
        bytes += statSync(p).size;
      }
    }
  };
  walk(dir);
  return { bytes, files };
}
