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
//   completions are seen only when the writer yields to the event loop, so threads sat idle.
// - The pool's size is the real concurrency. libuv reads UV_THREADPOOL_SIZE once, when the pool
//   starts; it must be >= threads + THREADPOOL_RESERVE (bundle reads, zlib). bin/sluice.cjs sets it
//   before anything else runs; the app's engine process must set it before its first async fs call.
//   planCloser never plans more threads than the pool has.
// - The first failed close fails the apply: it is thrown by the next close() call and by drain().
//   hg keeps only the last worker exception and loses one raised after the last enqueue.
// - Used for every stream format (v1, packed1, v2, store and cache files); hg 6.3.2 enters its
//   closer for v2 but never opens v2 files with backgroundclose=True.
import { close as fsClose, closeSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { CloseStats } from '../../../shared/events';
import { DEFAULT_CLOSER_OPTIONS, type CloserOptions } from '../../../shared/jobs';
import { SluiceError } from '../errors';

/** fs.close's shape; tests inject a slow or failing one. */
export type CloseImpl = (fd: number, callback: (err: NodeJS.ErrnoException | null) => void) => void;

/** What the closer will do for one job, decided from the options, the platform and the file count. */
export interface CloserPlan {
  background: boolean;
  threads: number;
  maxQueue: number;
}

/**
 * Threads used when the options leave `closeThreads` at hg's 4. Measured (docs/README bench and
 * scripts/bench/apply-bench.ts): with a 1 ms close, N threads hide at most N closes per ms, so
 * 20k files need N >= ~32 to stay within 1.3x of the no-latency time on a 2-core machine; the
 * threads only wait in close(), they cost no CPU.
 */
export const SLUICE_DEFAULT_CLOSE_THREADS = 32;

/** Pool threads kept free for the rest of the job (bundle reads, zlib). */
export const THREADPOOL_RESERVE = 2;

/** The libuv threadpool size this process runs with (UV_THREADPOOL_SIZE, default 4, max 1024). */
export function threadpoolSize(env: NodeJS.ProcessEnv = process.env): number {
  const n = Number.parseInt(env['UV_THREADPOOL_SIZE'] ?? '', 10);
  return Number.isFinite(n) && n > 0 ? Math.min(n, 1024) : 4;
}

/** UV_THREADPOOL_SIZE to set at process start for a given close thread count. */
export function threadpoolSizeFor(closeThreads: number): number {
  return Math.min(1024, Math.max(4, closeThreads + THREADPOOL_RESERVE));
}

/**
 * Resolves on/off/auto and the thresholds into a plan (vfs.backgroundfilecloser.__init__).
 * `auto` is on for Windows (slow CloseHandle) and off elsewhere: on Linux ext4/tmpfs a close costs
 * ~2 µs and handing it to a thread costs more than it saves (measured, see the README's bench table).
 * Like hg, a known file count below `minFileCount` stays synchronous; unlike hg's v2 path, the
 * count is always known here (every stream header announces it).
 */
export function planCloser(
  options: Partial<CloserOptions> | undefined,
  expectedFiles: number,
  platform: NodeJS.Platform = process.platform,
  poolSize: number = threadpoolSize(),
): CloserPlan {
  const o = { ...DEFAULT_CLOSER_OPTIONS, ...stripUndefined(options ?? {}) };
  const enabled = o.backgroundClose === 'on' || (o.backgroundClose === 'auto' && platform === 'win32');
  const threads = Math.max(1, Math.floor(o.closeThreads));
  const maxQueue = Math.max(1, Math.floor(o.maxQueue));
  const background = enabled && !(expectedFiles > 0 && expectedFiles < o.minFileCount);
  // More closes in flight than pool threads would only queue inside libuv and starve reads.
  const usable = Math.max(1, poolSize - THREADPOOL_RESERVE);
  return { background, threads: background ? Math.min(threads, usable) : 0, maxQueue };
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  const out: Partial<T> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  return out;
}

export class BackgroundCloser {
  readonly background: boolean;
  readonly threads: number;
  private readonly maxQueue: number;
  private readonly closeImpl: CloseImpl;
  /** fds handed to fs.close and not reported closed yet (closing on the pool or waiting in its queue) */
  private outstanding = 0;
  private readonly limit: number;
  private firstError: SluiceError | undefined;
  private spaceWaiter: (() => void) | undefined;
  private idleWaiter: (() => void) | undefined;
  private backgroundClosed = 0;
  private syncClosed = 0;
  private writerWaitMs = 0;
  private readonly onClosed: (err: NodeJS.ErrnoException | null) => void;

  constructor(plan: CloserPlan, closeImpl?: CloseImpl) {
    this.background = plan.background;
    this.threads = plan.background ? Math.max(1, plan.threads) : 0;
    this.maxQueue = Math.max(1, plan.maxQueue);
    this.limit = this.threads + this.maxQueue;
    this.closeImpl = closeImpl ?? fsClose;
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
        closeSync(fd);
      } catch (e) {
        throw closeFailed(e as NodeJS.ErrnoException);
      } finally {
        this.writerWaitMs += performance.now() - t0;
      }
      this.syncClosed++;
      return undefined;
    }
    if (this.outstanding >= this.limit) return this.waitForSpace(fd);
    this.start(fd);
    return undefined;
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
      threads: this.threads,
      backgroundClosed: this.backgroundClosed,
      syncClosed: this.syncClosed,
      writerWaitMs: Math.round(this.writerWaitMs * 10) / 10,
    };
  }

  private start(fd: number): void {
    this.outstanding++;
    this.closeImpl(fd, this.onClosed);
  }

  private closed(err: NodeJS.ErrnoException | null): void {
    this.outstanding--;
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

function closeFailed(err: NodeJS.ErrnoException): SluiceError {
  return new SluiceError('CLOSE_FAILED', `closing a written file failed: ${err.message}`, {
    errno: err.code,
  });
}
