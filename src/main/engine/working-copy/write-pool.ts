// Writes a checkout's files on every core (merge.batchget over hg's workers): worker threads
// (checkout-worker.ts) and the main thread claim runs of files from one shared counter
// (file-batch.ts). The main thread also makes the working directories first (workers wait for
// them), turns the shared per-file status into progress and file events at the tracker's pace,
// and stops everyone on a cancel or the first error. No message crosses threads per file.
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import type { CloseStats } from '../../../shared/events';
import type { CloseImpl } from '../closer/background-closer';
import { cancelled, SluiceError, type SluiceError as SluiceErrorType } from '../errors';
import type { JobContext } from '../context/job-context';
import type { ProgressTracker } from '../context/progress';
import { locateWorkerScript, type WorkerScript } from '../context/worker-script';
import {
  CHECKOUT_WORKER_KIND,
  CTL_GO,
  CTL_NEXT,
  CTL_STOP,
  batchPath,
  FILE_DONE,
  fromPosted,
  writeShare,
  type BatchShared,
  type CheckoutTask,
  type CheckoutWorkerData,
  type CheckoutWorkerMessage,
  type FileBatch,
  type ShareResult,
} from './file-batch';

const NO_CLOSES: CloseStats = {
  background: false,
  threads: 0,
  backgroundClosed: 0,
  syncClosed: 0,
  writerWaitMs: 0,
};

/** a worker's young generation (MB); 2-16 measured: RSS 135-151 MB, CPU within noise */
const YOUNG_GENERATION_MB = 4;

/**
 * A worker thread costs ~150-200 ms of CPU to start (its isolate, Node's bootstrap, the modules),
 * which a checkout of fewer files per thread does not win back, in CPU or, on a busy machine, in
 * time (docs/benchmarks/analysis.md, "Small repositories").
 */
const MIN_FILES_PER_THREAD = 1500;

/**
 * Worker threads beside the main thread: one per other core, at most 3
 * (SLUICE_CHECKOUT_WORKERS=N overrides it: benchmarks).
 */
export function defaultCheckoutWorkers(): number {
  const env = Number(process.env.SLUICE_CHECKOUT_WORKERS);
  if (process.env.SLUICE_CHECKOUT_WORKERS && Number.isInteger(env) && env >= 0) return env;
  return Math.max(0, Math.min(3, availableParallelism() - 1));
}

export interface WritePoolOptions {
  /**
   * worker threads (default: defaultCheckoutWorkers(), fewer for a small checkout; 0: the main
   * thread writes every file)
   */
  workers?: number;
  /** tests: a slow or failing close (main thread only: no workers then) */
  closeImpl?: CloseImpl;
  /** tests: false leaves every file to the workers (when there are any) */
  mainShare?: boolean;
  /** the revlogs are zstd (each worker loads its decoder as it starts) */
  zstd?: boolean;
}

/**
 * The worker threads of one checkout. prestart() starts them before the batch is known (a fresh
 * checkout, once the manifest's size says it is worth it): a worker's start (see
 * MIN_FILES_PER_THREAD) then runs on the other core while the main thread reads the manifest,
 * audits the paths and makes the directories, instead of after them
 * (medium corpus: the second thread wrote from the first file on). run() hands them the batch and
 * starts any not started yet. terminate() when the checkout stops before run().
 */
export function fileWriters(opts: WritePoolOptions = {}): FileWriters {
  return new FileWriters(opts);
}

export class FileWriters {
  private readonly workers: Worker[] = [];
  private readonly results: Promise<CheckoutWorkerMessage>[] = [];
  /** the workers' termination, once started (terminate() is idempotent) */
  private stopped: Promise<void> | undefined;
  private readonly script: WorkerScript | null;
  /** set by run(): a worker failing before then stops the batch once it exists */
  private control: Int32Array | undefined;
  private failedEarly = false;

  constructor(private readonly opts: WritePoolOptions) {
    this.script = opts.closeImpl
      ? null
      : locateWorkerScript(import.meta.url, './checkout-worker.ts', 'checkout-worker');
  }

  private countFor(files: number): number {
    if (!this.script) return 0;
    if (this.opts.workers !== undefined) return Math.min(this.opts.workers, files);
    return Math.min(defaultCheckoutWorkers(), Math.floor(files / MIN_FILES_PER_THREAD));
  }

  /** Starts the workers a batch of about `files` files gets, before the batch exists. */
  prestart(files: number): void {
    if (this.stopped === undefined) this.spawn(this.countFor(files));
  }

  /** Starts workers up to `count` (each writes once it has its task and CTL_GO is set). */
  private spawn(count: number): void {
    const script = this.script!;
    while (this.workers.length < count) {
      const data: CheckoutWorkerData = { kind: CHECKOUT_WORKER_KIND, zstd: this.opts.zstd === true };
      const worker = new Worker(script.bootstrap ?? script.script, {
        workerData: script.bootstrap ? { ...data, __entry: script.script.href } : data,
        // a file's garbage is short-lived: a small young generation keeps RSS (and page faults) down
        resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
        stdout: false,
        stderr: false,
      });
      this.workers.push(worker);
      this.results.push(
        new Promise<CheckoutWorkerMessage>((resolve) => {
          let settled = false;
          const fail = (why: string): void => {
            if (settled) return;
            settled = true;
            if (this.control) Atomics.store(this.control, CTL_STOP, 1);
            else this.failedEarly = true;
            resolve({
              close: NO_CLOSES,
              files: 0,
              error: { code: 'IO', message: `checkout worker failed: ${why}` },
            });
          };
          worker.on('message', (m: CheckoutWorkerMessage) => {
            settled = true;
            resolve(m);
          });
          worker.on('error', (e) => fail(e.message));
          worker.on('exit', (code) => fail(`exited with code ${code}`));
        }),
      );
    }
  }

