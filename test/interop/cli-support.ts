// The `sluice` command as users run it (a child process of bin/sluice, from source), and hg run
// synchronously for setting repositories up.

import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, hgSync } from '../support/env';

/** The real entry (bin/sluice.mjs re-runs it as a child that a signal to the parent would not reach). */
const SLUICE_BIN = existsSync(join(ROOT, 'bin', 'sluice.cjs'))
  ? join(ROOT, 'bin', 'sluice.cjs')
  : join(ROOT, 'bin', 'sluice.mjs');

export interface SluiceRun {
  code: number;
  stdout: string;
  stderr: string;
}

export interface SluiceOptions {
  cwd?: string;
  /** added to the environment */
  env?: NodeJS.ProcessEnv;
  /** a command line prefix sluice runs under (`setpriv --reuid=…`: as another user) */
  wrapper?: string[];
  /** called with stderr as it grows (to act once sluice says it waits) */
  onStderr?: (soFar: string) => void;
}

/**
 * Runs `sluice ARGS` (in `cwd`, or with options) to its end (killed after two minutes, which the
 * test sees as a failure); never throws on a failure.
 */
export function sluice(args: string[], cwdOrOptions?: string | SluiceOptions): Promise<SluiceRun> {
  const opts = typeof cwdOrOptions === 'string' ? { cwd: cwdOrOptions } : (cwdOrOptions ?? {});
  const [cmd, ...pre] = [...(opts.wrapper ?? []), process.execPath];
  return new Promise((resolve, reject) => {
    const child = spawn(cmd!, [...pre, SLUICE_BIN, ...args], {
      cwd: opts.cwd,
      env: { ...process.env, ...opts.env, SLUICE_FROM_SOURCE: '1' },
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

/** hg ARGS, its output; a failure throws with hg's stderr. */
export function hgOrThrow(args: string[], cwd?: string): string {
  const r = hgSync(args, cwd);
  if (r.status !== 0) throw new Error(`hg ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}
