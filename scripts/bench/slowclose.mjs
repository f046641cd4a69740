// The emulated slow close() of the benchmarks (../shared/bench/slowclose.c, an LD_PRELOAD shim that
// makes close() of files under a prefix take SLOWCLOSE_US, as NTFS does): built once per folder.
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { SHARED_BENCH } from './corpus.mjs';

/** `dir`/slowclose.so, built with cc unless it is there; null without a compiler. */
export function buildSlowclose(dir) {
  const so = join(dir, 'slowclose.so');
  if (existsSync(so)) return so;
  const r = spawnSync('cc', [
    '-O2',
    '-shared',
    '-fPIC',
    '-o',
    so,
    join(SHARED_BENCH, 'slowclose.c'),
    '-ldl',
    '-lpthread',
  ]);
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
