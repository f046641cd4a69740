// Transfers slice: every job the host runs, reduced from its event stream. Events arrive batched
// (job:events, ~20 messages/s per job, no per-file entries: the debug log stays in the host, which
// sends its line count and serves pages through job:log); they are queued and applied with ONE
// set() per animation frame, however many jobs and batches arrived in between (GitHub Desktop's
// mistake was one store update per progress line).

import type { StateCreator } from 'zustand/vanilla';
import type { SluiceEvent } from '../../../shared/events';
import type { HistoryRecord, JobSummary, PushMap } from '../../../shared/ipc';
import type { JobRequest } from '../../../shared/jobs';
import { errorNotice } from '../lib/errors';
import { baseName } from '../lib/paths';
import type { JobOrigin, RetryWait, SluiceState, StoreDeps, TransferJob, TransfersSlice } from './types';

/** points kept for the throughput sparkline and the comparison chart */
export const SAMPLE_CAP = 240;
/** window of the files/sec rate, like the engine's ~2 s bytes/sec window */
const FILES_RATE_WINDOW_MS = 2000;

type QueueItem =
  | { kind: 'events'; jobId: string; events: SluiceEvent[]; log?: PushMap['job:events']['log'] }
  | { kind: 'state'; summary: JobSummary; record?: HistoryRecord };

export function describeRequest(request: JobRequest): {
  kind: TransferJob['kind'];
  source: string;
  dest?: string;
} {
  switch (request.kind) {
    case 'apply':
      return { kind: 'apply', source: request.bundlePath, dest: request.dest };
    case 'clone':
      return { kind: 'clone', source: request.url, dest: request.dest };
    case 'pull':
      return { kind: 'pull', source: request.source ?? 'default path', dest: request.repo };
    case 'bundle':
      return { kind: 'bundle', source: request.repo, dest: request.out };
    case 'verify':
      return { kind: 'verify', source: request.repo };
    case 'update':
      return { kind: 'update', source: request.rev ?? 'default revision', dest: request.repo };
  }
}

export function isTerminal(state: TransferJob['state']): boolean {
  return state === 'done' || state === 'failed' || state === 'cancelled' || state === 'interrupted';
}

export function newTransferJob(jobId: string, now: number, init: Partial<TransferJob> = {}): TransferJob {
  return {
    jobId,
    origin: 'user',
    kind: 'apply',
    state: 'queued',
    source: '',
    requirements: [],
    startedAt: Date.now(),
    bytes: 0,
    files: 0,
    totalBytes: 0,
    totalFiles: 0,
    elapsedMs: 0,
    samples: [],
    lastActivityAt: now,
    stalled: false,
    cancelRequested: false,
    logLines: 0,
    logDropped: 0,
    ...init,
  };
}

/** Halves the sample list by averaging neighbours once it is full: the shape survives, memory does not grow. */
export function pushSample(
  samples: [number, number][],
  sample: [number, number],
  cap = SAMPLE_CAP,
): [number, number][] {
  const next = samples.concat([sample]);
  if (next.length <= cap) return next;
  const halved: [number, number][] = [];
  for (let i = 0; i + 1 < next.length; i += 2) {
    halved.push([next[i + 1]![0], (next[i]![1] + next[i + 1]![1]) / 2]);
  }
  if (next.length % 2 === 1) halved.push(next[next.length - 1]!);
  return halved;
}

interface ReduceContext {
  now: number;
  /** [elapsedMs, files] of the last couple of seconds, for files/sec */
  filesWindow: [number, number][];
}

