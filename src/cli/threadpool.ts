// Sizes libuv's threadpool for the background closer. libuv reads UV_THREADPOOL_SIZE once, when
// the pool starts (the first async fs call, dns lookup or zlib job), so this module must be the
// first import of the CLI entry and must not itself use the pool. An explicit UV_THREADPOOL_SIZE in
// the environment wins. (The app's engine process must do the same before its first async fs call.)

import { closeThreadsFromArgv, threadpoolSizeFor } from '../main/engine/closer/background-closer';

if (!process.env['UV_THREADPOOL_SIZE']) {
  process.env['UV_THREADPOOL_SIZE'] = String(threadpoolSizeFor(closeThreadsFromArgv(process.argv.slice(2))));
}
