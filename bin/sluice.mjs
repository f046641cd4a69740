#!/usr/bin/env node
// The `sluice` command. Runs the bundled CLI (built by `npm install`'s prepare step into
// out/cli); in a checkout where it was not built yet, runs the TypeScript sources through tsx.
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const built = join(root, 'out', 'cli', 'sluice.mjs');
if (existsSync(built) && !process.env.SLUICE_FROM_SOURCE) {
  await import(pathToFileURL(built).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(pathToFileURL(join(root, 'src', 'cli', 'main.ts')).href);
}