/** Applies one job's events in order. Pure apart from the files/sec window. */
export function reduceJobEvents(
  job: TransferJob,
  events: readonly SluiceEvent[],
  ctx: ReduceContext,
): TransferJob {
  let j = job;
  for (const e of events) {
    switch (e.type) {
      case 'start': {
        j = {
          ...j,
          kind: e.kind === 'serve' ? j.kind : e.kind,
          format: e.format ?? j.format,
          totalFiles: e.files || j.totalFiles,
          totalBytes: e.bytes || j.totalBytes,
          requirements: e.requirements,
          source: e.source || j.source,
          dest: e.dest ?? j.dest,
          startedAt: e.time,
          state: isTerminal(j.state) ? j.state : 'running',
          lastActivityAt: ctx.now,
        };
        break;
      }
      case 'phase':
        if (e.phase !== j.phase) {
          j = {
            ...j,
            phase: e.phase,
            lastActivityAt: ctx.now,
            stalled: false,
            state: isTerminal(j.state) ? j.state : 'running',
          };
        }
        break;
      case 'progress': {
        const moved = e.bytes !== j.bytes || e.files !== j.files;
        // time since the job started: each phase's progress (a clone's checkout) counts its
        // elapsedMs from its own start, which would fold the chart back on itself
        const t = Math.max(0, e.time - j.startedAt);
        const win = ctx.filesWindow;
        if (win.length > 0 && t < win[win.length - 1]![0]) win.length = 0;
        win.push([t, e.files]);
        while (win.length > 2 && win[1]![0] <= t - FILES_RATE_WINDOW_MS) win.shift();
        const first = win[0]!;
        const span = t - first[0];
        const filesPerSec = span > 0 ? ((e.files - first[1]) * 1000) / span : j.filesPerSec;
        j = {
          ...j,
          state: isTerminal(j.state) ? j.state : 'running',
          bytes: e.bytes,
          files: e.files,
          totalBytes: e.totalBytes || j.totalBytes,
          totalFiles: e.totalFiles || j.totalFiles,
          bytesPerSec: e.bytesPerSec,
          filesPerSec,
          elapsedMs: e.elapsedMs,
          // a transfer whose size is unknown (a pull's changegroup) has no ETA, whatever the engine says
          etaMs: (e.totalBytes || j.totalBytes) > 0 ? e.etaMs : undefined,
          samples: pushSample(j.samples, [t, e.bytesPerSec]),
          ...(moved ? { lastActivityAt: ctx.now, stalled: false } : null),
          retry: undefined,
        };
        break;
      }
      case 'retry':
        j = {
          ...j,
          retry: {
            attempt: e.attempt,
            maxAttempts: e.maxAttempts,
            until: e.time + e.waitMs,
            reason: e.reason,
            bytes: e.bytes,
            totalBytes: e.totalBytes,
          },
          // waiting out the backoff is not a stall: the stall clock starts when the wait ends
          lastActivityAt: ctx.now + e.waitMs,
          stalled: false,
        };
        break;
      case 'files':
        // the host keeps file entries in the debug log; a host that still sends some shows activity
        if (e.entries.length > 0) j = { ...j, lastActivityAt: ctx.now, stalled: false };
        break;
      case 'done': {
        j = {
          ...j,
          state: 'done',
          done: e,
          endedAt: e.time,
          bytes: e.bytes || j.bytes,
          files: e.files || j.files,
          totalBytes: Math.max(j.totalBytes, e.bytes),
          totalFiles: Math.max(j.totalFiles, e.files),
          elapsedMs: e.wallMs,
          etaMs: undefined,
          stalled: false,
          retry: undefined,
          dest: e.result ?? j.dest,
        };
        break;
      }
      case 'error':
        j = {
          ...j,
          state: e.code === 'CANCELLED' ? 'cancelled' : 'failed',
          error: { code: e.code, message: e.hint ? `${e.message}\n${e.hint}` : e.message },
          endedAt: e.time,
          etaMs: undefined,
          stalled: false,
          retry: undefined,
        };
        break;
    }
  }
  return j;
}

/** Merges a job:state summary; a summary never moves a job back from a terminal state. */
export function reduceJobState(job: TransferJob, s: JobSummary): TransferJob {
  const described = describeRequest(s.request);
  const state = isTerminal(job.state) ? job.state : s.state;
  return {
    ...job,
    request: job.request ?? s.request,
    kind: described.kind,
    source: job.source || described.source,
    dest: job.dest ?? described.dest,
    startedAt: s.startedAt,
    endedAt: s.endedAt ?? job.endedAt,
    state,
    stalled: isTerminal(state) ? false : job.stalled,
    queuePosition: state === 'queued' ? s.queuePosition : undefined,
  };
}

/**
 * A finished job known only from job:list (the renderer was reloaded after its events went by):
 * its numbers come from the host's history record (the done event, the throughput samples).
 */
