// libuv's threadpool is one per process, shared by the main thread and every worker thread, and
// sized once from UV_THREADPOOL_SIZE when something first queues work on it (an async fs call,
// dns.lookup, zlib...). The engine's background closer queues many fs.close calls at once (hg's
// worker.backgroundclosethreadcount, and NTFS's slow CloseHandle makes each one long), so the pool
// must be larger than libuv's default 4 before anything touches it: this module is the first
// import of every host entry point (Electron main, web host), and scripts/start.mjs also sets the
// variable in the environment of the process it launches.

export const ENGINE_THREADPOOL_SIZE = 64;

if (!process.env.UV_THREADPOOL_SIZE) process.env.UV_THREADPOOL_SIZE = String(ENGINE_THREADPOOL_SIZE);
