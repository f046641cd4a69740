// glibc's malloc serves a request below its mmap threshold from the main heap (brk), whose freed
// holes stay resident; the threshold starts at 128 KiB and rises to the size of each mmap'd block
// freed, up to 32 MiB. A changegroup apply frees such blocks all along (decoded wire pieces,
// large texts, codec contexts), so after the first one its large transient buffers land in the
// main heap too and fragment it: realpast pull clone and bundle apply, peak RSS ~15 MB higher
// (docs/benchmarks/analysis.md, "Peak RSS of the realpast pull clone"). A fixed threshold keeps
// them mmap'd, returned to the system when the garbage collector frees them. glibc reads it only
// when the process starts (MALLOC_MMAP_THRESHOLD_), so the CLI re-executes itself with it for the
// commands that apply changegroups, once (the variable, then set, is the guard). Other C
// libraries ignore the variable; only Linux is tried. A stream bundle's apply writes store files
// as they come and gains nothing, so `apply` of one is not re-executed (the ~30 ms of a second
// node start would count against `tar -x`).

import { closeSync, openSync, readSync } from 'node:fs';

/** glibc's environment alias of the glibc.malloc.mmap_threshold tunable. */
export const MMAP_THRESHOLD_ENV = 'MALLOC_MMAP_THRESHOLD_';
/** glibc's initial threshold, kept fixed. */
export const MMAP_THRESHOLD = 128 << 10;
/** The commands that apply changegroups (clone falls back to a pull without a stream clone). */
const TUNED_COMMANDS: ReadonlySet<string> = new Set(['clone', 'pull', 'apply']);

/** `sluice apply`'s options that take a value (docs/cli.md). */
const APPLY_VALUE_OPTIONS: ReadonlySet<string> = new Set([
  '--background-close',
  '--close-threads',
  '--simulate-close-ms',
]);

/** The command `sluice` was given and the arguments after it, past a leading `-R REPO`. */
function commandOf(argv: readonly string[]): { command?: string; rest: readonly string[] } {
  const m = /^(?:-R|--repository)(=.+)?$/.exec(argv[0] ?? '');
  const at = !m ? 0 : m[1] !== undefined ? 1 : 2;
  return { command: argv[at], rest: argv.slice(at + 1) };
}

/** `sluice apply`'s BUNDLE argument: its first positional one. */
function applyBundleArg(rest: readonly string[]): string | undefined {
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i]!;
    if (APPLY_VALUE_OPTIONS.has(a)) i++;
    else if (!a.startsWith('-')) return a;
  }
  return undefined;
}

/**
 * Whether the file starts as a stream bundle: packed1 (`HGS1`), or an uncompressed bundle2 whose
 * first part is `stream2`. A compressed bundle2 or anything unreadable is not known to be one.
 */
export function isStreamBundleFile(path: string): boolean {
  const head = Buffer.alloc(4096);
  let n = 0;
  try {
    const fd = openSync(path, 'r');
    try {
      n = readSync(fd, head, 0, head.length, 0);
    } finally {
      closeSync(fd);
    }
  } catch {
    return false;
  }
  const magic = head.toString('latin1', 0, 4);
  if (n >= 4 && magic === 'HGS1') return true;
  if (n < 12 || magic !== 'HG20') return false;
  const paramsEnd = 8 + head.readUInt32BE(4);
  if (paramsEnd + 5 > n) return false;
  const params = head.toString('latin1', 8, paramsEnd);
  if (/(^| )Compression=(?!UN( |$))/.test(params)) return false;
  const typeEnd = paramsEnd + 5 + head[paramsEnd + 4]!;
  if (typeEnd > n) return false;
  return head.toString('latin1', paramsEnd + 5, typeEnd).toLowerCase() === 'stream2';
}

/**
 * The environment to re-execute with, or undefined when this process is fine as it is: not Linux,
 * not a changegroup command, or the threshold already set (by a user, or by the re-execution).
 */
export function mallocTunedEnv(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
): NodeJS.ProcessEnv | undefined {
  if (platform !== 'linux' || env[MMAP_THRESHOLD_ENV] !== undefined) return undefined;
  if (env.GLIBC_TUNABLES?.includes('glibc.malloc.mmap_threshold')) return undefined;
  const { command, rest } = commandOf(argv);
  if (command === undefined || !TUNED_COMMANDS.has(command)) return undefined;
  if (command === 'apply') {
    const bundle = applyBundleArg(rest);
    if (bundle !== undefined && isStreamBundleFile(bundle)) return undefined;
  }
  return { ...env, [MMAP_THRESHOLD_ENV]: String(MMAP_THRESHOLD) };
}

type Execve = (file: string, args: string[], env: NodeJS.ProcessEnv) => never;

/**
 * Replaces this process with the same node and arguments under mallocTunedEnv's environment
 * (process.execve: Node >= 22.15, not in worker threads). Returns when there is nothing to do, or
 * when the re-execution fails (the command then runs with glibc's defaults).
 */
export function reexecWithMallocTuning(argv: readonly string[]): void {
  const env = mallocTunedEnv(argv);
  const execve = (process as unknown as { execve?: Execve }).execve;
  if (env === undefined || typeof execve !== 'function') return;
  try {
    execve(process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], env);
  } catch {
    // e.g. a sandbox refusing execve: the same command, only with more fragmentation
  }
}
