// Entry point of the engine worker thread: runs exactly one job (from workerData) with the engine's
// runJob and posts its events to the host, coalesced with the same rules the host applies for the
// renderer. The host cancels with a message (-> AbortSignal) and terminates the thread if the
// engine does not stop within its grace period.

import { parentPort, workerData } from 'node:worker_threads';
import { toSluiceError } from '../engine/errors';
import { runJob, type Credentials } from './engine-api';
import { EventBatcher } from './event-batcher';
import type { HostToWorker, WorkerStartData, WorkerToHost } from './worker-protocol';
import type { SluiceEvent } from '../../shared/events';

const port = parentPort;
if (!port) throw new Error('engine-worker must run as a worker thread');

const { jobId, request, batchIntervalMs } = workerData as WorkerStartData;
const post = (message: WorkerToHost): void => port.postMessage(message);
const controller = new AbortController();
const credentialAnswers = new Map<string, (answer: Credentials | null) => void>();
let nextRequest = 0;

port.on('message', (message: HostToWorker) => {
  if (message.type === 'cancel') {
    controller.abort();
  } else if (message.type === 'credentials') {
    credentialAnswers.get(message.requestId)?.(message.answer);
    credentialAnswers.delete(message.requestId);
  }
});

const batcher = new EventBatcher((events) => post({ type: 'events', events }), { intervalMs: batchIntervalMs });
let ended = false;
const emit = (event: SluiceEvent): void => {
  if (event.type === 'done' || event.type === 'error') ended = true;
  batcher.push(event);
};

function askCredentials({ url, realm }: { url: string; realm: string }): Promise<Credentials | null> {
  const requestId = `${jobId}-c${++nextRequest}`;
  return new Promise((resolve) => {
    credentialAnswers.set(requestId, resolve);
    // A cancel while the user is being asked must not leave the job waiting for ever.
    controller.signal.addEventListener('abort', () => resolve(null), { once: true });
    post({ type: 'credentials', requestId, url, realm });
  });
}

try {
  await runJob(request, { jobId, emit, signal: controller.signal, askCredentials });
  batcher.dispose();
  post({ type: 'finished', ok: true });
} catch (e) {
  const error = toSluiceError(e);
  // The engine reports its own failures as error events; this covers the ones it could not.
  if (!ended) emit({ type: 'error', jobId, time: Date.now(), code: error.code, message: error.message });
  batcher.dispose();
  post({ type: 'finished', ok: false, error: { code: error.code, message: error.message } });
}
// Let the thread end on its own once the engine's handles are gone; the host terminates it anyway.
port.removeAllListeners('message');
port.unref();
