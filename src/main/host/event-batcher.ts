// Coalesces one job's engine events into few messages for the renderer. GitHub Desktop's mistake
// was one store update per progress line; here the renderer gets at most one message per
// interval (default 50 ms = 20/s) per job, whatever the engine's pace:
//  - progress: only the latest of an interval is kept (each one carries cumulative totals);
//  - files: entries of adjacent files events are concatenated, none lost;
//  - start, phase, done, error, retry: flushed at once (with everything queued before them, in order),
//    because the UI changes screens on them and a 50 ms delay there is visible;
//  - log: queued in order;
//  - touch(): something besides events (a debug-log chunk the deliver callback picks up) is
//    waiting: deliver within the interval even if no event is queued.
// Pure: no timers of its own beyond setTimeout, no electron; used by the host for the renderer
// and by the engine worker for its postMessage traffic.

import type { FilesEvent, ProgressEvent, SluiceEvent } from '../../shared/events';

export interface EventBatcherOptions {
  /** minimum time between two non-urgent flushes */
  intervalMs?: number;
  now?: () => number;
}

const URGENT: ReadonlySet<SluiceEvent['type']> = new Set(['start', 'phase', 'done', 'error', 'retry']);

export class EventBatcher {
  private readonly intervalMs: number;
  private readonly now: () => number;
  private queued: SluiceEvent[] = [];
  /** the files event at the tail of `queued`, owned by the batcher (its entries array is ours) */
  private openFiles: FilesEvent | null = null;
  private latestProgress: ProgressEvent | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private lastFlushAt = -Infinity;
  private touched = false;
  private disposed = false;

  constructor(
    private readonly deliver: (events: SluiceEvent[]) => void,
    options: EventBatcherOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 50;
    this.now = options.now ?? Date.now;
  }

  push(event: SluiceEvent): void {
    if (this.disposed) return;
    switch (event.type) {
      case 'progress':
        this.latestProgress = event;
        break;
      case 'files':
        if (this.openFiles) {
          for (const entry of event.entries) this.openFiles.entries.push(entry);
          this.openFiles.time = event.time;
        } else {
          this.openFiles = { ...event, entries: event.entries.slice() };
          this.queued.push(this.openFiles);
        }
        break;
      default:
        // An urgent event closes the interval: the progress before it is delivered before it,
        // so the renderer never sees progress that looks newer than a done.
        if (URGENT.has(event.type) && this.latestProgress) {
          this.queued.push(this.latestProgress);
          this.latestProgress = null;
        }
        this.openFiles = null;
        this.queued.push(event);
    }
    if (URGENT.has(event.type)) this.flush();
    else this.schedule();
  }

  pushAll(events: readonly SluiceEvent[]): void {
    for (const e of events) this.push(e);
  }

  /** Asks for a delivery within the interval even when no event is queued (it may be empty). */
  touch(): void {
    if (this.disposed) return;
    this.touched = true;
    this.schedule();
  }

  /** Delivers everything queued now (no-op when nothing is queued and nothing touched). */
  flush(): void {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.queued.length === 0 && this.latestProgress === null && !this.touched) return;
    this.touched = false;
    const batch = this.queued;
    if (this.latestProgress) batch.push(this.latestProgress);
    this.queued = [];
    this.openFiles = null;
    this.latestProgress = null;
    this.lastFlushAt = this.now();
    this.deliver(batch);
  }

  /** Flushes what is queued and ignores later events. */
  dispose(): void {
    this.flush();
    this.disposed = true;
  }

  private schedule(): void {
    if (this.timer !== null) return;
    const wait = Math.max(0, this.lastFlushAt + this.intervalMs - this.now());
    this.timer = setTimeout(() => {
      this.timer = null;
      this.flush();
    }, wait);
  }
}