export function reduceHistoryRecord(job: TransferJob, r: HistoryRecord): TransferJob {
  const d = r.done;
  return {
    ...job,
    ...(r.label !== undefined && job.label === undefined ? { label: r.label } : {}),
    endedAt: r.endedAt,
    ...(d
      ? {
          done: d,
          bytes: d.bytes,
          files: d.files,
          totalBytes: d.bytes,
          totalFiles: d.files,
          elapsedMs: d.wallMs,
          dest: d.result ?? job.dest,
        }
      : r.progress && job.bytes === 0 && job.files === 0
        ? { ...r.progress }
        : {}),
    ...(r.samples && job.samples.length === 0 ? { samples: r.samples } : {}),
    ...(r.error && !job.error ? { error: r.error } : {}),
  };
}

export function createTransfersSlice(deps: StoreDeps): StateCreator<SluiceState, [], [], TransfersSlice> {
  return (set, get) => {
    const filesWindows = new Map<string, [number, number][]>();
    const waiters = new Map<string, ((job: TransferJob) => void)[]>();
    const origins = new Map<string, { origin: JobOrigin; label?: string; request: JobRequest }>();
    let queue: QueueItem[] = [];
    let scheduled = false;

    const enqueue = (item: QueueItem): void => {
      queue.push(item);
      if (!scheduled) {
        scheduled = true;
        deps.schedule(() => get().flushEvents());
      }
    };

    const settle = (job: TransferJob): void => {
      const list = waiters.get(job.jobId);
      if (!list) return;
      waiters.delete(job.jobId);
      for (const resolve of list) resolve(job);
    };

    return {
      jobs: {},
      jobOrder: [],

      ingestEvents: (jobId, events, log) =>
        enqueue(log ? { kind: 'events', jobId, events, log } : { kind: 'events', jobId, events }),
      ingestJobState: (summary) => enqueue({ kind: 'state', summary }),

      flushEvents: () => {
        scheduled = false;
        if (queue.length === 0) return;
        const items = queue;
        queue = [];
        const now = deps.now();
        let ended: TransferJob[] = [];
        set((state) => {
          const next = applyQueue(state, items, { now, origins, filesWindows });
          ended = next.ended;
          return ended.length > 0
            ? { jobs: next.jobs, jobOrder: next.jobOrder, historyStale: true }
            : { jobs: next.jobs, jobOrder: next.jobOrder };
        });
        for (const job of ended) {
          filesWindows.delete(job.jobId);
          settle(get().jobs[job.jobId] ?? job);
        }
        // a clone that stopped may have kept its download (Resume); one that finished swept it
        if (ended.some((j) => j.kind === 'clone')) void get().loadPartials();
      },

      loadJobs: async () => {
        const list = await deps.api.invoke('job:list');
        // finished jobs get their numbers from the history (their events went by before we loaded),
        // which also knows the jobs the app quit under (offered with Resume)
        const records = await deps.api.invoke('history:list').catch(() => [] as HistoryRecord[]);
        const byId = new Map(records.map((r) => [r.jobId, r]));
        for (const summary of list) {
          const record = byId.get(summary.jobId);
          enqueue(record ? { kind: 'state', summary, record } : { kind: 'state', summary });
        }
        const interrupted = unresumedInterruptions(records).filter((r) => !get().jobs[r.jobId]);
        if (interrupted.length === 0) return;
        const now = deps.now();
        set((state) => {
          const jobs = { ...state.jobs };
          for (const r of interrupted) jobs[r.jobId] = interruptedJob(r, now);
          return { jobs, jobOrder: [...state.jobOrder, ...interrupted.map((r) => r.jobId)] };
        });
      },

      startJob: async (request, label, origin = 'user') => {
        // an absent label is left out, not sent as undefined (a JSON bridge would make it null)
        const { jobId } = await (label !== undefined
          ? deps.api.invoke('job:start', request, label)
          : deps.api.invoke('job:start', request));
        origins.set(jobId, { origin, request, ...(label !== undefined ? { label } : {}) });
        const now = deps.now();
        set((state) => {
          const existing = state.jobs[jobId];
          const described = describeRequest(request);
          const job: TransferJob = existing
            ? {
                ...existing,
                request,
                label,
                origin,
                source: existing.source || described.source,
                dest: existing.dest ?? described.dest,
              }
            : newTransferJob(jobId, now, { ...described, request, label, origin, startedAt: Date.now() });
          return {
            jobs: { ...state.jobs, [jobId]: job },
            jobOrder: existing ? state.jobOrder : [jobId, ...state.jobOrder],
          };
        });
        return jobId;
      },

      ...jobControlActions(deps, set, get),

      waitForJob: (jobId) => {
        const job = get().jobs[jobId];
        if (job && isTerminal(job.state)) return Promise.resolve(job);
        return new Promise((resolve) => {
          const list = waiters.get(jobId) ?? [];
          list.push(resolve);
          waiters.set(jobId, list);
        });
      },
    };
  };
}

