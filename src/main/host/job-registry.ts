// The jobs of one host: runs them in one warm engine worker (started ahead, reused by every job,
// several at once), relays their events to the renderer through an EventBatcher, keeps their
// debug logs (JobLogStore: in memory while running, on disk once finished), tracks their state,
// answers cancels, and records each in the history when it ends. Hosts (Electron main, web host)
// subscribe to `push` and forward to their renderer(s).
//
// Cancel: the worker gets an abort message for the job (the engine stops at its next chunk, cleans
// its temporary directory and reports CANCELLED). An engine that does not finish within the grace
// period (stuck in a syscall, a bug) ends `cancelled` at once; its thread is terminated, at once
// when no other job runs on it, else when those end (new jobs go to a new worker meanwhile). Its
// temporary directory is then left behind, so the registry runs the engine's stale-temporary
// cleanup for that destination. A worker that crashes fails the jobs it ran with a clear message;
// the next job starts a new one.

import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { SluiceError, type ErrorCode } from '../engine/errors';
import { EventBatcher } from './event-batcher';
import { ThroughputSampler, type HistoryStore } from './history-store';
import { JobLogLines } from '../../shared/job-log-lines';
import { withoutCredentials } from '../../shared/urls';
import type { JobLogStore } from './job-log-store';
import { TypedEmitter } from './typed-emitter';
import type { EngineWorkerLike } from './engine-worker-host';
import type {
  EngineQuery,
  EngineQueryResult,
  QueryAnswer,
  WorkerStartData,
  WorkerToHost,
} from './worker-protocol';
import type { Credentials } from './engine-api';
import type { HistoryRecord, JobSummary, PushChannel, PushMap } from '../../shared/ipc';
import type { DoneEvent, SluiceEvent } from '../../shared/events';
import type { JobRequest } from '../../shared/jobs';

export type PushMessage = { [C in PushChannel]: { channel: C; payload: PushMap[C] } }[PushChannel];

export interface JobRegistryOptions {
  createWorker: (start: WorkerStartData) => EngineWorkerLike;
  history: HistoryStore;
  /** the jobs' debug logs */
  logs: JobLogStore;
  /** removes what a terminated job left beside its destination */
  cleanStaleTemporaries?: (dest: string) => Promise<void>;
  /** jobs running at once; more wait in state `queued` */
  maxConcurrent?: number;
  /** how long a cancelled engine may take to stop before its thread is terminated */
  cancelGraceMs?: number;
  /** renderer batching interval (20 messages/s per job at 50 ms) */
  batchIntervalMs?: number;
  /** the worker's own postMessage batching interval */
  workerBatchIntervalMs?: number;
  now?: () => number;
  /** credentials the user chose to remember ("Remember" in the sign-in dialog) */
  savedCredentials?: SavedCredentials;
}

/** The registry's view of the credential store (credential-store.ts). */
export interface SavedCredentials {
  lookup(url: string): Promise<Credentials | undefined>;
  remember(url: string, credentials: Credentials): Promise<boolean>;
  /** the saved ones were refused by the server */
  refused(url: string): Promise<void>;
}

const MAX_FINISHED_LISTED = 100;
/** after terminate(), how long to wait for the thread's exit before finishing the job anyway */
const TERMINATE_WAIT_MS = 2000;

/** One engine worker and the jobs it runs. */
interface WorkerSlot {
  worker: EngineWorkerLike;
  jobs: Set<string>;
  /** takes no new jobs: terminated once its jobs have ended (a job on it did not stop) */
  retiring: boolean;
  /** destinations of jobs given up on, cleaned once the thread is gone */
  orphans: string[];
  exited: boolean;
  exit: Promise<void>;
}

interface JobEntry {
  /** what the worker runs: the request as given, credentials in its URL included */
  request: JobRequest;
  /** what the renderer and the history see: the request without URL credentials */
  summary: JobSummary;
  label?: string;
  slot?: WorkerSlot;
  batcher: EventBatcher;
  sampler: ThroughputSampler;
  /** lines the host itself adds to the job's log (a crash, a terminated engine) */
  hostLines: JobLogLines;
  /** origins whose saved credentials were sent, and those refused (then forgotten) */
  triedSaved: Set<string>;
  refusedSaved: Set<string>;
  done?: DoneEvent;
  error?: { code: string; message: string };
  /** the last progress event's counts, kept in the history of a job that did not finish */
  progress?: HistoryRecord['progress'];
  cancelRequested: boolean;
  graceTimer?: ReturnType<typeof setTimeout>;
  finished: boolean;
  /** the `interrupted` record written when it started running */
  recordedStart?: Promise<void>;
  /** resolves when the job reached a final state and its history record was written */
  ended: Promise<void>;
  resolveEnded: () => void;
}

