// Building job requests from the dialogs' fields, in one place so every dialog sends the same shape.

import type { CloserOptions } from '../../../shared/jobs';
import type { TransferDefaults } from './types';
import { isAbsolutePath } from '../lib/paths';

export function closerFromDefaults(
  d: Pick<TransferDefaults, 'backgroundClose' | 'closeThreads'>,
): Partial<CloserOptions> {
  return d.backgroundClose === 'off'
    ? { backgroundClose: 'off' }
    : { backgroundClose: d.backgroundClose, closeThreads: d.closeThreads };
}

/**
 * The closer and verify options a transfer dialog opens with: a failed request's own ("Edit &
 * retry"), else the defaults of Settings.
 */
export function transferOptionsFrom(
  initial: { closer?: Partial<CloserOptions>; verify?: boolean } | undefined,
  d: Pick<TransferDefaults, 'backgroundClose' | 'closeThreads' | 'verify'>,
): Pick<TransferDefaults, 'backgroundClose' | 'closeThreads' | 'verify'> {
  return {
    backgroundClose: initial?.closer?.backgroundClose ?? d.backgroundClose,
    closeThreads: initial?.closer?.closeThreads ?? d.closeThreads,
    verify: initial?.verify ?? d.verify,
  };
}

/** An http(s) or ssh URL with a host, or a local repository: an absolute path or a file:/// URL. */
export function validateCloneUrl(raw: string): string | null {
  const url = raw.trim();
  if (url === '') return 'Enter the URL of a Mercurial repository.';
  if (isAbsolutePath(url)) return null; // a local repository (hg's localpeer)
  if (/^file:/i.test(url))
    return /^file:\/\/(localhost)?\//i.test(url)
      ? null
      : 'A file URL names a local path: file:///path/to/repo.';
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'This is not a URL. It should look like https://hg.example.org/repo.';
  }
  if (u.protocol === 'ssh:') {
    // hg's form: ssh://[user@]host[:port]/path (//abs/path for an absolute path)
    if (!u.hostname) return 'The URL has no host name.';
    if (u.password) return 'Do not put a password in an ssh:// URL: ssh uses your keys (ssh-agent).';
    if (!u.pathname || u.pathname === '/') return 'Add the repository path: ssh://host/path/to/repo.';
    if (/^-/.test(decodeURIComponent(u.username || u.hostname))) return 'This ssh:// URL is not safe to use.';
    return null;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    return 'Only http://, https://, ssh:// and file:// URLs and absolute paths are supported.';
  if (!u.hostname) return 'The URL has no host name.';
  return null;
}

export function validateDestination(raw: string): string | null {
  const dest = raw.trim();
  if (dest === '') return 'Choose where the repository goes.';
  if (!isAbsolutePath(dest)) return 'Use an absolute path (for example /home/me/src/repo).';
  return null;
}
