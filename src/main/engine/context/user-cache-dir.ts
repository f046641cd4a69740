// The one per-user cache folder of Sluice, shared by the CLI and the app: partial downloads
// (downloads/downloads-dir.ts) and the CLI's compile cache (main/compile-cache.ts) live in it.
// Everything in it can be rebuilt; nothing in it is precious.

import { homedir } from 'node:os';
import { join } from 'node:path';

/** SLUICE_CACHE_DIR, else `Sluice` in XDG_CACHE_HOME (~/.cache), ~/Library/Caches or %LOCALAPPDATA%. */
export function userCacheDir(
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
): string {
  if (env.SLUICE_CACHE_DIR) return env.SLUICE_CACHE_DIR;
  const home = homedir();
  let base: string;
  if (platform === 'win32') base = env.LOCALAPPDATA ?? join(home, 'AppData', 'Local');
  else if (platform === 'darwin') base = join(home, 'Library', 'Caches');
  else base = env.XDG_CACHE_HOME || join(home, '.cache');
  return join(base, 'Sluice');
}
