// Where partial downloads are kept between runs: one folder per user that the CLI and the app
// share, in the platform's cache location (a partial bundle is re-downloadable, never precious).

import { join } from 'node:path';
import { userCacheDir } from '../context/user-cache-dir';

/** The bound on the partials' total size unless SLUICE_DOWNLOADS_MAX_MB says otherwise. */
export const DEFAULT_DOWNLOADS_MAX_BYTES = 4 * 1024 ** 3;

export interface DownloadsPolicy {
  /** the folder holding `<key>.part`, `<key>.json` and `<key>.lock` */
  dir: string;
  /** the partials' total size; the oldest are evicted first */
  maxBytes: number;
}

/** `downloads` in the user's Sluice cache folder (SLUICE_CACHE_DIR moves it). */
export function defaultDownloadsDir(
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
): string {
  return join(userCacheDir(env, platform), 'downloads');
}

/** The policy the CLI and the app run jobs with. */
export function defaultDownloadsPolicy(env: NodeJS.ProcessEnv = process.env): DownloadsPolicy {
  const mb = env.SLUICE_DOWNLOADS_MAX_MB;
  const maxBytes = mb && /^\d{1,9}$/.test(mb) ? Number(mb) * 1024 ** 2 : DEFAULT_DOWNLOADS_MAX_BYTES;
  return { dir: defaultDownloadsDir(env), maxBytes };
}
