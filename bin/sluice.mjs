#!/usr/bin/env node
// Compatibility entry: the `sluice` command is bin/sluice.cjs (package.json bin; see there why it
// is CommonJS). An ES module entry is loaded on libuv's threadpool, which therefore already runs
// with the size it had at process start: say so in UV_THREADPOOL_SIZE (the closer plans its
// threads from it) and run the command in this process.
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

process.env.UV_THREADPOOL_SIZE ||= '4';
await import(pathToFileURL(join(dirname(fileURLToPath(import.meta.url)), 'sluice.cjs')).href);
