// Whether verify reads its files synchronously or through the thread pool.
import { performance } from 'node:perf_hooks';
import type { RevlogIoMode } from '../../revlog/file-io';

/**
 * Sync reads: files per measured slice, and the median open+read time above which reads go async.
 * Page-cache hits cost tens of µs; a cold disk read costs hundreds.
 */
const SYNC_SLICE = 64;
const SYNC_MAX_MEDIAN_US = 100;

/**
 * Reads stay synchronous while they are page-cache hits and switch to the thread pool for good
 * once the median open+read of a slice of files exceeds SYNC_MAX_MEDIAN_US (cold disk, network
 * share), the policy of store/walk.ts's statMany. Sync work yields to the event loop every ~10 ms.
 */
export class ReadMode {
  private sliceOpenUs: number[] = [];
  private lastYield = performance.now();

  /** the current choice */
  io: RevlogIoMode;

  /** requested: 'auto' measures; 'sync' / 'async' force one way */
  constructor(private readonly requested: 'auto' | RevlogIoMode = 'auto') {
    this.io = requested === 'async' ? 'async' : 'sync';
  }

  /**
   * Called once per filelog with the time its index took to open and read. The median of a slice
   * decides (not the mean: on a loaded machine a descheduled process makes a few reads look slow).
   */
  async afterFile(openMs: number): Promise<void> {
    if (this.io !== 'sync') return;
    if (this.requested === 'sync') return this.yieldNow();
    this.sliceOpenUs.push(openMs * 1000);
    if (this.sliceOpenUs.length >= SYNC_SLICE) {
      const sorted = this.sliceOpenUs.sort((a, b) => a - b);
      if (sorted[sorted.length >> 1]! > SYNC_MAX_MEDIAN_US) this.io = 'async';
      this.sliceOpenUs = [];
    }
    return this.yieldNow();
  }

  /** Lets the event loop breathe every ~10 ms of synchronous work (progress, cancel, IPC). */
  async yieldNow(): Promise<void> {
    const now = performance.now();
    if (now - this.lastYield > 10) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      this.lastYield = performance.now();
    }
  }
}
