// libuv's threadpool, sized for the background closer: the one definition of that sizing, used by
// the closer's plan (planCloser) and by the CommonJS bootstrap of every entry point (the `sluice`
// command, the Electron main, the web host; src/main/bootstrap.ts) before anything starts the pool.
//
// The pool is one per process, shared by the main thread and every worker thread, and libuv sizes
// it once from UV_THREADPOOL_SIZE when something first queues work on it (an async fs call,
// dns.lookup, zlib...). Node's ES module loader reads modules with async fs calls, so an ES module
// entry (Electron's main is one) has started the pool before its first line runs: setting the
// variable there is silently ignored and the closer's 48 planned closes run on 4 threads. Hence a
// CommonJS entry that sizes the pool first, then imports the ES modules.

import { DEFAULT_CLOSER_OPTIONS } from '../../../shared/jobs';

/** Pool threads kept free for the rest of the job (bundle reads, zlib). */
export const THREADPOOL_RESERVE = 2;

/** The libuv threadpool size this process runs with (UV_THREADPOOL_SIZE, default 4, max 1024). */
export function threadpoolSize(env: NodeJS.ProcessEnv = process.env): number {
  const n = Number.parseInt(env['UV_THREADPOOL_SIZE'] ?? '', 10);
  return Number.isFinite(n) && n > 0 ? Math.min(n, 1024) : 4;
}

/** UV_THREADPOOL_SIZE to set at process start for a given close thread count. */
export function threadpoolSizeFor(closeThreads: number): number {
  return Math.min(1024, Math.max(4, closeThreads + THREADPOOL_RESERVE));
}

/** The close thread count a `sluice` command line asks for (--close-threads N or =N; the last wins). */
export function closeThreadsFromArgv(argv: readonly string[]): number {
  let threads: number = DEFAULT_CLOSER_OPTIONS.closeThreads;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const v =
      a === '--close-threads'
        ? argv[i + 1]
        : a.startsWith('--close-threads=')
          ? a.slice('--close-threads='.length)
          : undefined;
    const n = v === undefined ? NaN : Number.parseInt(v, 10);
    if (Number.isFinite(n) && n > 0) threads = n;
  }
  return threads;
}

/**
 * Sets UV_THREADPOOL_SIZE for `closeThreads` closes in flight, unless the user set it. Only
 * effective before the pool started: call it from a CommonJS entry, first. Returns the size.
 */
export function sizeThreadpool(closeThreads: number, env: NodeJS.ProcessEnv = process.env): number {
  if (!env['UV_THREADPOOL_SIZE']) env['UV_THREADPOOL_SIZE'] = String(threadpoolSizeFor(closeThreads));
  return threadpoolSize(env);
}
