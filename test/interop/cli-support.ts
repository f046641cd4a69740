// The `sluice` command as users run it (a child process of bin/sluice, from source), and hg run
// synchronously for setting repositories up.

import { execFile } from 'node:child_process';
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

/** Runs `sluice ARGS` in `cwd` to its end (two minutes at most); never throws on a failure. */
export function sluice(args: string[], cwd?: string): Promise<SluiceRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [SLUICE_BIN, ...args],
      { cwd, env: { ...process.env, SLUICE_FROM_SOURCE: '1' }, encoding: 'utf8', timeout: 120_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** hg ARGS, its output; a failure throws with hg's stderr. */
export function hgOrThrow(args: string[], cwd?: string): string {
  const r = hgSync(args, cwd);
  if (r.status !== 0) throw new Error(`hg ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}