interface PendingQuery {
  slot: WorkerSlot;
  resolve: (result: unknown) => void;
  reject: (error: Error) => void;
  /** may ask the user for credentials (a row's "Sign in…"); else only saved ones are offered */
  interactive: boolean;
  /** origins whose saved credentials were sent */
  triedSaved: Set<string>;
}

interface RegistryEvents {
  push: [message: PushMessage];
}

export class JobRegistry {
  private readonly jobs = new Map<string, JobEntry>();
  private readonly queue: string[] = [];
  /** requestId -> the job (or query) and URL that asked */
  private readonly credentialRequests = new Map<string, { jobId: string; url: string }>();
  private readonly events = new TypedEmitter<RegistryEvents>();
  private maxConcurrent: number;
  private readonly cancelGraceMs: number;
  private readonly now: () => number;
  private readonly slots = new Set<WorkerSlot>();
  /** queries sent to a worker, answered by `answer` messages */
  private readonly queries = new Map<string, PendingQuery>();
  /** the worker new jobs go to */
  private current: WorkerSlot | null = null;
  private disposed = false;

  constructor(private readonly options: JobRegistryOptions) {
    this.maxConcurrent = options.maxConcurrent ?? 2;
    this.cancelGraceMs = options.cancelGraceMs ?? 3000;
    this.now = options.now ?? Date.now;
  }

  /** Everything for the renderer: batched job events, state changes, credential prompts. */
  onPush(listener: (message: PushMessage) => void): () => void {
    return this.events.on('push', listener);
  }

  /** Starts the engine worker ahead of the first job (host start-up), so no job waits for it. */
  warmUp(): void {
    if (this.disposed) return;
    try {
      this.workerForJobs();
    } catch (e) {
      console.warn('cannot start the engine worker:', (e as Error).message);
    }
  }

  start(request: JobRequest, label?: string): { jobId: string } {
    if (this.disposed) throw new SluiceError('CANCELLED', 'Sluice is shutting down');
    // Two jobs writing one destination: the second would only fail at its final rename, after
    // doing all its work. Refuse it now (hg clone refuses a non-empty destination up front too).
    const dest = destinationOf(request);
    const busy =
      dest !== undefined &&
      [...this.jobs.values()].find((j) => !j.finished && destinationOf(j.summary.request) === dest);
    if (busy)
      throw new SluiceError(
        'DEST_EXISTS',
        `destination '${dest}' is being written by another job (${busy.summary.jobId})`,
      );
    const jobId = randomUUID();
    let resolveEnded!: () => void;
    const ended = new Promise<void>((r) => (resolveEnded = r));
    const entry: JobEntry = {
      request,
      summary: { jobId, request: withoutUrlCredentials(request), state: 'queued', startedAt: this.now() },
      ...(label !== undefined && { label }),
      batcher: new EventBatcher((events) => this.pushEvents(jobId, events), {
        intervalMs: this.options.batchIntervalMs ?? 50,
      }),
      sampler: new ThroughputSampler(),
      hostLines: new JobLogLines(),
      triedSaved: new Set(),
      refusedSaved: new Set(),
      cancelRequested: false,
      finished: false,
      ended,
      resolveEnded,
    };
    this.jobs.set(jobId, entry);
    this.queue.push(jobId);
    this.pushState(entry);
    this.startQueued();
    return { jobId };
  }

  list(): JobSummary[] {
    return [...this.jobs.values()].map((j) => this.summaryOf(j));
  }

  /** Jobs running at once (the Settings' transfers); raising it starts queued jobs now. */
  setMaxConcurrent(n: number): void {
    this.maxConcurrent = Math.max(1, n);
    this.startQueued();
  }

  /** Moves a queued job to `position` (0 = next to start); a job that is not queued stays where it is. */
  move(jobId: string, position: number): void {
    const from = this.queue.indexOf(jobId);
    if (from < 0) return;
    this.queue.splice(from, 1);
    this.queue.splice(Math.min(Math.max(0, position), this.queue.length), 0, jobId);
    this.pushQueue();
  }

