// Publishing through the user's shell commands, as hg 6.5's clonebundles: upload-command runs with
// HGCB_BUNDLE_PATH (the local file) and the basename, delete-command with the basename and
// HGCB_BUNDLE_URL. The basename is in HGCB_BASENAME and in HGCB_BUNDLE_BASENAME (hg's upload-command
// reads the second, its delete-command the first), so commands written for hg work unchanged.

import { spawn } from 'node:child_process';
import { SluiceError } from '../../errors';
import type { BundlePublisher } from './publisher';

/** the last bytes of a failing command's output kept for its error message */
const OUTPUT_TAIL = 2048;

function runShell(
  command: string,
  env: Record<string, string>,
  what: string,
  signal?: AbortSignal,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, {
      shell: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
      ...(signal ? { signal } : {}),
    });
    let tail = '';
    const keep = (d: Buffer): void => {
      tail = (tail + d.toString('utf8')).slice(-OUTPUT_TAIL);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.on('error', (e) => reject(new SluiceError('UPLOAD_FAILED', `${what} could not run: ${e.message}`)));
    child.on('close', (code, sig) => {
      if (code === 0) return resolve();
      const how = sig ? `killed by ${sig}` : `exit status ${code}`;
      reject(
        new SluiceError('UPLOAD_FAILED', `${what} failed (${how})${tail.trim() ? `: ${tail.trim()}` : ''}`),
      );
    });
  });
}

export function commandPublisher(
  uploadCommand: string | undefined,
  deleteCommand: string | undefined,
): BundlePublisher {
  return {
    async upload(path, basename, signal) {
      if (!uploadCommand) throw new SluiceError('USAGE', 'clone-bundles.upload-command is not set');
      await runShell(
        uploadCommand,
        { HGCB_BUNDLE_PATH: path, HGCB_BASENAME: basename, HGCB_BUNDLE_BASENAME: basename },
        'upload-command',
        signal,
      );
    },
    async remove({ basename, url }, signal) {
      // without a delete-command, old bundles stay where they are
      if (!deleteCommand) return;
      await runShell(
        deleteCommand,
        { HGCB_BASENAME: basename, HGCB_BUNDLE_BASENAME: basename, HGCB_BUNDLE_URL: url },
        'delete-command',
        signal,
      );
    },
  };
}
