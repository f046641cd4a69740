// The jobs of one host: starts each in its own engine worker, relays its events to the renderer
// through an EventBatcher, tracks its state, answers cancels, and records it in the history when it
// ends. Hosts (Electron main, web host) subscribe to `push` and forward to their renderer(s).
//
// Cancel: the worker gets an abort message (the engine stops at its next chunk, cleans its
// temporary directory and reports CANCELLED). An engine that does not finish within the grace
// period (stuck in a syscall, a bug) has its thread terminated; its temporary directory is then
// left behind, so the registry runs the engine's stale-temporary cleanup for that destination.

import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { SluiceError } from '../engine/errors';
import { EventBatcher } from './event-batcher';
import { ThroughputSampler, type HistoryStore } from './history-store';
import { TypedEmitter } from './typed-emitter';
import type { EngineWorkerLike } from './engine-worker-host';
import type { WorkerStartData, WorkerToHost } from './worker-protocol';
import type { Credentials } from './engine-api';
import type { HistoryRecord, JobSummary, PushChannel, PushMap } from '../../shared/ipc';
import type { DoneEvent, SluiceEvent } from '../../shared/events';
import type { JobRequest } from '../../shared/jobs';

export type PushMessage = { [C in PushChannel]: { channel: C; payload: PushMap[C] } }[PushChannel];

export interface JobRegistryOptions {
  createWorker: (start: WorkerStartData) => EngineWorkerLike;
  history: HistoryStore;
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
}

const MAX_FINISHED_LISTED = 100;
/** after terminate(), how long to wait for the thread's exit before finishing the job anyway */
const TERMINATE_WAIT_MS = 2000;

interface JobEntry {
  summary: JobSummary;
  label?: string;
  worker?: EngineWorkerLike;
  batcher: EventBatcher;
  sampler: ThroughputSampler;
  done?: DoneEvent;
  error?: { code: string; message: string };
  cancelRequested: boolean;
  /** the worker is gone (or given up on); the job is being finished */
  exiting?: boolean;
  graceTimer?: ReturnType<typeof setTimeout>;
  finished: boolean;
  /** resolves when the job reached a final state and its history record was written */
  ended: Promise<void>;
  resolveEnded: () => void;
}

interface RegistryEvents {
  push: [message: PushMessage];
}

export class JobRegistry {
  private readonly jobs = new Map<string, JobEntry>();
  private readonly queue: string[] = [];
  private readonly credentialRequests = new Map<string, string>();
  private readonly events = new TypedEmitter<RegistryEvents>();
  private readonly maxConcurrent: number;
  private readonly cancelGraceMs: number;
  private readonly now: () => number;
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

  start(request: JobRequest, label?: string): { jobId: string } {
    if (this.disposed) throw new SluiceError('CANCELLED', 'Sluice is shutting down');
    // Two jobs writing one destination: the second would only fail at its final rename, after
    // doing all its work. Refuse it now (hg clone refuses a non-empty destination up front too).
    const dest = destinationOf(request);
    const busy = dest !== undefined && [...this.jobs.values()].find((j) => !j.finished && destinationOf(j.summary.request) === dest);
    if (busy) throw new SluiceError('DEST_EXISTS', `destination '${dest}' is being written by another job (${busy.summary.jobId})`);
    const jobId = randomUUID();
    let resolveEnded!: () => void;
    const ended = new Promise<void>((r) => (resolveEnded = r));
    const entry: JobEntry = {
      summary: { jobId, request, state: 'queued', startedAt: this.now() },
      ...(label !== undefined && { label }),
      batcher: new EventBatcher((events) => this.pushEvents(jobId, events), { intervalMs: this.options.batchIntervalMs ?? 50 }),
      sampler: new ThroughputSampler(),
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
    return [...this.jobs.values()].map((j) => ({ ...j.summary }));
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
      entry.error = { code: 'CANCELLED', message: 'cancelled before it started' };
      await this.finish(entry, 'cancelled');
      return;
    }
    entry.worker?.send({ type: 'cancel' });
    entry.graceTimer = setTimeout(() => void this.killAfterGrace(entry), this.cancelGraceMs);
  }

  answerCredentials(requestId: string, answer: Credentials | null): void {
    const jobId = this.credentialRequests.get(requestId);
    if (jobId === undefined) return;
    this.credentialRequests.delete(requestId);
    this.jobs.get(jobId)?.worker?.send({ type: 'credentials', requestId, answer });
  }

  /** Cancels every job and waits for them to end (app quit). */
  async dispose(): Promise<void> {
    this.disposed = true;
    const ids = [...this.jobs.keys()];
    await Promise.all(ids.map((id) => this.cancel(id)));
    await Promise.all(ids.map((id) => this.whenEnded(id)));
  }

  private startQueued(): void {
    while (this.queue.length > 0 && this.running() < this.maxConcurrent) {
      const jobId = this.queue.shift()!;
      const entry = this.jobs.get(jobId)!;
      entry.summary = { ...entry.summary, state: 'running', startedAt: this.now() };
      this.pushState(entry);
      try {
        this.attach(entry, this.options.createWorker({ jobId, request: entry.summary.request, batchIntervalMs: this.options.workerBatchIntervalMs ?? 25 }));
      } catch (e) {
        entry.error = { code: 'IO', message: `cannot start the engine worker: ${(e as Error).message}` };
        void this.finish(entry, 'failed');
      }
    }
  }

