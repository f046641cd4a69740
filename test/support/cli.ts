// The `sluice` command run in process: main() imported without its process entry, its output
// captured.

import type { CliIO } from '../../src/cli/command';

export interface CliRun {
  code: number;
  out: string;
  err: string;
}

/** Loads main() (SLUICE_CLI_NO_RUN keeps the module from running as the process entry). */
export async function loadCliMain(): Promise<(argv: string[], io: CliIO) => Promise<number>> {
  process.env['SLUICE_CLI_NO_RUN'] = '1';
  return (await import('../../src/cli/main')).main;
}

/** Runs `main` with stdout and stderr captured (not a terminal, 80 columns). */
export async function runCli(
  main: (argv: string[], io: CliIO) => Promise<number>,
  argv: string[],
): Promise<CliRun> {
  let out = '';
  let err = '';
  const stream = (append: (s: string) => void) =>
    ({ write: (s: string) => (append(s), true), isTTY: false, columns: 80 }) as unknown as NodeJS.WriteStream;
  const io: CliIO = {
    stdout: stream((s) => (out += s)),
    stderr: stream((s) => (err += s)),
    signal: new AbortController().signal,
  };
  const code = await main(argv, io);
  return { code, out, err };
}
