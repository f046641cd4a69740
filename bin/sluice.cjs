#!/usr/bin/env node
// The `sluice` command. CommonJS on purpose: libuv sizes its threadpool from UV_THREADPOOL_SIZE
// once, when the pool starts, and Node's ESM loader starts it while loading an ES module entry
// (async file reads), before any of that module's code runs. This entry runs first and sizes the
// pool for the background closer (--close-threads) through src/main/bootstrap.ts (the one
// definition, built to out/cli/bootstrap.cjs), then runs the CLI.
'use strict';
/* eslint-disable @typescript-eslint/no-require-imports -- CommonJS on purpose, see above */
const { existsSync } = require('node:fs');
const { join } = require('node:path');
const { pathToFileURL } = require('node:url');

const root = join(__dirname, '..');
const built = join(root, 'out', 'cli', 'sluice.mjs');
const bootstrap = join(root, 'out', 'cli', 'bootstrap.cjs');
if (existsSync(built) && existsSync(bootstrap) && !process.env.SLUICE_FROM_SOURCE) {
  require(bootstrap).startCli(pathToFileURL(built).href);
} else {
  // a checkout where the CLI was not built yet: the same bootstrap and the CLI from their
  // TypeScript sources through tsx (its CommonJS loader reads files synchronously: no pool yet).
  // tsx is a dev dependency: an install without them runs the built out/cli.
  let tsxRequire;
  try {
    tsxRequire = require('tsx/cjs/api').require;
  } catch {
    console.error(
      'sluice: out/cli is not built and tsx (a dev dependency) is missing: run `npm run build:cli`',
    );
    process.exit(1);
  }
  const { closeThreadsFromArgv, sizeThreadpool } = tsxRequire(
    '../src/main/engine/closer/threadpool.ts',
    __filename,
  );
  sizeThreadpool(closeThreadsFromArgv(process.argv.slice(2)));
  import('tsx/esm/api').then(({ register }) => {
    register();
    return import(pathToFileURL(join(root, 'src', 'cli', 'main.ts')).href);
  });
}