  private summaryOf(entry: JobEntry): JobSummary {
    const at = this.queue.indexOf(entry.summary.jobId);
    return at < 0 ? { ...entry.summary } : { ...entry.summary, queuePosition: at };
  }

  /** Every queued job's state again, with its place in the queue. */
  private pushQueue(): void {
    for (const id of this.queue) {
      const entry = this.jobs.get(id);
      if (entry) this.pushState(entry);
    }
  }

  /** Resolves when the job is over (immediately for unknown or finished jobs). */
  whenEnded(jobId: string): Promise<void> {
    return this.jobs.get(jobId)?.ended ?? Promise.resolve();
  }

  async cancel(jobId: string): Promise<void> {
    const entry = this.jobs.get(jobId);
    if (!entry || entry.finished || entry.cancelRequested) return;
    entry.cancelRequested = true;
    if (entry.summary.state === 'queued') {
      this.queue.splice(this.queue.indexOf(jobId), 1);
      this.pushQueue();
      entry.error = { code: 'CANCELLED', message: 'cancelled before it started' };
      await this.finish(entry, 'cancelled');
      return;
    }
    entry.slot?.worker.send({ type: 'cancel', jobId });
    entry.graceTimer = setTimeout(() => void this.killAfterGrace(entry), this.cancelGraceMs);
  }

  /**
   * A library read on the engine worker, outside the job list and the history. A server that wants
   * credentials gets the saved ones for its origin; only an `interactive` query asks the user.
   */
  query<K extends EngineQuery['kind']>(
    query: Extract<EngineQuery, { kind: K }>,
    { interactive = false }: { interactive?: boolean } = {},
  ): Promise<EngineQueryResult[K]> {
    if (this.disposed) return Promise.reject(new SluiceError('CANCELLED', 'Sluice is shutting down'));
    const slot = this.workerForJobs();
    const queryId = randomUUID();
    return new Promise<EngineQueryResult[K]>((resolve, reject) => {
      const pending = { slot, resolve: resolve as (r: unknown) => void, reject, interactive };
      this.queries.set(queryId, { ...pending, triedSaved: new Set() });
      slot.worker.send({ type: 'query', queryId, query });
    });
  }

  private onAnswer(message: QueryAnswer): void {
    const pending = this.queries.get(message.queryId);
    if (!pending) return;
    this.queries.delete(message.queryId);
    for (const [requestId, r] of this.credentialRequests)
      if (r.jobId === message.queryId) this.credentialRequests.delete(requestId);
    if (message.ok) pending.resolve(message.result);
    else pending.reject(new SluiceError(message.error.code as ErrorCode, message.error.message));
  }

  answerCredentials(requestId: string, answer: Credentials | null, remember = false): void {
    const request = this.credentialRequests.get(requestId);
    if (request === undefined) return;
    this.credentialRequests.delete(requestId);
    const { jobId, url } = request;
    if (answer && remember) {
      void this.options.savedCredentials
        ?.remember(url, answer)
        .catch((e: unknown) => console.warn('credentials: cannot save:', e));
    }
    const slot = this.jobs.get(jobId)?.slot ?? this.queries.get(jobId)?.slot;
    slot?.worker.send({ type: 'credentials', jobId, requestId, answer });
  }

  /** A query's server asked for credentials: the saved ones once, then the user if it may ask. */
  private async onQueryCredentials(
    queryId: string,
    query: PendingQuery,
    requestId: string,
    url: string,
    realm: string,
  ): Promise<void> {
    const saved = this.options.savedCredentials;
    const origin = originOf(url);
    const reply = (answer: Credentials | null): void =>
      query.slot.worker.send({ type: 'credentials', jobId: queryId, requestId, answer });
    if (saved && origin && !query.triedSaved.has(origin)) {
      query.triedSaved.add(origin);
      const creds = await saved.lookup(url).catch(() => undefined);
      if (creds) return reply(creds);
    }
    if (!query.interactive || !this.queries.has(queryId)) return reply(null);
    this.credentialRequests.set(requestId, { jobId: queryId, url });
    this.push({ channel: 'credentials:request', payload: { requestId, url, realm } });
  }

