// Bundle files named on the command line (`sluice-app some.hg`, what the OS passes when the user
// opens a .hg file with Sluice on Windows and Linux; macOS sends `open-file` instead). Only
// existing regular files with the .hg extension count: Electron and Chromium add switches of their
// own to argv, and a second instance's argv is relative to its own working directory.

import { statSync } from 'node:fs';
import { resolve } from 'node:path';

export function bundlePathsFromArgv(argv: readonly string[], cwd: string): string[] {
  const out: string[] = [];
  for (const arg of argv) {
    if (arg.startsWith('-') || !/\.hg$/i.test(arg)) continue;
    const path = resolve(cwd, arg);
    try {
      if (statSync(path).isFile() && !out.includes(path)) out.push(path);
    } catch {
      // not a file: ignore
    }
  }
  return out;
}
