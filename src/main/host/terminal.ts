// "Open in terminal" for a repository: the platform's usual terminal, started in the folder.
// Plain Node (child_process), so Electron main and tests share it; the web host does not start
// programs for a browser page and shows the command instead.

import { spawn } from 'node:child_process';

export interface TerminalCommand {
  command: string;
  args: string[];
}

/** What to try, in order: macOS Terminal, Windows' cmd, then Debian's alternative and common Linux terminals. */
export function terminalCommands(
  dir: string,
  platform: NodeJS.Platform,
  env: NodeJS.ProcessEnv = process.env,
): TerminalCommand[] {
  if (platform === 'darwin') return [{ command: 'open', args: ['-a', 'Terminal', dir] }];
  // cmd's start opens a new console window that inherits the working directory
  if (platform === 'win32') return [{ command: env.ComSpec ?? 'cmd.exe', args: ['/c', 'start', 'cmd.exe'] }];
  const linux: TerminalCommand[] = [
    { command: 'x-terminal-emulator', args: [] },
    { command: 'gnome-terminal', args: [`--working-directory=${dir}`] },
    { command: 'konsole', args: ['--workdir', dir] },
    { command: 'xfce4-terminal', args: [`--working-directory=${dir}`] },
    { command: 'xterm', args: [] },
  ];
  return env.TERMINAL ? [{ command: env.TERMINAL, args: [] }, ...linux] : linux;
}

/** The command a user would type to get there (shown when no terminal can be started). */
export function changeDirectoryCommand(dir: string, platform: NodeJS.Platform): string {
  if (platform === 'win32') return `cd /d "${dir}"`;
  return `cd '${dir.replace(/'/g, `'\\''`)}'`;
}

/** Starts the first terminal that exists, detached, in `dir`; false when none could be started. */
export async function openTerminal(
  dir: string,
  platform: NodeJS.Platform = process.platform,
): Promise<boolean> {
  for (const { command, args } of terminalCommands(dir, platform)) {
    const started = await new Promise<boolean>((resolve) => {
      const child = spawn(command, args, { cwd: dir, detached: true, stdio: 'ignore' });
      child.once('error', () => resolve(false));
      child.once('spawn', () => {
        child.unref();
        resolve(true);
      });
    });
    if (started) return true;
  }
  return false;
}
