// JobContext: what every engine job gets from whoever runs it (CLI, the app's engine host, tests):
// an id, a cancel signal and one place to send events. The engine never talks to a UI directly.

import { randomBytes } from 'node:crypto';
import type { EventSink, JobPhase, SluiceEvent } from '../../../shared/events';
import type { FreeSpacePolicy } from '../repo/free-space';
import type { DownloadsPolicy } from '../downloads/downloads-dir';
import { cancelled } from '../errors';

/** An event as a job emits it; the context stamps jobId and time. */
export type JobEventInput = SluiceEvent extends infer E
  ? E extends SluiceEvent
    ? Omit<E, 'jobId' | 'time'>
    : never
  : never;

/** Asks the user for credentials for `url` (HTTP 401 with `realm`); null = declined. */
export type CredentialsPrompt = (request: {
  url: string;
  realm: string;
}) => Promise<{ user: string; password: string } | null>;

/**
 * How network jobs reach ssh:// URLs, set by the host that runs the job (the CLI from its flags and
 * terminal, the app from its settings), never by a request: a request may come from a renderer,
 * and the ssh command is a shell command line.
 */
export interface ConnectOptions {
  /** ssh:// URLs: the ssh command line (hg's ui.ssh); default SLUICE_SSH, [ui] ssh, `ssh` */
  sshCommand?: string;
  /** ssh:// URLs: the command run on the remote (hg's ui.remotecmd); default [ui] remotecmd, `hg` */
  remoteCommand?: string;
  /** ssh may prompt on this process's terminal (a CLI on a tty); otherwise BatchMode and no tty */
  interactive?: boolean;
}

export interface JobContextOptions {
  jobId?: string;
  signal?: AbortSignal;
  /** receives every event; must not throw (exceptions are swallowed so a UI bug cannot fail a job) */
  sink?: EventSink;
  /**
   * Emit per-file `files` events (batched). Off saves ~1 µs per file (decoding names for display);
   * the CLI turns it on for --json and --debug.
   */
  fileEvents?: boolean;
  /** progress events per second (default 10) */
  progressHz?: number;
  /** for network jobs (WIRE): how to ask for credentials; absent = fail with AUTH */
  askCredentials?: CredentialsPrompt;
  /** for network jobs (WIRE): the ssh command (timeouts are the request's) */
  connect?: ConnectOptions;
  /** how writes without a declared size watch the free space (repo/free-space.ts; default statfs) */
  freeSpace?: FreeSpacePolicy;
  /**
   * Where downloads that may be resumed by a later run are kept (the CLI and the app share one
   * folder: downloads/downloads-dir.ts); absent = a download lives only as long as its job.
   */
  downloads?: DownloadsPolicy;
}

export class JobContext {
  readonly jobId: string;
  readonly signal: AbortSignal;
  readonly fileEvents: boolean;
  readonly progressIntervalMs: number;
  readonly askCredentials: CredentialsPrompt | undefined;
  readonly connect: ConnectOptions;
  readonly freeSpace: FreeSpacePolicy;
  readonly downloads: DownloadsPolicy | null;
  private readonly sink: EventSink;

  constructor(options: JobContextOptions = {}) {
    this.jobId = options.jobId ?? randomBytes(6).toString('hex');
    this.signal = options.signal ?? new AbortController().signal;
    this.sink = options.sink ?? (() => undefined);
    this.fileEvents = options.fileEvents ?? true;
    this.progressIntervalMs = 1000 / Math.max(0.1, options.progressHz ?? 10);
    this.askCredentials = options.askCredentials;
    this.connect = options.connect ?? {};
    this.freeSpace = options.freeSpace ?? {};
    this.downloads = options.downloads ?? null;
  }

  emit(event: JobEventInput): void {
    const full = { ...event, jobId: this.jobId, time: Date.now() } as SluiceEvent;
    try {
      this.sink(full);
    } catch {
      // a throwing listener must not break the job
    }
  }

  phase(phase: JobPhase): void {
    this.emit({ type: 'phase', phase });
  }

  log(level: 'debug' | 'info' | 'warn', message: string): void {
    this.emit({ type: 'log', level, message });
  }

  get cancelled(): boolean {
    return this.signal.aborted;
  }

  /** Throws SluiceError('CANCELLED') once the signal fired. */
  throwIfCancelled(): void {
    if (this.signal.aborted) throw cancelled();
  }
}
