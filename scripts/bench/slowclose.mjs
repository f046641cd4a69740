// The emulated slow close() of the benchmarks (../shared/bench/slowclose.c, an LD_PRELOAD shim that
// makes close() of files under a prefix take SLOWCLOSE_US, as NTFS does): built once per folder.
import { existsSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { SHARED_BENCH } from './corpus.mjs';

/**
 * `dir`/slowclose.so, built with cc unless one at least as new as slowclose.c is there (the shim
 * changes: a copy built from an older source would measure the old behaviour); null without a
 * compiler.
 */
export function buildSlowclose(dir) {
  const so = join(dir, 'slowclose.so');
  const source = join(SHARED_BENCH, 'slowclose.c');
  if (existsSync(so) && statSync(so).mtimeMs >= statSync(source).mtimeMs) return so;
  const r = spawnSync('cc', ['-O2', '-shared', '-fPIC', '-o', so, source, '-ldl', '-lpthread']);
  return r.status === 0 ? so : null;
}

/**
 * The environment of a process whose closes under `prefix` take `latencyUs`. libuv's io_uring is
 * off: its closes would bypass the shim's close().
 */
export const slowcloseEnv = (so, prefix, latencyUs) => ({
  ...process.env,
  LD_PRELOAD: so,
  SLOWCLOSE_PREFIX: prefix,
  SLOWCLOSE_US: String(latencyUs),
  UV_USE_IO_URING: '0',
});
