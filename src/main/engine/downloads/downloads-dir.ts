// Where partial downloads are kept between runs: one folder per user that the CLI and the app
// share, in the platform's cache location (a partial bundle is re-downloadable, never precious).

import { homedir } from 'node:os';
import { join } from 'node:path';

/** The bound on the partials' total size unless SLUICE_DOWNLOADS_MAX_MB says otherwise. */
export const DEFAULT_DOWNLOADS_MAX_BYTES = 4 * 1024 ** 3;

export interface DownloadsPolicy {
  /** the folder holding `<key>.part`, `<key>.json` and `<key>.lock` */
  dir: string;
  /** the partials' total size; the oldest are evicted first */
  maxBytes: number;
}

/** SLUICE_CACHE_DIR, else XDG_CACHE_HOME / %LOCALAPPDATA% / ~/Library/Caches, + Sluice/downloads. */
export function defaultDownloadsDir(
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
): string {
  if (env.SLUICE_CACHE_DIR) return join(env.SLUICE_CACHE_DIR, 'downloads');
  const home = homedir();
  let base: string;
  if (platform === 'win32') base = env.LOCALAPPDATA ?? join(home, 'AppData', 'Local');
  else if (platform === 'darwin') base = join(home, 'Library', 'Caches');
  else base = env.XDG_CACHE_HOME || join(home, '.cache');
  return join(base, 'Sluice', 'downloads');
}

/** The policy the CLI and the app run jobs with. */
export function defaultDownloadsPolicy(env: NodeJS.ProcessEnv = process.env): DownloadsPolicy {
  const mb = env.SLUICE_DOWNLOADS_MAX_MB;
  const maxBytes = mb && /^\d{1,9}$/.test(mb) ? Number(mb) * 1024 ** 2 : DEFAULT_DOWNLOADS_MAX_BYTES;
  return { dir: defaultDownloadsDir(env), maxBytes };
}
