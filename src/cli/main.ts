// `sluice`: the command-line face of the engine. Started by bin/sluice.cjs, which sizes libuv's
// threadpool for the background closer first (an ES module entry cannot: see there). Run directly
// (`node out/cli/sluice.mjs`) the pool keeps its default 4 threads and the closer plans for that.
import { readFileSync } from 'node:fs';
import { EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, UsageError, type CliCommand, type CliIO } from './command';
import { command as apply } from './commands/apply';
import { command as bundle } from './commands/bundle';
import { command as clone } from './commands/clone';
import { command as inspect } from './commands/inspect';
import { command as serve } from './commands/serve';
import { command as verify } from './commands/verify';

export const COMMANDS: readonly CliCommand[] = [clone, apply, bundle, inspect, verify, serve];

function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version?: string;
    };
    return pkg.version ?? '?';
  } catch {
    return '?';
  }
}

function globalHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    'Sluice: stream clones for Mercurial, byte for byte',
    '',
    'usage: sluice COMMAND [ARGS]',
    '',
    'commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    "Run 'sluice help COMMAND' or 'sluice COMMAND --help' for a command's options.",
    'Exit codes: 0 ok, 1 error, 2 usage, 130 interrupted.',
    '',
  ].join('\n');
}

function commandHelp(c: CliCommand): string {
  return `usage: ${c.usage}\n\n${c.summary}\n\n${c.help}\n`;
}

export async function main(argv: string[], io: CliIO): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined || first === '--help' || first === '-h') {
    io.stdout.write(globalHelp());
    return first === undefined ? EXIT_USAGE : EXIT_OK;
  }
  if (first === '--version' || first === 'version') {
    io.stdout.write(`sluice ${version()}\n`);
    return EXIT_OK;
  }
  if (first === 'help') {
    const c = COMMANDS.find((x) => x.name === rest[0]);
    if (rest[0] !== undefined && !c) {
      io.stderr.write(`sluice: unknown command '${rest[0]}'\n`);
      return EXIT_USAGE;
    }
    io.stdout.write(c ? commandHelp(c) : globalHelp());
    return EXIT_OK;
  }
  const c = COMMANDS.find((x) => x.name === first);
  if (!c) {
    io.stderr.write(`sluice: unknown command '${first}'\n(see 'sluice --help')\n`);
    return EXIT_USAGE;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    io.stdout.write(commandHelp(c));
    return EXIT_OK;
  }
  try {
    return await c.run(rest, io);
  } catch (e) {
    if (e instanceof UsageError) {
      io.stderr.write(`sluice ${c.name}: ${e.message}\nusage: ${c.usage}\n`);
      return EXIT_USAGE;
    }
    throw e;
  }
}

/** Process entry: SIGINT cancels the job (temporary removed, exit 130); a second SIGINT exits at once. */
async function run(): Promise<void> {
  const controller = new AbortController();
  // `sluice apply --debug | head`: a closed stdout must not crash the job half-way (hg would die on
  // the broken pipe and leave its partial clone); the rest of the output is dropped instead.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code !== 'EPIPE') throw e;
      stream.write = (() => true) as typeof stream.write;
    });
  }
  let interrupts = 0;
  process.on('SIGINT', () => {
    if (++interrupts > 1) process.exit(EXIT_INTERRUPTED);
    controller.abort();
  });
  let code: number;
  try {
    code = await main(process.argv.slice(2), {
      stdout: process.stdout,
      stderr: process.stderr,
      signal: controller.signal,
    });
  } catch (e) {
    process.stderr.write(`abort: ${(e as Error).stack ?? String(e)}\n`);
    code = 1;
  }
  if (controller.signal.aborted && code === 0) code = EXIT_INTERRUPTED;
  process.exitCode = code;
}

// Run when executed (bin/sluice.cjs, node out/cli/sluice.mjs), not when imported by tests.
if (!process.env['SLUICE_CLI_NO_RUN']) await run();