  private running(): number {
    let n = 0;
    for (const j of this.jobs.values()) if (j.summary.state === 'running') n++;
    return n;
  }

  private attach(entry: JobEntry, worker: EngineWorkerLike): void {
    entry.worker = worker;
    let crash: Error | undefined;
    worker.on('message', (message) => this.onWorkerMessage(entry, message));
    worker.on('crash', (error) => (crash = error));
    worker.on('exit', (code) => void this.onWorkerExit(entry, code, crash));
  }

  /** The thread ended without saying `finished`: terminated after a cancel, or it crashed. */
  private async onWorkerExit(entry: JobEntry, code: number, crash: Error | undefined): Promise<void> {
    if (entry.finished || entry.exiting) return;
    entry.exiting = true;
    if (entry.cancelRequested) entry.error = { code: 'CANCELLED', message: 'cancelled' };
    else {
      entry.error = { code: 'IO', message: `the engine stopped unexpectedly (${crash ? crash.message : `exit code ${code}`})` };
      entry.batcher.push({ type: 'error', jobId: entry.summary.jobId, time: this.now(), ...entry.error });
    }
    // The engine had no chance to remove its temporary directory beside the destination. Another
    // running job of ours with the same destination has a live temporary there: leave it alone.
    const dest = destinationOf(entry.summary.request);
    const shared = [...this.jobs.values()].some((j) => j !== entry && !j.finished && j.summary.state === 'running' && destinationOf(j.summary.request) === dest);
    if (dest && !shared && this.options.cleanStaleTemporaries) {
      await this.options.cleanStaleTemporaries(dest).catch((e: unknown) => console.warn(`cleanup beside ${dest} failed:`, e));
    }
    await this.finish(entry, entry.cancelRequested ? 'cancelled' : 'failed');
  }

  private onWorkerMessage(entry: JobEntry, message: WorkerToHost): void {
    if (entry.finished) return;
    switch (message.type) {
      case 'events':
        for (const event of message.events) this.observe(entry, event);
        entry.batcher.pushAll(message.events);
        break;
      case 'credentials':
        this.credentialRequests.set(message.requestId, entry.summary.jobId);
        this.push({ channel: 'credentials:request', payload: { requestId: message.requestId, url: message.url, realm: message.realm } });
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
    if (event.type === 'progress') entry.sampler.add(event.elapsedMs, event.bytesPerSec);
    else if (event.type === 'done') entry.done = event;
    else if (event.type === 'error') entry.error = { code: event.code, message: event.message };
  }

  private async killAfterGrace(entry: JobEntry): Promise<void> {
    if (entry.finished || !entry.worker) return;
    entry.batcher.push({
      type: 'log',
      jobId: entry.summary.jobId,
      time: this.now(),
      level: 'warn',
      message: `the engine did not stop within ${this.cancelGraceMs} ms of the cancel; its thread was terminated`,
    });
    // A thread blocked in a threadpool call (a read from a stalled network share or a FIFO) only
    // exits once that call returns, and its JavaScript never runs again after terminate(): do not
    // let the job wait for it.
    const exited = entry.worker.terminate();
    await Promise.race([exited, new Promise((r) => setTimeout(r, TERMINATE_WAIT_MS))]);
    await this.onWorkerExit(entry, 1, undefined);
  }

  private async finish(entry: JobEntry, state: 'done' | 'failed' | 'cancelled'): Promise<void> {
    if (entry.finished) return;
    entry.finished = true;
    if (entry.graceTimer) clearTimeout(entry.graceTimer);
    for (const [requestId, jobId] of this.credentialRequests) if (jobId === entry.summary.jobId) this.credentialRequests.delete(requestId);
    if (state === 'cancelled' && entry.summary.state !== 'queued' && !entry.error) entry.error = { code: 'CANCELLED', message: 'cancelled' };
    entry.batcher.dispose();
    const endedAt = this.now();
    entry.summary = { ...entry.summary, state, endedAt };
    entry.worker?.dispose();
    entry.worker = undefined;
    const record: HistoryRecord = {
      jobId: entry.summary.jobId,
      request: entry.summary.request,
      ...(entry.label !== undefined && { label: entry.label }),
      state,
      startedAt: entry.summary.startedAt,
      endedAt,
      ...(entry.done && state === 'done' && { done: entry.done }),
      ...(state !== 'done' && entry.error && { error: entry.error }),
      samples: entry.sampler.samples(),
    };
    try {
      await this.options.history.add(record);
    } catch (e) {
      console.warn('history: cannot record job', entry.summary.jobId, e);
    }
    // After the history write: a renderer that reloads the history on this state finds the job there.
    this.pushState(entry);
    entry.resolveEnded();
    this.forgetOldJobs();
    this.startQueued();
  }

  /** job:list shows this session's jobs; the history keeps the rest. */
  private forgetOldJobs(): void {
    const finished = [...this.jobs.values()].filter((j) => j.finished);
    for (const j of finished.slice(0, Math.max(0, finished.length - MAX_FINISHED_LISTED))) this.jobs.delete(j.summary.jobId);
  }

  private pushEvents(jobId: string, events: SluiceEvent[]): void {
    this.push({ channel: 'job:events', payload: { jobId, events } });
  }

  private pushState(entry: JobEntry): void {
    this.push({ channel: 'job:state', payload: { ...entry.summary } });
  }

  private push(message: PushMessage): void {
    this.events.emit('push', message);
  }
}

/** What a job writes (resolved), if anything. */
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
