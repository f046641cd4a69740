// BackgroundCloser: closes the files the applier has finished writing, off the writer's path.
//
// Mirrors Mercurial's vfs.backgroundfilecloser (vfs.py): a bounded queue in front of a few
// closing threads, because close() is slow on some filesystems (NTFS with an antivirus filter:
// CloseHandle waits for the scan, ~1 ms per file) while the writer could already be writing the
// next file. Differences from hg, on purpose:
// - The threads are libuv's threadpool and the queue is libuv's work queue: each fd is handed to
//   fs.close at once, and at most `threads + maxQueue` fds are outstanding (closing or waiting);
//   beyond that the writer waits (hg's Queue.put(block=True)), without blocking the event loop.
//   Handing fds over only as earlier closes complete (a JS-side queue) was measured slower: the
//   completions are seen only when the writer yields to the event loop, so threads sat idle. So
//   the pool's size is what bounds the closes in flight, and every entry point sizes it for the
//   default (threadpool.ts). Only a plan for fewer threads than the pool has (hg's 4 in a
//   comparison run by the app) holds the rest in a JS-side queue (`gated`), so that its closes
//   in flight are still what it asked for.
// - The pool's size is the real concurrency. libuv reads UV_THREADPOOL_SIZE once, when the pool
//   starts; it must be >= threads + THREADPOOL_RESERVE (bundle reads, zlib). Every entry point sizes
//   it first from a CommonJS bootstrap (threadpool.ts); planCloser never plans more threads than
//   the pool has.
// - The first failed close fails the apply: it is thrown by the next close() call and by drain().
//   hg keeps only the last worker exception and loses one raised after the last enqueue.
// - Used for every stream format (v1, packed1, v2, store and cache files); hg 6.3.2 enters its
//   closer for v2 but never opens v2 files with backgroundclose=True.
import { close as fsClose, closeSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { CloseStats } from '../../../shared/events';
import { DEFAULT_CLOSER_OPTIONS, type CloserOptions } from '../../../shared/jobs';
import { SluiceError } from '../errors';
import { THREADPOOL_RESERVE, threadpoolSize } from './threadpool';

export { THREADPOOL_RESERVE, threadpoolSize, threadpoolSizeFor } from './threadpool';

/** fs.close's shape; tests inject a slow or failing one. */
export type CloseImpl = (fd: number, callback: (err: NodeJS.ErrnoException | null) => void) => void;
/** fs.closeSync's shape (tests: a slow synchronous close for the adaptive closer). */
export type CloseSyncImpl = (fd: number) => void;

/** What the closer will do for one job, decided from the options, the platform and the file count. */
export interface CloserPlan {
  background: boolean;
  threads: number;
  maxQueue: number;
  /**
   * Start synchronous and switch to background closing if the first ADAPT_SAMPLE closes are slow
   * (`auto` off Windows: NFS/SMB mounts flush on close, local disks do not).
   */
  adaptive?: boolean;
  /**
   * The pool has more threads than `threads` + the reserve: keep at most `threads` closes in
   * fs.close and the rest in a JS-side queue (see the top of this file).
   */
  gated?: boolean;
  /** CloserOptions.simulateCloseMs: every close waits this long first (comparison runs) */
  simulateCloseMs?: number;
}

/** Closes timed before an adaptive closer decides (64 x 1 ms = the price of finding out). */
export const ADAPT_SAMPLE = 64;
/**
 * Median close time above which background closing pays off. Measured on Linux (2 vCPUs): a close
 * costs 2-5 µs on tmpfs/ext4, and handing one to the pool costs ~25 µs of CPU (wakeups, context
 * switches): background closing only wins when a close takes several times that.
 */
export const ADAPT_THRESHOLD_MS = 0.2;

/**
 * Sluice's default close thread count (DEFAULT_CLOSER_OPTIONS.closeThreads; hg's is 4). With a
 * 1 ms close, N threads retire at most N closes per ms, so the closes of F files take F/N ms:
 * hiding them behind a ~0.55 s apply of 20k files needs N >= ~40. Measured (apply-bench.mjs,
 * medium corpus, slowclose 1 ms, 2 vCPUs, median of 7, closer-on time without latency 0.57-0.58 s):
 * 32 threads 0.75 s, 48 threads 0.58 s, 64 threads 0.67 s, 96 threads 0.66 s; more threads
 * mostly add wakeups and context switches on a small machine.
 */
export const SLUICE_DEFAULT_CLOSE_THREADS = DEFAULT_CLOSER_OPTIONS.closeThreads;

/**
 * Resolves on/off/auto and the thresholds into a plan (vfs.backgroundfilecloser.__init__).
 * `auto` is on for Windows (slow CloseHandle, hg's default too) and adaptive elsewhere: it starts
 * synchronous, which measured fastest on Linux tmpfs/ext4 (a close costs 2-5 µs; the pool handoff
 * costs more), and switches to background closing when the first closes prove slow (network
 * filesystems). Like hg, a known file count below `minFileCount` stays synchronous; unlike hg's v2
 * path, the count is always known here (every stream header announces it).
 */
export function planCloser(
  options: Partial<CloserOptions> | undefined,
  expectedFiles: number,
  platform: NodeJS.Platform = process.platform,
  poolSize: number = threadpoolSize(),
): CloserPlan {
  const o = { ...DEFAULT_CLOSER_OPTIONS, ...stripUndefined(options ?? {}) };
  const maxQueue = Math.max(1, Math.floor(o.maxQueue));
  const enough = !(expectedFiles > 0 && expectedFiles < o.minFileCount);
  const mode = o.backgroundClose === 'auto' ? (platform === 'win32' ? 'on' : 'adaptive') : o.backgroundClose;
  const simulate = o.simulateCloseMs && o.simulateCloseMs > 0 ? { simulateCloseMs: o.simulateCloseMs } : {};
  if (mode === 'off' || !enough) return { background: false, threads: 0, maxQueue, ...simulate };
  // More closes outstanding than pool threads only queue inside libuv.
  const threads = Math.max(1, Math.min(Math.floor(o.closeThreads), poolSize - THREADPOOL_RESERVE));
  // A simulated delay is a timer, not a pool thread: only the gate keeps `threads` of them at once.
  const gated = threads + THREADPOOL_RESERVE < poolSize || simulate.simulateCloseMs ? { gated: true } : {};
  if (mode === 'adaptive')
    return { background: false, threads, maxQueue, adaptive: true, ...gated, ...simulate };
  return { background: true, threads, maxQueue, ...gated, ...simulate };
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  const out: Partial<T> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  return out;
}

export class BackgroundCloser {
  /** closing in the background now (an adaptive closer turns this on after its sample) */
  background: boolean;
  /** threads used when closing in the background */
  readonly threads: number;
  /** synchronous closes still to time before an adaptive closer decides (0: decided) */
  private adaptLeft: number;
  /** their durations (ms) */
  private readonly adaptTimes: Float64Array;
  private readonly maxQueue: number;
  private readonly closeImpl: CloseImpl;
  private readonly closeSyncImpl: CloseSyncImpl;
  /** fds handed over and not reported closed yet (in fs.close, in libuv's queue or in `waiting`) */
  private outstanding = 0;
  /** gated: at most this many in fs.close at once (else Infinity: the pool bounds them) */
  private readonly inFlightCap: number;
  private inFlight = 0;
  /** gated: fds waiting for one of the `threads` closes to complete (a ring of `maxQueue`) */
  private readonly waiting: Int32Array;
  private waitHead = 0;
  private waitCount = 0;
  private readonly limit: number;
  private firstError: SluiceError | undefined;
  private spaceWaiter: (() => void) | undefined;
  private idleWaiter: (() => void) | undefined;
  private backgroundClosed = 0;
  private syncClosed = 0;
  private writerWaitMs = 0;
  private readonly onClosed: (err: NodeJS.ErrnoException | null) => void;

  constructor(plan: CloserPlan, closeImpl?: CloseImpl, closeSyncImpl?: CloseSyncImpl) {
    this.background = plan.background;
    this.threads = plan.background || plan.adaptive ? Math.max(1, plan.threads) : 0;
    this.adaptLeft = plan.adaptive && !plan.background ? ADAPT_SAMPLE : 0;
    this.adaptTimes = new Float64Array(this.adaptLeft);
    this.maxQueue = Math.max(1, plan.maxQueue);
    this.limit = this.threads + this.maxQueue;
    this.inFlightCap = plan.gated ? this.threads : Infinity;
    this.waiting = new Int32Array(plan.gated ? this.maxQueue : 0);
    this.closeImpl = closeImpl ?? fsClose;
    this.closeSyncImpl = closeSyncImpl ?? closeSync;
    const delay = plan.simulateCloseMs;
    if (delay && delay > 0) {
      // The simulated slow close: the writer blocks for a synchronous one (as on NTFS), a
      // background one holds its closing slot (the gate allows `threads`) for the delay.
      const asyncClose = this.closeImpl;
      const syncClose = this.closeSyncImpl;
      this.closeImpl = (fd, cb) => void setTimeout(() => asyncClose(fd, cb), delay);
      this.closeSyncImpl = (fd) => {
        sleepSync(delay);
        syncClose(fd);
      };
    }
    // One bound callback for every close: no closure per file.
    this.onClosed = (err) => this.closed(err);
  }

  /**
   * Hands over a file the writer is done with. Returns undefined when the fd was closed
   * synchronously or handed to the pool, a promise when `threads + maxQueue` fds are outstanding
   * (await it before the next file: it hands the fd over once a close completes, or rejects with
   * the first close error). Throws the first failed background close (the fd passed in is still
   * closed).
   */
  close(fd: number): Promise<void> | undefined {
    if (this.firstError) {
      this.closeQuietly(fd);
      throw this.firstError;
    }
    if (!this.background) {
      const t0 = performance.now();
      try {
        this.closeSyncImpl(fd);
      } catch (e) {
        throw closeFailed(e as NodeJS.ErrnoException);
      } finally {
        const ms = performance.now() - t0;
        this.writerWaitMs += ms;
        if (this.adaptLeft > 0) this.adaptTimes[--this.adaptLeft] = ms;
      }
      this.syncClosed++;
      if (this.adaptLeft === 0 && this.adaptTimes.length > 0 && this.syncClosed === ADAPT_SAMPLE)
        this.adapt();
      return undefined;
    }
    if (this.outstanding >= this.limit) return this.waitForSpace(fd);
    this.start(fd);
    return undefined;
  }

  /**
   * The sample is complete: close in the background from now on if closes were slow. The median,
   * not the mean: one close stretched by a preemption must not flip the decision.
   */
  private adapt(): void {
    const sorted = Float64Array.from(this.adaptTimes).sort();
    if (sorted[sorted.length >> 1]! > ADAPT_THRESHOLD_MS) this.background = true;
  }

  private waitForSpace(fd: number): Promise<void> {
    const t0 = performance.now();
    return new Promise<void>((resolve, reject) => {
      this.spaceWaiter = () => {
        this.writerWaitMs += performance.now() - t0;
        if (this.firstError) {
          this.closeQuietly(fd);
          reject(this.firstError);
        } else {
          this.start(fd);
          resolve();
        }
      };
    });
  }

  /**
   * Waits until every handed-over fd is closed (hg joins its threads at context exit), then
   * returns the stats or throws the first close error. Always closes everything, even after an
   * error, so no fd outlives the job (a temp dir with open files cannot be removed on Windows).
   */
  async drain(): Promise<CloseStats> {
    if (this.outstanding > 0) {
      const t0 = performance.now();
      await new Promise<void>((resolve) => {
        this.idleWaiter = resolve;
      });
      this.writerWaitMs += performance.now() - t0;
    }
    if (this.firstError) throw this.firstError;
    return this.stats();
  }

  stats(): CloseStats {
    return {
      background: this.background,
      threads: this.background ? this.threads : 0,
      backgroundClosed: this.backgroundClosed,
      syncClosed: this.syncClosed,
      writerWaitMs: Math.round(this.writerWaitMs * 10) / 10,
    };
  }

  private start(fd: number): void {
    this.outstanding++;
    if (this.inFlight < this.inFlightCap) {
      this.inFlight++;
      this.closeImpl(fd, this.onClosed);
    } else {
      // gated: outstanding <= threads + maxQueue, so the ring has room
      this.waiting[(this.waitHead + this.waitCount++) % this.waiting.length] = fd;
    }
  }

  private closed(err: NodeJS.ErrnoException | null): void {
    this.outstanding--;
    this.inFlight--;
    if (this.waitCount > 0) {
      const next = this.waiting[this.waitHead]!;
      this.waitHead = (this.waitHead + 1) % this.waiting.length;
      this.waitCount--;
      this.inFlight++;
      this.closeImpl(next, this.onClosed);
    }
    if (err) this.firstError ??= closeFailed(err);
    else this.backgroundClosed++;
    const waiter = this.spaceWaiter;
    if (waiter) {
      this.spaceWaiter = undefined;
      waiter();
    }
    if (this.idleWaiter && this.outstanding === 0) {
      const idle = this.idleWaiter;
      this.idleWaiter = undefined;
      idle();
    }
  }

  private closeQuietly(fd: number): void {
    try {
      closeSync(fd);
    } catch {
      // the job is failing already; the first error is the one to report
    }
  }
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));
/** Blocks this thread for `ms` (Atomics.wait: no CPU spent, as a thread in a slow close()). */
function sleepSync(ms: number): void {
  Atomics.wait(sleeper, 0, 0, ms);
}

function closeFailed(err: NodeJS.ErrnoException): SluiceError {
  return new SluiceError('CLOSE_FAILED', `closing a written file failed: ${err.message}`, {
    errno: err.code,
  });
}