  /**
   * Stops the workers (before run(): none has written anything; after it: their threads end), and
   * resolves once their threads have exited. The same promise for every call.
   */
  terminate(): Promise<void> {
    if (this.control) {
      Atomics.store(this.control, CTL_STOP, 1);
      Atomics.notify(this.control, CTL_GO);
    }
    // never rejects: run() starts it without awaiting (a worker that cannot stop has written nothing more)
    this.stopped ??= Promise.all(this.workers.map((w) => w.terminate())).then(
      () => undefined,
      () => undefined,
    );
    return this.stopped;
  }

  /**
   * Writes every file of the batch. `prepare` runs on the main thread before any file is written
   * (the directories). Resolves with the closers' merged stats once every file is written and
   * closed; rejects with the first error (or CANCELLED) once every thread has stopped and closed
   * what it wrote, leaving the shared status to say which files exist. The worker threads' ends
   * (their isolates torn down, ~10-20 ms) go on in the background: await terminate() for them.
   */
  async run(
    ctx: JobContext,
    progress: ProgressTracker,
    batch: FileBatch,
    shared: BatchShared,
    prepare: () => void,
  ): Promise<CloseStats> {
    const { opts, results } = this;
    const n = batch.files.count;
    const { control, status, stats } = shared;
    this.control = control;
    if (this.failedEarly) Atomics.store(control, CTL_STOP, 1);
    // progress: files whose status turned DONE, in claim order (a window of at most the claimed ones)
    let low = 0;
    const reported = new Uint8Array(n);
    const report = (): void => {
      const hi = Math.min(n, Atomics.load(control, CTL_NEXT));
      for (let i = low; i < hi; i++) {
        if (reported[i] || Atomics.load(status, i) !== FILE_DONE) continue;
        reported[i] = 1;
        const size = stats[i * 3 + 1]!;
        progress.addBytes(size);
        // the name is read only with file events on: no string per file otherwise
        progress.fileDone('w', ctx.fileEvents ? batchPath(batch.files, i) : '', size);
      }
      while (low < hi && reported[low]) low++;
    };
    const stop = (): void => {
      Atomics.store(control, CTL_STOP, 1);
      Atomics.notify(control, CTL_GO);
    };
    const onAbort = (): void => stop();
    ctx.signal.addEventListener('abort', onAbort);
    if (ctx.signal.aborted) stop();

    let mainError: SluiceErrorType | undefined;
    let mainClose: CloseStats | undefined;
    try {
      try {
        prepare();
      } catch (e) {
        stop();
        throw e;
      }
      // the workers this batch needs: started now if not prestarted, the others end
      const want = Atomics.load(control, CTL_STOP) ? 0 : this.countFor(n);
      this.spawn(want);
      for (const w of this.workers.splice(want)) {
        w.removeAllListeners('exit').removeAllListeners('error');
        void w.terminate();
      }
      results.length = want; // their promises only resolve: nothing is left unhandled
      const task: CheckoutTask = { batch, shared };
      for (const w of this.workers) w.postMessage(task);
      Atomics.store(control, CTL_GO, 1);
      Atomics.notify(control, CTL_GO);
      const count = this.workers.length;
      let next = performance.now() + ctx.progressIntervalMs;
      const r: ShareResult =
        opts.mainShare === false && count > 0
          ? { close: NO_CLOSES, files: 0 }
          : await writeShare(batch, shared, {
              ...(opts.closeImpl ? { closeImpl: opts.closeImpl } : {}),
              tick: () => {
                if (ctx.signal.aborted) stop();
                const now = performance.now();
                if (now < next) return;
                next = now + ctx.progressIntervalMs;
                report();
              },
            });
      mainClose = r.close;
      mainError = r.error;
      // the workers' last files
      const timer = setInterval(report, ctx.progressIntervalMs);
      let posted: CheckoutWorkerMessage[];
      try {
        posted = await Promise.all(results);
      } finally {
        clearInterval(timer);
      }
      report();
      ctx.log(
        'debug',
        `checkout: ${r.files} files written on the main thread${cpu(r.cpuMs)}, ` +
          `${posted.map((m) => `${m.files}${cpu(m.cpuMs)}`).join(' + ') || 'none'} on workers`,
      );
      const closes = [mainClose, ...posted.map((m) => m.close)];
      const firstError = mainError ?? posted.map((m) => m.error).find((e) => e !== undefined);
      if (ctx.signal.aborted) throw cancelled();
      if (firstError) throw firstError instanceof SluiceError ? firstError : fromPosted(firstError);
      return mergeCloseStats(closes);
    } finally {
      ctx.signal.removeEventListener('abort', onAbort);
      // every thread has posted its result (or failed): nothing of theirs is open any more, so the
      // caller goes on (the dirstate) while their threads end
      void this.terminate();
    }
  }
}

/** ' (N ms CPU)' where the runtime measures a thread's CPU */
function cpu(ms: number | undefined): string {
  return ms === undefined ? '' : ` (${ms} ms CPU)`;
}

function mergeCloseStats(all: CloseStats[]): CloseStats {
  return {
    background: all.some((c) => c.background),
    threads: Math.max(...all.map((c) => c.threads)),
    backgroundClosed: all.reduce((s, c) => s + c.backgroundClosed, 0),
    syncClosed: all.reduce((s, c) => s + c.syncClosed, 0),
    writerWaitMs: Math.round(all.reduce((s, c) => s + c.writerWaitMs, 0) * 10) / 10,
  };
}
