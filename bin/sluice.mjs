#!/usr/bin/env node
// Compatibility entry: the `sluice` command is bin/sluice.cjs (see there why it is CommonJS).
// An ES module entry cannot size libuv's threadpool any more, so unless UV_THREADPOOL_SIZE is
// already set this re-runs the command through bin/sluice.cjs (one extra process start, ~40 ms).
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
if (process.env.UV_THREADPOOL_SIZE) {
  await import(pathToFileURL(join(here, 'sluice.cjs')).href);
} else {
  const child = spawn(process.execPath, [join(here, 'sluice.cjs'), ...process.argv.slice(2)], {
    stdio: 'inherit',
  });
  // Ctrl-C reaches the whole process group: the child cancels its job; we only wait for it.
  process.on('SIGINT', () => undefined);
  process.on('SIGTERM', () => child.kill('SIGTERM'));
  child.on('exit', (code, signal) => {
    if (signal) process.kill(process.pid, signal);
    else process.exit(code ?? 1);
  });
}
