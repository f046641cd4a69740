// Runs an engine job for a command and renders its events: NDJSON (--json), hg-style status and
// debug lines, and a one-line progress bar with rate and ETA when stderr is a terminal. Shared by
// every job command (apply, bundle, and WIRE's clone / VERIFY's verify).

import { debugLine, formatHgBytes, transferredLine, type SluiceEvent } from '../shared/events';
import type { JobRequest } from '../shared/jobs';
import { isSluiceError } from '../main/engine/errors';
import { JobContext, type JobContextOptions } from '../main/engine/context/job-context';
import { runJob } from '../main/engine/job/run-job';
import { defaultDownloadsPolicy } from '../main/engine/downloads/downloads-dir';
import { EXIT_INTERRUPTED, EXIT_OK, exitStatusFor, type CliIO } from './command';
import { ProgressBar } from './progress-bar';
import { terminalSafe } from './terminal-safe';

/**
 * A failed command's `abort: MESSAGE` and, when the error carries one, hg's `(hint)` line below
 * it (scmutil.callcatch); returns the exit status (255 where the abort is hg's own).
 */
export function writeAbort(io: Pick<CliIO, 'stderr'>, e: unknown): number {
  io.stderr.write(`abort: ${terminalSafe((e as Error).message)}\n`);
  const hint = isSluiceError(e) ? e.details?.hint : undefined;
  if (typeof hint === 'string') io.stderr.write(`(${terminalSafe(hint)})\n`);
  return exitStatusFor(e);
}

export interface OutputFlags {
  json?: boolean;
  debug?: boolean;
  quiet?: boolean;
}

/**
 * Runs `request` to its end; returns the exit code (0, 1, or 130 after SIGINT). Network commands
 * pass the host's part: how to ask for credentials (the terminal prompt) and the ssh settings.
 */
export async function runJobForCli(
  request: JobRequest,
  flags: OutputFlags,
  io: CliIO,
  host: Pick<JobContextOptions, 'askCredentials' | 'connect'> = {},
): Promise<number> {
  const render = new EventRenderer(flags, io);
  const ctx = new JobContext({
    ...host,
    // a clone bundle cut short is kept for the same command run again (shared with the app)
    downloads: defaultDownloadsPolicy(),
    signal: io.signal,
    sink: (e) => render.event(e),
    fileEvents: Boolean(flags.json || flags.debug),
  });
  try {
    await runJob(request, ctx);
    return EXIT_OK;
  } catch (e) {
    render.clearBar();
    // After Ctrl-C any failure is its consequence (a read cut short, a closed pipe): report the interrupt.
    if ((isSluiceError(e) && e.code === 'CANCELLED') || io.signal.aborted) {
      io.stderr.write('interrupted!\n');
      return EXIT_INTERRUPTED;
    }
    return writeAbort(io, e);
  } finally {
    render.clearBar();
  }
}

/** Turns events into terminal output. */
export class EventRenderer {
  private readonly bar: ProgressBar | undefined;

  constructor(
    private readonly flags: OutputFlags,
    private readonly io: CliIO,
  ) {
    if (!flags.json && !flags.quiet && io.stderr.isTTY) this.bar = new ProgressBar(io.stderr);
  }

  event(e: SluiceEvent): void {
    const { stdout, stderr } = this.io;
    if (this.flags.json) {
      stdout.write(JSON.stringify(e) + '\n');
      // debug lines go to stderr so stdout stays NDJSON
      if (this.flags.debug && e.type === 'files')
        stderr.write(e.entries.map((f) => debugLine(f) + '\n').join(''));
      return;
    }
    const status = (line: string): void => {
      if (this.flags.quiet) return;
      this.bar?.clear();
      stdout.write(line + '\n');
    };
    switch (e.type) {
      case 'start':
        if ((e.kind === 'apply' || e.kind === 'clone') && e.format !== 'changegroup') {
          status(`${e.files} files to transfer, ${formatHgBytes(e.bytes)} of data`);
        } else if (e.kind === 'bundle') {
          status(`writing ${e.bytes} bytes for ${e.files} files`);
          status(`bundle requirements: ${e.requirements.join(', ')}`);
        }
        break;
      case 'files':
        if (this.flags.debug) {
          this.bar?.clear();
          stdout.write(e.entries.map((f) => debugLine(f) + '\n').join(''));
        }
        break;
      case 'progress':
        this.bar?.render(e);
        break;
      case 'phase':
        if (this.flags.debug) status(`phase: ${e.phase}`);
        break;
      case 'log':
        if (e.level === 'warn') {
          this.bar?.clear();
          stderr.write(`warning: ${terminalSafe(e.message)}\n`);
        } else if (e.level === 'info' || this.flags.debug) {
          status(terminalSafe(e.message));
        }
        break;
      case 'done': {
        status(transferredLine(e.bytes, e.wallMs));
        if (this.flags.debug) {
          const c = e.close;
          status(
            `cpu: user ${e.userCpuMs} ms, system ${e.systemCpuMs} ms; peak rss ${formatHgBytes(e.peakRssBytes ?? 0)}` +
              (c
                ? `; close: ${c.background ? `${c.threads} threads, ${c.backgroundClosed} in background` : 'synchronous'}, ` +
                  `${c.syncClosed} on the writer, writer waited ${c.writerWaitMs} ms`
                : ''),
          );
        }
        break;
      }
      case 'error':
        break; // printed as `abort: ...` by runJobForCli
    }
  }

  clearBar(): void {
    this.bar?.clear();
  }
}