  /**
   * A server asked for credentials: saved ones for its origin answer first (once per job: the
   * engine asks again only when they were refused, and then they are forgotten), else the user.
   */
  private async onCredentialsRequest(
    entry: JobEntry,
    slot: WorkerSlot,
    requestId: string,
    url: string,
    realm: string,
  ): Promise<void> {
    const jobId = entry.summary.jobId;
    const saved = this.options.savedCredentials;
    const origin = originOf(url);
    if (saved && origin) {
      if (!entry.triedSaved.has(origin)) {
        const creds = await saved.lookup(url).catch(() => undefined);
        if (creds && !entry.finished && entry.slot === slot) {
          entry.triedSaved.add(origin);
          this.hostEvent(entry, {
            type: 'log',
            jobId,
            time: this.now(),
            level: 'info',
            message: `signing in to ${origin} with the saved credentials of ${creds.user}`,
          });
          slot.worker.send({ type: 'credentials', jobId, requestId, answer: creds });
          return;
        }
      } else if (!entry.refusedSaved.has(origin)) {
        entry.refusedSaved.add(origin);
        this.hostEvent(entry, {
          type: 'log',
          jobId,
          time: this.now(),
          level: 'warn',
          message: `the saved credentials for ${origin} were refused; they are forgotten`,
        });
        await saved.refused(url).catch(() => {});
      }
    }
    if (entry.finished) return;
    this.credentialRequests.set(requestId, { jobId, url });
    this.push({ channel: 'credentials:request', payload: { requestId, url, realm } });
  }

  /** Cancels every job, waits for them to end, then stops the worker (app quit). */
  async dispose(): Promise<void> {
    this.disposed = true;
    const ids = [...this.jobs.keys()];
    await Promise.all(ids.map((id) => this.cancel(id)));
    await Promise.all(ids.map((id) => this.whenEnded(id)));
    await Promise.all([...this.slots].map((slot) => this.stopSlot(slot)));
  }

  /** The warm worker, started when there is none (first use, or the last one crashed or retired). */
  private workerForJobs(): WorkerSlot {
    if (this.current && !this.current.retiring && !this.current.exited) return this.current;
    const worker = this.options.createWorker({ batchIntervalMs: this.options.workerBatchIntervalMs ?? 25 });
    let resolveExit!: () => void;
    const slot: WorkerSlot = {
      worker,
      jobs: new Set(),
      retiring: false,
      orphans: [],
      exited: false,
      exit: new Promise((r) => (resolveExit = r)),
    };
    let crash: Error | undefined;
    worker.on('message', (message) => this.onWorkerMessage(slot, message));
    worker.on('crash', (error) => (crash = error));
    worker.on('exit', (code) => {
      slot.exited = true;
      resolveExit();
      void this.onWorkerExit(slot, code, crash);
    });
    this.slots.add(slot);
    this.current = slot;
    return slot;
  }

  private startQueued(): void {
    while (this.queue.length > 0 && this.running() < this.maxConcurrent) {
      const jobId = this.queue.shift()!;
      const entry = this.jobs.get(jobId)!;
      entry.summary = { ...entry.summary, state: 'running', startedAt: this.now() };
      this.pushState(entry);
      entry.recordedStart = this.recordStart(entry);
      this.pushQueue();
      try {
        const slot = this.workerForJobs();
        slot.jobs.add(jobId);
        entry.slot = slot;
        slot.worker.send({ type: 'start', jobId, request: entry.request });
      } catch (e) {
        entry.error = { code: 'IO', message: `cannot start the engine worker: ${(e as Error).message}` };
        void this.finish(entry, 'failed');
      }
    }
  }

  /** On disk as `interrupted` until it ends: a host that stops first leaves it so for the next. */
  private async recordStart(entry: JobEntry): Promise<void> {
    try {
      await this.options.history.started({
        jobId: entry.summary.jobId,
        request: entry.summary.request,
        ...(entry.label !== undefined && { label: entry.label }),
        state: 'interrupted',
        startedAt: entry.summary.startedAt,
        endedAt: entry.summary.startedAt,
      });
    } catch (e) {
      console.warn('history: cannot record job start', entry.summary.jobId, e);
    }
  }

  private running(): number {
    let n = 0;
    for (const j of this.jobs.values()) if (j.summary.state === 'running') n++;
    return n;
  }

