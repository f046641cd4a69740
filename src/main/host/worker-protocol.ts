// Messages between the host (EngineWorkerHost) and the engine worker (engine-worker.ts). One
// worker runs one job: the job is in the worker's start data, so the only host -> worker messages
// are a cancel and answers to credential prompts.

import type { SluiceEvent } from '../../shared/events';
import type { JobRequest } from '../../shared/jobs';
import type { Credentials } from './engine-api';

export interface WorkerStartData {
  jobId: string;
  request: JobRequest;
  /** the worker coalesces its postMessage traffic at this interval (events.ts batching rules) */
  batchIntervalMs: number;
}

export type HostToWorker =
  | { type: 'cancel' }
  | { type: 'credentials'; requestId: string; answer: Credentials | null };

export type WorkerToHost =
  | { type: 'events'; events: SluiceEvent[] }
  | { type: 'credentials'; requestId: string; url: string; realm: string }
  /** the job's end: after this nothing more comes from the worker and the host may terminate it */
  | { type: 'finished'; ok: true }
  | { type: 'finished'; ok: false; error: { code: string; message: string } };