/**
 * A web host page asks before it unloads while a transfer runs (closing the tab does not stop the
 * host's job, but the user loses sight of it). Electron's window asks in the main process instead.
 */
export function shouldPromptBeforeUnload(state: Pick<SluiceState, 'jobs' | 'appInfo'>): boolean {
  if (state.appInfo?.host !== 'web') return false;
  return Object.values(state.jobs).some((j) => !isTerminal(j.state) && j.kind !== 'verify');
}

/** Whole seconds left of a retry wait (never negative): what the row's countdown shows. */
export function retrySecondsLeft(retry: Pick<RetryWait, 'until'>, now: number): number {
  return Math.max(0, Math.ceil((retry.until - now) / 1000));
}

/** at most this many interrupted jobs are listed on start-up */
export const MAX_INTERRUPTED_LISTED = 10;

/**
 * The history's interrupted jobs that nothing replaced: a later job writing the same destination
 * (a Resume, or the user starting over) supersedes them. `records` newest first, as history:list.
 */
export function unresumedInterruptions(records: readonly HistoryRecord[]): HistoryRecord[] {
  const later = new Set<string>();
  const out: HistoryRecord[] = [];
  for (const r of records) {
    const dest = describeRequest(r.request).dest;
    const superseded = dest !== undefined && later.has(dest);
    if (dest !== undefined) later.add(dest);
    if (r.state === 'interrupted' && !superseded) out.push(r);
    if (out.length === MAX_INTERRUPTED_LISTED) break;
  }
  return out;
}

/** A Transfers row for a job the app quit under, from its history record. */
export function interruptedJob(r: HistoryRecord, now: number): TransferJob {
  const base = newTransferJob(r.jobId, now, {
    ...describeRequest(r.request),
    request: r.request,
    ...(r.label !== undefined ? { label: r.label } : {}),
    state: 'interrupted',
    startedAt: r.startedAt,
  });
  return reduceHistoryRecord(base, r);
}

/** Applies queued events and job:state summaries to the jobs; `ended` are the jobs that ended. */
function applyQueue(
  state: Pick<SluiceState, 'jobs' | 'jobOrder'>,
  items: readonly QueueItem[],
  ctx: {
    now: number;
    origins: ReadonlyMap<string, { origin: JobOrigin; label?: string; request: JobRequest }>;
    filesWindows: Map<string, [number, number][]>;
  },
): { jobs: Record<string, TransferJob>; jobOrder: string[]; ended: TransferJob[] } {
  const jobs = { ...state.jobs };
  let order = state.jobOrder;
  const ended: TransferJob[] = [];
  const seen = (jobId: string, init: Partial<TransferJob>): TransferJob => {
    const existing = jobs[jobId];
    if (existing) return existing;
    order = [jobId, ...order];
    const known = ctx.origins.get(jobId);
    const fromRequest = known ? describeRequest(known.request) : {};
    return newTransferJob(jobId, ctx.now, { ...fromRequest, ...init, ...(known ?? {}) });
  };
  for (const item of items) {
    const jobId = item.kind === 'events' ? item.jobId : item.summary.jobId;
    const first = item.kind === 'events' ? item.events[0] : undefined;
    const before = seen(jobId, first ? { startedAt: first.time } : {});
    let after: TransferJob;
    if (item.kind === 'events') {
      let win = ctx.filesWindows.get(jobId);
      if (!win) ctx.filesWindows.set(jobId, (win = []));
      after = reduceJobEvents(before, item.events, { now: ctx.now, filesWindow: win });
      if (item.log && (item.log.total !== after.logLines || item.log.dropped !== after.logDropped)) {
        after = { ...after, logLines: item.log.total, logDropped: item.log.dropped };
      }
    } else {
      after = reduceJobState(before, item.summary);
      if (item.record && isTerminal(after.state)) after = reduceHistoryRecord(after, item.record);
    }
    if (!isTerminal(before.state) && isTerminal(after.state)) ended.push(after);
    else if (jobs[jobId] === undefined && isTerminal(after.state)) ended.push(after);
    jobs[jobId] = after;
  }
  return { jobs, jobOrder: order, ended };
}