  /** A worker thread ended: every job it still ran fails (or ends cancelled if that was asked). */
  private async onWorkerExit(slot: WorkerSlot, code: number, crash: Error | undefined): Promise<void> {
    this.slots.delete(slot);
    if (this.current === slot) this.current = null;
    const reason = crash ? crash.message : `exit code ${code}`;
    for (const [id, q] of this.queries)
      if (q.slot === slot) {
        this.queries.delete(id);
        q.reject(new SluiceError('ENGINE_CRASHED', `the engine worker stopped (${reason})`));
      }
    const orphans = slot.orphans.splice(0);
    await Promise.all(
      [...slot.jobs].map(async (jobId) => {
        const entry = this.jobs.get(jobId);
        if (!entry || entry.finished) return;
        if (entry.cancelRequested) entry.error = { code: 'CANCELLED', message: 'cancelled' };
        else {
          entry.error = {
            code: 'ENGINE_CRASHED',
            message: `the engine worker stopped unexpectedly (${reason}); this job was lost with it and nothing of it was kept. Start it again: a new engine worker runs it.`,
          };
          this.hostEvent(entry, { type: 'error', jobId, time: this.now(), ...entry.error });
        }
        await this.cleanBeside(entry);
        await this.finish(entry, entry.cancelRequested ? 'cancelled' : 'failed');
      }),
    );
    for (const dest of orphans) await this.cleanDest(dest);
  }

  /**
   * The engine had no chance to remove its temporary directory beside the destination. Another
   * running job of ours with the same destination has a live temporary there: leave it alone.
   */
  private async cleanBeside(entry: JobEntry): Promise<void> {
    const dest = destinationOf(entry.summary.request);
    const shared = [...this.jobs.values()].some(
      (j) =>
        j !== entry &&
        !j.finished &&
        j.summary.state === 'running' &&
        destinationOf(j.summary.request) === dest,
    );
    if (dest && !shared) await this.cleanDest(dest);
  }

  private async cleanDest(dest: string): Promise<void> {
    await this.options
      .cleanStaleTemporaries?.(dest)
      .catch((e: unknown) => console.warn(`cleanup beside ${dest} failed:`, e));
  }

  private onWorkerMessage(slot: WorkerSlot, message: WorkerToHost): void {
    if (message.type === 'answer') {
      this.onAnswer(message);
      return;
    }
    const query = message.type === 'credentials' ? this.queries.get(message.jobId) : undefined;
    if (query && message.type === 'credentials') {
      void this.onQueryCredentials(message.jobId, query, message.requestId, message.url, message.realm);
      return;
    }
    const entry = this.jobs.get(message.jobId);
    if (!entry || entry.finished || entry.slot !== slot) return;
    switch (message.type) {
      case 'events':
        for (const event of message.events) this.observe(entry, event);
        if (message.log) {
          this.options.logs.appendChunk(message.jobId, message.log);
          entry.batcher.touch();
        }
        entry.batcher.pushAll(message.events);
        break;
      case 'credentials':
        void this.onCredentialsRequest(entry, slot, message.requestId, message.url, message.realm);
        break;
      case 'finished':
        if (message.ok) void this.finish(entry, 'done');
        else {
          entry.error = message.error;
          void this.finish(entry, message.error.code === 'CANCELLED' ? 'cancelled' : 'failed');
        }
        break;
    }
  }

  private observe(entry: JobEntry, event: SluiceEvent): void {
    if (event.type === 'progress') {
      // time since the job started, not the event's elapsedMs: each phase's tracker (a clone's
      // checkout after its transfer) counts from its own start
      entry.sampler.add(event.time - entry.summary.startedAt, event.bytesPerSec);
      const { bytes, files, totalBytes, totalFiles } = event;
      entry.progress = { bytes, files, totalBytes, totalFiles };
    } else if (event.type === 'done') entry.done = event;
    else if (event.type === 'error') entry.error = { code: event.code, message: event.message };
  }

  /** An event the host itself reports for a job: into its log and on to the renderer. */
  private hostEvent(entry: JobEntry, event: SluiceEvent): void {
    entry.hostLines.add(event);
    const chunk = entry.hostLines.take();
    if (chunk) this.options.logs.appendChunk(entry.summary.jobId, chunk);
    entry.batcher.push(event);
  }

