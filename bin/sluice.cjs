#!/usr/bin/env node
// The `sluice` command. CommonJS on purpose: libuv sizes its threadpool from UV_THREADPOOL_SIZE
// once, when the pool starts, and Node's ESM loader starts it while loading an ES module entry
// (async file reads), before any of that module's code runs. A CommonJS entry runs first, so it
// can size the pool for the background closer (--close-threads) before anything else happens.
'use strict';
/* eslint-disable @typescript-eslint/no-require-imports -- CommonJS on purpose, see above */
const { existsSync } = require('node:fs');
const { join } = require('node:path');
const { pathToFileURL } = require('node:url');

/** Mirrors closeThreadsFromArgv/threadpoolSizeFor in src/main/engine/closer/background-closer.ts. */
function threadpoolSizeForArgv(argv) {
  let threads = 48; // DEFAULT_CLOSER_OPTIONS.closeThreads (src/shared/jobs.ts)
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v =
      a === '--close-threads' ? argv[i + 1] : a.startsWith('--close-threads=') ? a.slice(16) : undefined;
    const n = v === undefined ? NaN : Number.parseInt(v, 10);
    if (Number.isFinite(n) && n > 0) threads = n;
  }
  return Math.min(1024, Math.max(4, threads + 2));
}

if (!process.env.UV_THREADPOOL_SIZE) {
  process.env.UV_THREADPOOL_SIZE = String(threadpoolSizeForArgv(process.argv.slice(2)));
}
const root = join(__dirname, '..');
const built = join(root, 'out', 'cli', 'sluice.mjs');
if (existsSync(built) && !process.env.SLUICE_FROM_SOURCE) {
  import(pathToFileURL(built).href);
} else {
  // a checkout where the CLI was not built yet: run the TypeScript sources through tsx
  import('tsx/esm/api').then(({ register }) => {
    register();
    return import(pathToFileURL(join(root, 'src', 'cli', 'main.ts')).href);
  });
}
