// `sluice`: the command-line face of the engine. Started by bin/sluice.cjs, which sizes libuv's
// threadpool for the background closer first (an ES module entry cannot: see there). Run directly
// (`node out/cli/sluice.mjs`) the pool keeps its default 4 threads and the closer plans for that.
import { readFileSync } from 'node:fs';
import { EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, UsageError, type CliCommand, type CliIO } from './command';

/**
 * Commands are loaded on demand: `sluice apply` must not pay for loading the HTTP client and
 * server (node:http, ws, tls) at every start (~10-15 ms of a 0.3 s apply).
 */
const COMMAND_MODULES: Readonly<Record<string, () => Promise<{ command: CliCommand }>>> = {
  clone: () => import('./commands/clone'),
  pull: () => import('./commands/pull'),
  apply: () => import('./commands/apply'),
  bundle: () => import('./commands/bundle'),
  inspect: () => import('./commands/inspect'),
  verify: () => import('./commands/verify'),
  serve: () => import('./commands/serve'),
  update: () => import('./commands/update'),
  status: () => import('./commands/status'),
  bundles: () => import('./commands/bundles'),
  downloads: () => import('./commands/downloads'),
};
export const COMMAND_NAMES: readonly string[] = Object.keys(COMMAND_MODULES);

async function loadCommand(name: string): Promise<CliCommand | undefined> {
  const load = Object.hasOwn(COMMAND_MODULES, name) ? COMMAND_MODULES[name] : undefined;
  return load ? (await load()).command : undefined;
}

export async function loadCommands(): Promise<CliCommand[]> {
  return Promise.all(COMMAND_NAMES.map(async (n) => (await loadCommand(n))!));
}

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

function globalHelp(commands: readonly CliCommand[]): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    'Sluice: clones, pulls and checkouts for Mercurial, byte for byte',
    '',
    'usage: sluice COMMAND [ARGS]',
    '',
    'commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    "Run 'sluice help COMMAND' or 'sluice COMMAND --help' for a command's options.",
    'Exit codes: 0 ok, 1 error, 2 usage, 130 interrupted.',
    '',
  ].join('\n');
}

function commandHelp(c: CliCommand): string {
  return `usage: ${c.usage}\n\n${c.summary}\n\n${c.help}\n`;
}

/**
 * hg's global `-R REPO` before the command (`REMOTECMD -R PATH serve --stdio`, what an ssh client
 * runs): moved behind the command name as its `--repository` option.
 */
function hoistRepository(argv: string[]): string[] {
  const m = /^(?:-R|--repository)(?:=?(.+))?$/.exec(argv[0] ?? '');
  if (!m) return argv;
  const value = m[1] ?? argv[1];
  const rest = argv.slice(m[1] !== undefined ? 1 : 2);
  if (value === undefined || rest[0] === undefined) return argv;
  return [rest[0], '--repository', value, ...rest.slice(1)];
}

export async function main(argv: string[], io: CliIO): Promise<number> {
  const [first, ...rest] = hoistRepository(argv);
  if (first === undefined || first === '--help' || first === '-h') {
    io.stdout.write(globalHelp(await loadCommands()));
    return first === undefined ? EXIT_USAGE : EXIT_OK;
  }
  if (first === '--version' || first === 'version') {
    io.stdout.write(`sluice ${version()}\n`);
    return EXIT_OK;
  }
  if (first === 'help') {
    const c = rest[0] === undefined ? undefined : await loadCommand(rest[0]);
    if (rest[0] !== undefined && !c) {
      io.stderr.write(`sluice: unknown command '${rest[0]}'\n`);
      return EXIT_USAGE;
    }
    io.stdout.write(c ? commandHelp(c) : globalHelp(await loadCommands()));
    return EXIT_OK;
  }
  const c = await loadCommand(first);
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

/** Exit status after SIGTERM or SIGHUP (128 + the signal's number, as a shell reports it). */
const TERMINATING_SIGNALS = { SIGTERM: 143, SIGHUP: 129 } as const;
/** How long a job cancelled by SIGTERM or SIGHUP has to roll back before the process exits anyway. */
const TERMINATE_GRACE_MS = 20_000;

/**
 * Process entry: SIGINT cancels the job (temporary removed, exit 130); a second SIGINT exits at
 * once. SIGTERM and SIGHUP (a closed terminal, sshd ending `serve --stdio`) cancel it the same
 * way, as hg's catchterm does, so a service manager's stop leaves no temporary, lock or journal.
 */
async function run(): Promise<void> {
  const controller = new AbortController();
  // `sluice apply --debug | head`: a closed stdout must not crash the job half-way (hg would die on
  // the broken pipe and leave its partial clone); the rest of the output is dropped instead. A
  // terminal that hung up (EIO) is the same.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code !== 'EPIPE' && e.code !== 'EIO') throw e;
      stream.write = (() => true) as typeof stream.write;
    });
  }
  let interrupts = 0;
  let terminatedWith: number | null = null;
  process.on('SIGINT', () => {
    if (++interrupts > 1) process.exit(terminatedWith ?? EXIT_INTERRUPTED);
    controller.abort();
  });
  // (Node resets inherited dispositions at start-up, nohup's ignored SIGHUP included: a handler
  // here takes nothing away from `nohup sluice pull`, which a hang-up always killed.)
  for (const [signal, status] of Object.entries(TERMINATING_SIGNALS)) {
    process.on(signal, () => {
      if (++interrupts > 1) process.exit(terminatedWith ?? status);
      terminatedWith = status;
      controller.abort();
      // a command that does not watch the signal (bundle, inspect) still ends
      setTimeout(() => process.exit(status), TERMINATE_GRACE_MS).unref();
    });
  }
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
  if (terminatedWith !== null && code === EXIT_INTERRUPTED) code = terminatedWith;
  process.exitCode = code;
}

// Run when executed (bin/sluice.cjs, node out/cli/sluice.mjs), not when imported by tests.
if (!process.env['SLUICE_CLI_NO_RUN']) await run();
