// Messages between the host (EngineWorkerHost) and the engine worker (engine-worker.ts). One warm
// worker runs every job of the host, several at once: each message names its job. The per-file
// lines of a job's debug log travel as one compact chunk per batch (`log`, its arrays transferred),
// never one message or object per file; the events that go on to the renderer carry no file entries.

import type { SluiceEvent } from '../../shared/events';
import type { LogChunk } from '../../shared/job-log-lines';
import type { JobRequest } from '../../shared/jobs';
import type { Credentials, FetchCounts, FetchRequest, WorkingCopySummary } from './engine-api';

/** Quick reads for the library (no job: nothing in the history or the transfers), answered once. */
export type EngineQuery = { kind: 'summary'; repo: string } | { kind: 'fetch'; request: FetchRequest };
export interface EngineQueryResult {
  summary: WorkingCopySummary;
  fetch: FetchCounts;
}

export interface WorkerStartData {
  /** the worker coalesces its postMessage traffic per job at this interval (events.ts batching rules) */
  batchIntervalMs: number;
}

export type HostToWorker =
  | { type: 'start'; jobId: string; request: JobRequest }
  | { type: 'cancel'; jobId: string }
  /** the answer to a job's (or a query's: jobId = queryId) credentials request */
  | { type: 'credentials'; jobId: string; requestId: string; answer: Credentials | null }
  | { type: 'query'; queryId: string; query: EngineQuery };

/** A query's answer (EngineQueryResult[kind]) or its failure. */
export type QueryAnswer =
  | { type: 'answer'; queryId: string; ok: true; result: unknown }
  | { type: 'answer'; queryId: string; ok: false; error: { code: string; message: string } };

export type WorkerToHost =
  | QueryAnswer
  | { type: 'events'; jobId: string; events: SluiceEvent[]; log?: LogChunk }
  /** a server asked a job (or a query: jobId = queryId) for credentials */
  | { type: 'credentials'; jobId: string; requestId: string; url: string; realm: string }
  /** the job's end: after this nothing more comes from the worker for this job */
  | { type: 'finished'; jobId: string; ok: true }
  | { type: 'finished'; jobId: string; ok: false; error: { code: string; message: string } };
