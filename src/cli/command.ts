// The shape of a `sluice` subcommand. Every file in src/cli/commands/ exports `command: CliCommand`
// and is listed in main.ts. Commands parse their own arguments with parseCommandArgs (node's
// util.parseArgs, strict) and return an exit code: 0 ok, 1 error, 2 usage, 130 interrupted.

import { parseArgs, type ParseArgsConfig } from 'node:util';
import { DEFAULT_CLOSER_OPTIONS, type CloserOptions } from '../shared/jobs';

export interface CliIO {
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
  /** fires on SIGINT (the job cancels cleanly, the command returns EXIT_INTERRUPTED) */
  signal: AbortSignal;
}

export interface CliCommand {
  name: string;
  /** one line for `sluice --help` */
  summary: string;
  /** `sluice apply BUNDLE DEST [options]` */
  usage: string;
  /** options and details for `sluice help CMD` */
  help: string;
  run(argv: string[], io: CliIO): Promise<number>;
}

export const EXIT_OK = 0;
export const EXIT_ERROR = 1;
export const EXIT_USAGE = 2;
export const EXIT_INTERRUPTED = 130;
/** hg's exit status for an abort (dispatch: -1 & 255), kept where Sluice refuses as hg refuses */
export const EXIT_ABORT = 255;

/**
 * Errors whose abort is hg's, word for word (a lock held past ui.timeout or not creatable, a
 * requirement unknown to this program): they exit as hg does, so a script sees the same status.
 */
const HG_ABORTS: ReadonlySet<string> = new Set(['LOCKED', 'LOCK_UNAVAILABLE', 'UNSUPPORTED_REQUIREMENTS']);

/** The exit status of a command that failed with `error`. */
export function exitStatusFor(error: unknown): number {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && HG_ABORTS.has(code) ? EXIT_ABORT : EXIT_ERROR;
}

/** Bad command line: main prints `sluice CMD: message`, the usage, and exits 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

type Options = NonNullable<ParseArgsConfig['options']>;

/** util.parseArgs in strict mode, with its errors turned into UsageError and `--help` handled. */
export function parseCommandArgs<O extends Options>(
  argv: string[],
  options: O,
  positionals: { min: number; max: number },
): {
  values: ReturnType<typeof parseArgs<{ options: O; allowPositionals: true; strict: true }>>['values'];
  positionals: string[];
} {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (e) {
    throw new UsageError((e as Error).message.replace(/\. To specify a positional argument.*$/s, ''));
  }
  const n = parsed.positionals.length;
  if (n < positionals.min) throw new UsageError('missing arguments');
  if (n > positionals.max)
    throw new UsageError(`unexpected argument '${parsed.positionals[positionals.max]}'`);
  return { values: parsed.values, positionals: parsed.positionals };
}

/** A choice option's value, checked (`--background-close on|off|auto`). */
export function choice<T extends string>(
  name: string,
  value: string | undefined,
  allowed: readonly T[],
): T | undefined {
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value)) {
    throw new UsageError(`--${name} must be one of ${allowed.join(', ')} (got '${value}')`);
  }
  return value as T;
}

/** A positive integer option (`--close-threads 32`). */
export function positiveInt(
  name: string,
  value: string | undefined,
  max = Number.MAX_SAFE_INTEGER,
): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[0-9]+$/.test(value) || Number(value) < 1 || Number(value) > max) {
    throw new UsageError(`--${name} must be an integer between 1 and ${max} (got '${value}')`);
  }
  return Number(value);
}

/** The background closer's options, common to the commands that write a repository (apply, clone). */
export const CLOSER_OPTIONS = {
  'background-close': { type: 'string' },
  'close-threads': { type: 'string' },
  'simulate-close-ms': { type: 'string' },
} as const;

export const CLOSER_HELP = `  --background-close on|off|auto  close written files on background threads (worker.backgroundclose;
                                  auto = on for Windows, elsewhere on once the first closes prove slow)
  --close-threads N               closing threads (worker.backgroundclosethreadcount, default ${DEFAULT_CLOSER_OPTIONS.closeThreads})
  --simulate-close-ms N           simulate a slow close() (NTFS-like): delay each close by N ms (comparisons)`;

/** The closer options given on the command line; the queue ones only where the command takes them. */
export function closerOptions(values: {
  'background-close'?: string | undefined;
  'close-threads'?: string | undefined;
  'simulate-close-ms'?: string | undefined;
  'min-file-count'?: string | undefined;
  'max-queue'?: string | undefined;
}): Partial<CloserOptions> {
  const closer: Partial<CloserOptions> = {};
  const mode = choice('background-close', values['background-close'], ['on', 'off', 'auto'] as const);
  if (mode) closer.backgroundClose = mode;
  const threads = positiveInt('close-threads', values['close-threads'], 1000);
  if (threads) closer.closeThreads = threads;
  const simulate = positiveInt('simulate-close-ms', values['simulate-close-ms'], 100);
  if (simulate) closer.simulateCloseMs = simulate;
  const minFiles = positiveInt('min-file-count', values['min-file-count']);
  if (minFiles) closer.minFileCount = minFiles;
  const maxQueue = positiveInt('max-queue', values['max-queue'], 100_000);
  if (maxQueue) closer.maxQueue = maxQueue;
  return closer;
}

/** The common output options of job commands. */
export const OUTPUT_OPTIONS = {
  json: { type: 'boolean' },
  debug: { type: 'boolean' },
  quiet: { type: 'boolean', short: 'q' },
  help: { type: 'boolean', short: 'h' },
} as const;

export const OUTPUT_HELP = `  --json        print every event as one JSON object per line (NDJSON) on stdout
  --debug       print hg-style debug lines ("adding [s] data/foo.i (66 bytes)")
  -q, --quiet   print nothing but errors
  -h, --help    show this help`;