type TransfersSet = Parameters<StateCreator<SluiceState, [], [], TransfersSlice>>[0];

/** Cancel, retry, restart, verify, dismiss, the stall check and the job log: actions on jobs already known. */
function jobControlActions(
  deps: StoreDeps,
  set: TransfersSet,
  get: () => SluiceState,
): Pick<
  TransfersSlice,
  | 'cancelJob'
  | 'retryJob'
  | 'resumeJob'
  | 'verifyRepository'
  | 'restartJob'
  | 'dismissJob'
  | 'clearFinished'
  | 'checkStalled'
  | 'fetchLogPage'
  | 'exportJobLog'
> {
  return {
    cancelJob: async (jobId) => {
      const job = get().jobs[jobId];
      if (!job || isTerminal(job.state)) return;
      set((state) => ({ jobs: { ...state.jobs, [jobId]: { ...job, cancelRequested: true } } }));
      try {
        await deps.api.invoke('job:cancel', jobId);
      } catch (e) {
        const cur = get().jobs[jobId];
        if (cur) set((state) => ({ jobs: { ...state.jobs, [jobId]: { ...cur, cancelRequested: false } } }));
        get().notify(errorNotice('Could not cancel the job', e));
      }
    },

    retryJob: async (jobId) => {
      const job = get().jobs[jobId];
      if (!job?.request) return null;
      try {
        return await get().startJob(
          job.request,
          job.label,
          job.origin === 'comparison' ? 'user' : job.origin,
        );
      } catch (e) {
        get().notify(errorNotice('Could not start the job again', e));
        return null;
      }
    },

    resumeJob: async (jobId) => {
      const started = await get().retryJob(jobId);
      // the new job is the resumed one; the stopped row would offer Resume again
      if (started !== null) get().dismissJob(jobId);
      return started;
    },

    verifyRepository: async (repo) => {
      try {
        return await get().startJob({ kind: 'verify', repo }, `Verify ${baseName(repo)}`);
      } catch (e) {
        get().notify(errorNotice('Could not start the verification', e));
        return null;
      }
    },

    restartJob: async (jobId) => {
      const job = get().jobs[jobId];
      if (!job?.request) return null;
      if (!isTerminal(job.state)) {
        const ended = get().waitForJob(jobId);
        await get().cancelJob(jobId);
        await ended;
      }
      return get().retryJob(jobId);
    },

    dismissJob: (jobId) => {
      const job = get().jobs[jobId];
      if (!job || !isTerminal(job.state)) return;
      set((state) => {
        const jobs = { ...state.jobs };
        delete jobs[jobId];
        return { jobs, jobOrder: state.jobOrder.filter((id) => id !== jobId) };
      });
    },

    clearFinished: () => {
      const { jobs, jobOrder } = get();
      const keep = jobOrder.filter((id) => !isTerminal(jobs[id]!.state));
      if (keep.length === jobOrder.length) return;
      const next: Record<string, TransferJob> = {};
      for (const id of keep) next[id] = jobs[id]!;
      set({ jobs: next, jobOrder: keep });
    },

    checkStalled: () => {
      const now = deps.now();
      const limit = get().stallSeconds * 1000;
      const { jobs } = get();
      let changed: Record<string, TransferJob> | null = null;
      for (const job of Object.values(jobs)) {
        const stalled =
          (job.state === 'running' || job.state === 'queued') && now - job.lastActivityAt >= limit;
        if (stalled !== job.stalled) {
          changed ??= { ...jobs };
          changed[job.jobId] = { ...job, stalled };
        }
      }
      if (changed) set({ jobs: changed });
    },

    fetchLogPage: (jobId, from, count, query) =>
      query
        ? deps.api.invoke('job:log', jobId, from, count, query)
        : deps.api.invoke('job:log', jobId, from, count),

    exportJobLog: async (jobId, suggestedName, header) => {
      if (deps.api.downloadLog) {
        // a web page: the browser downloads it, nothing is saved on the host
        deps.api.downloadLog(jobId, suggestedName, header);
        return suggestedName;
      }
      try {
        const saved = await deps.api.invoke('job:exportLog', jobId, suggestedName, header);
        if (saved) get().notify({ tone: 'success', text: 'Saved', detail: saved });
        return saved;
      } catch (e) {
        get().notify(errorNotice(`Could not save ${suggestedName}`, e));
        return null;
      }
    },
  };
}
