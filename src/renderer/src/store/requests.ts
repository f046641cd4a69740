// Building job requests from the dialogs' fields, in one place so every dialog sends the same shape.

import type { CloserOptions } from '../../../shared/jobs';
import type { TransferDefaults } from './types';

export function closerFromDefaults(
  d: Pick<TransferDefaults, 'backgroundClose' | 'closeThreads'>,
): Partial<CloserOptions> {
  return d.backgroundClose === 'off'
    ? { backgroundClose: 'off' }
    : { backgroundClose: d.backgroundClose, closeThreads: d.closeThreads };
}

/** http(s) URL with a host; hg's other schemes (ssh, file) are not spoken by Sluice's engine. */
export function validateCloneUrl(raw: string): string | null {
  const url = raw.trim();
  if (url === '') return 'Enter the URL of a Mercurial repository.';
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'This is not a URL. It should look like https://hg.example.org/repo.';
  }
  if (u.protocol === 'ssh:') return 'ssh:// is not supported; use the http(s) URL of the repository.';
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    return 'Only http:// and https:// URLs are supported.';
  if (!u.hostname) return 'The URL has no host name.';
  return null;
}

export function validateDestination(raw: string): string | null {
  const dest = raw.trim();
  if (dest === '') return 'Choose where the repository goes.';
  if (!/^(\/|[A-Za-z]:[\\/]|\\\\)/.test(dest)) return 'Use an absolute path (for example /home/me/src/repo).';
  return null;
}
