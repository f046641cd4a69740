// Runs the `sluice` command as a user does, from source, for tests that check what reaches the
// terminal and the exit status (hg's 255 for its aborts).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../support/env';

export const SLUICE_BIN = existsSync(join(ROOT, 'bin', 'sluice.cjs'))
  ? join(ROOT, 'bin', 'sluice.cjs')
  : join(ROOT, 'bin', 'sluice.mjs');

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** a command line prefix (`setpriv --reuid=…`): sluice runs under it */
  wrapper?: string[];
  /** called with stderr as it grows (to act once sluice says it waits) */
  onStderr?: (soFar: string) => void;
}

/** `sluice ARGS` to its end (killed after 120 s, which a test then sees as a failure). */
export function runSluice(args: string[], opts: CliOptions = {}): Promise<CliRun> {
  const argv = [...(opts.wrapper ?? []), process.execPath, SLUICE_BIN, ...args];
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd: opts.cwd,
      env: { ...process.env, HGRCPATH: '', ...opts.env, SLUICE_FROM_SOURCE: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 120_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
      opts.onStderr?.(stderr);
    });
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 128 : 1), stdout, stderr }));
  });
}
