// Entry point of the engine worker thread. The host keeps one warm and sends it every job
// (`start`), so a job pays neither for a thread nor for loading the engine; several jobs run at
// once on its event loop, as they would in one CLI process each. Per job it runs the engine's
// runJob, keeps per-file events as compact debug-log chunks (JobLogLines) and posts the rest coalesced
// with the rules the host applies for the renderer. The host cancels with a message
// (-> AbortSignal) and terminates the thread only when an engine does not stop (see JobRegistry).

import { parentPort, workerData } from 'node:worker_threads';
import { toSluiceError } from '../engine/errors';
import { fetchCounts, runJob, workingCopySummary, type Credentials } from './engine-api';
import { EventBatcher } from './event-batcher';
import { jobSink, warmUpEngine } from './engine-warm-up';
import { JobLogLines } from '../../shared/job-log-lines';
import type { EngineQuery, HostToWorker, WorkerStartData, WorkerToHost } from './worker-protocol';
import type { SluiceEvent } from '../../shared/events';
import type { JobRequest } from '../../shared/jobs';

const port = parentPort;
if (!port) throw new Error('engine-worker must run as a worker thread');

const { batchIntervalMs } = workerData as WorkerStartData;
const post = (message: WorkerToHost, transfer: ArrayBuffer[] = []): void =>
  port.postMessage(message, transfer);

interface RunningJob {
  controller: AbortController;
  credentialAnswers: Map<string, (answer: Credentials | null) => void>;
}
const jobs = new Map<string, RunningJob>();
/** queries waiting for a credentials answer, by queryId */
const queryAnswers = new Map<string, Map<string, (answer: Credentials | null) => void>>();

/** the idle warm-up while it runs: the first message that asks for work cancels it */
let warmUp: AbortController | null = null;

port.on('message', (message: HostToWorker) => {
  if (message.type === 'start' || message.type === 'query') warmUp?.abort();
  if (message.type === 'start') void run(message.jobId, message.request);
  else if (message.type === 'query') void answer(message.queryId, message.query);
  else if (message.type === 'cancel') jobs.get(message.jobId)?.controller.abort();
  else if (message.type === 'credentials') {
    const answers = jobs.get(message.jobId)?.credentialAnswers ?? queryAnswers.get(message.jobId);
    answers?.get(message.requestId)?.(message.answer);
    answers?.delete(message.requestId);
  }
});

async function run(jobId: string, request: JobRequest): Promise<void> {
  const controller = new AbortController();
  const job: RunningJob = { controller, credentialAnswers: new Map() };
  jobs.set(jobId, job);
  const log = new JobLogLines();
  const batcher = new EventBatcher((events) => postEvents(jobId, events, log), {
    intervalMs: batchIntervalMs,
  });
  let ended = false;
  let nextRequest = 0;
  const sink = jobSink(log, batcher);
  const emit = (event: SluiceEvent): void => {
    if (event.type === 'done' || event.type === 'error') ended = true;
    // File entries live on as log lines only: nothing per file leaves this thread.
    sink(event);
  };
  const askCredentials = ({ url, realm }: { url: string; realm: string }): Promise<Credentials | null> => {
    const requestId = `${jobId}-c${++nextRequest}`;
    return new Promise((resolve) => {
      job.credentialAnswers.set(requestId, resolve);
      // A cancel while the user is being asked must not leave the job waiting for ever.
      controller.signal.addEventListener('abort', () => resolve(null), { once: true });
      post({ type: 'credentials', jobId, requestId, url, realm });
    });
  };
  try {
    await runJob(request, { jobId, emit, signal: controller.signal, askCredentials });
    if (log.pending > 0) batcher.touch();
    batcher.dispose();
    post({ type: 'finished', jobId, ok: true });
  } catch (e) {
    const error = toSluiceError(e);
    // The engine reports its own failures as error events; this covers the ones it could not.
    if (!ended) emit({ type: 'error', jobId, time: Date.now(), code: error.code, message: error.message });
    if (log.pending > 0) batcher.touch();
    batcher.dispose();
    post({ type: 'finished', jobId, ok: false, error: { code: error.code, message: error.message } });
  } finally {
    jobs.delete(jobId);
  }
}

/**
 * The operations a first job of the app runs are loaded (run-job imports them on use) while the
 * thread is idle after its start, then the engine warms up on a tiny bundle (engine-warm-up.ts),
 * so the first job after the window opens neither loads them nor runs their code cold. Neither
 * starts once a job has.
 */
function preloadOperations(): void {
  setTimeout(() => {
    void Promise.all([
      import('../engine/operations/apply/apply-stream-bundle'),
      import('../engine/operations/apply/apply-changegroup-bundle'),
      import('../engine/operations/clone/clone'),
    ])
      .then(async () => {
        if (jobs.size > 0 || queryAnswers.size > 0) return;
        const controller = (warmUp = new AbortController());
        await warmUpEngine(controller.signal, batchIntervalMs);
        if (warmUp === controller) warmUp = null;
      })
      .catch(() => {});
  }, 0);
}
preloadOperations();

async function answer(queryId: string, query: EngineQuery): Promise<void> {
  const answers = new Map<string, (answer: Credentials | null) => void>();
  let nextRequest = 0;
  // the host answers with saved credentials, the user's (a "Sign in…" fetch) or null: never a
  // prompt the host did not choose to show
  const askCredentials = ({ url, realm }: { url: string; realm: string }): Promise<Credentials | null> => {
    const requestId = `${queryId}-c${++nextRequest}`;
    return new Promise((resolve) => {
      answers.set(requestId, resolve);
      post({ type: 'credentials', jobId: queryId, requestId, url, realm });
    });
  };
  queryAnswers.set(queryId, answers);
  try {
    const result =
      query.kind === 'summary'
        ? await workingCopySummary(query.repo)
        : await fetchCounts(query.request, { askCredentials });
    post({ type: 'answer', queryId, ok: true, result });
  } catch (e) {
    const error = toSluiceError(e);
    post({ type: 'answer', queryId, ok: false, error: { code: error.code, message: error.message } });
  } finally {
    queryAnswers.delete(queryId);
  }
}

/** A batch of a job's events with its new log lines; the chunk's arrays move to the host uncopied. */
function postEvents(jobId: string, events: SluiceEvent[], log: JobLogLines): void {
  const chunk = log.take();
  if (!chunk) return post({ type: 'events', jobId, events });
  post({ type: 'events', jobId, events, log: chunk }, [
    chunk.kinds.buffer,
    chunk.sizes.buffer,
    chunk.ends.buffer,
  ]);
}
