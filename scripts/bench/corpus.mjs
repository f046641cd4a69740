// Benchmark corpora: real hg repositories from ../shared/bench/make-corpus.sh, built once on tmpfs
// (like the seed's RAM disk) and reused across runs; the generator is deterministic.
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '..', '..');
export const SHARED_BENCH = resolve(ROOT, '..', 'shared', 'bench');

/** tmpfs when available: disk effects (ext4 inode reuse after mass deletes) would swamp the numbers. */
export function benchBase() {
  const base = existsSync('/dev/shm') ? '/dev/shm/sluice-bench' : join(ROOT, '.bench');
  mkdirSync(base, { recursive: true });
  return base;
}

export function ensureCorpus(preset) {
  // corpora made by earlier runs (or by hand at /dev/shm/corpus-PRESET) are reused
  for (const dir of [join(benchBase(), `corpus-${preset}`), `/dev/shm/corpus-${preset}`]) {
    if (existsSync(join(dir, '.hg', 'store', '00changelog.i'))) return dir;
  }
  const dir = join(benchBase(), `corpus-${preset}`);
  console.log(`building the ${preset} corpus in ${dir} (make-corpus.sh; once)...`);
  const r = spawnSync('bash', [join(SHARED_BENCH, 'make-corpus.sh'), '--force', '--preset', preset, dir], { stdio: 'inherit' });
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
