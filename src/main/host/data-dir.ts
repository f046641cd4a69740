// Where a host without Electron keeps its per-user data (history, the sample repository): the
// same place Electron's app.getPath('userData') would pick for an app named "Sluice", with a
// `web-host` subfolder so the two hosts never share (or fight over) one history file.

import { homedir } from 'node:os';
import { join } from 'node:path';

export function defaultDataDir(
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
): string {
  if (env.SLUICE_DATA_DIR) return env.SLUICE_DATA_DIR;
  const home = homedir();
  let base: string;
  if (platform === 'win32') base = env.APPDATA ?? join(home, 'AppData', 'Roaming');
  else if (platform === 'darwin') base = join(home, 'Library', 'Application Support');
  else base = env.XDG_CONFIG_HOME ?? join(home, '.config');
  return join(base, 'Sluice', 'web-host');
}

/** Where clones go unless the user picks another folder. */
export function defaultCloneDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.SLUICE_CLONE_DIR ?? join(homedir(), 'Sluice');
}