  private async killAfterGrace(entry: JobEntry): Promise<void> {
    const slot = entry.slot;
    if (entry.finished || !slot) return;
    this.hostEvent(entry, {
      type: 'log',
      jobId: entry.summary.jobId,
      time: this.now(),
      level: 'warn',
      message: `the engine did not stop within ${this.cancelGraceMs} ms of the cancel; its thread was terminated`,
    });
    slot.retiring = true;
    const others = [...slot.jobs].some((id) => id !== entry.summary.jobId && !this.jobs.get(id)?.finished);
    if (others) {
      // Other jobs still run on that thread: this one ends now, the thread once they have ended.
      const dest = destinationOf(entry.summary.request);
      if (dest) slot.orphans.push(dest);
      entry.error = { code: 'CANCELLED', message: 'cancelled' };
      await this.finish(entry, 'cancelled');
      return;
    }
    // A thread blocked in a threadpool call (a read from a stalled network share or a FIFO) only
    // exits once that call returns, and its JavaScript never runs again after terminate(): do not
    // let the job wait for it.
    await this.stopSlot(slot);
    if (!slot.exited) await this.onWorkerExit(slot, 1, undefined);
  }

  private async stopSlot(slot: WorkerSlot): Promise<void> {
    slot.retiring = true;
    if (slot.exited) return;
    const exited = slot.worker.terminate();
    await Promise.race([exited.then(() => slot.exit), new Promise((r) => setTimeout(r, TERMINATE_WAIT_MS))]);
  }

  private async finish(entry: JobEntry, state: 'done' | 'failed' | 'cancelled'): Promise<void> {
    if (entry.finished) return;
    entry.finished = true;
    if (entry.graceTimer) clearTimeout(entry.graceTimer);
    for (const [requestId, r] of this.credentialRequests)
      if (r.jobId === entry.summary.jobId) this.credentialRequests.delete(requestId);
    if (state === 'cancelled' && entry.summary.state !== 'queued' && !entry.error)
      entry.error = { code: 'CANCELLED', message: 'cancelled' };
    entry.batcher.dispose();
    const endedAt = this.now();
    entry.summary = { ...entry.summary, state, endedAt };
    const slot = entry.slot;
    entry.slot = undefined;
    if (slot) {
      slot.jobs.delete(entry.summary.jobId);
      if (slot.retiring && ![...slot.jobs].some((id) => !this.jobs.get(id)?.finished))
        void this.stopSlot(slot);
    }
    const record: HistoryRecord = {
      jobId: entry.summary.jobId,
      request: entry.summary.request,
      ...(entry.label !== undefined && { label: entry.label }),
      state,
      startedAt: entry.summary.startedAt,
      endedAt,
      ...(entry.done && state === 'done' && { done: entry.done }),
      ...(state !== 'done' && entry.error && { error: entry.error }),
      ...(state !== 'done' && entry.progress && { progress: entry.progress }),
      samples: entry.sampler.samples(),
    };
    const logSaved = this.options.logs.finish(entry.summary.jobId);
    try {
      // the end replaces the start's record, never the other way round
      await entry.recordedStart;
      await this.options.history.add(record);
    } catch (e) {
      console.warn('history: cannot record job', entry.summary.jobId, e);
    }
    await logSaved;
    // After the history write: a renderer that reloads the history on this state finds the job there.
    this.pushState(entry);
    entry.resolveEnded();
    this.forgetOldJobs();
    this.startQueued();
  }

  /** job:list shows this session's jobs; the history keeps the rest. */
  private forgetOldJobs(): void {
    const finished = [...this.jobs.values()].filter((j) => j.finished);
    for (const j of finished.slice(0, Math.max(0, finished.length - MAX_FINISHED_LISTED)))
      this.jobs.delete(j.summary.jobId);
  }

  private pushEvents(jobId: string, events: SluiceEvent[]): void {
    this.push({ channel: 'job:events', payload: { jobId, events, log: this.options.logs.counts(jobId) } });
  }

  private pushState(entry: JobEntry): void {
    this.push({ channel: 'job:state', payload: this.summaryOf(entry) });
  }

  private push(message: PushMessage): void {
    this.events.emit('push', message);
  }
}

/** What a job writes (resolved), if anything. */
function originOf(url: string): string | null {
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
}

/** A password (or token) typed into a URL goes to the engine only, never to a screen or a file. */
function withoutUrlCredentials(request: JobRequest): JobRequest {
  if (request.kind === 'clone') return { ...request, url: withoutCredentials(request.url) };
  if (request.kind === 'pull' && request.source !== undefined)
    return { ...request, source: withoutCredentials(request.source) };
  return request;
}

export function destinationOf(request: JobRequest): string | undefined {
  switch (request.kind) {
    case 'apply':
    case 'clone':
      return resolve(request.dest);
    case 'bundle':
      return resolve(request.out);
    case 'verify':
      return undefined;
  }
}
