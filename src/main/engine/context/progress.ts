// ProgressTracker: turns the apply loop's per-chunk and per-file counts into at most ~10 progress
// events per second (moving-window rate and ETA) and batched `files` events. The hot loop only
// adds numbers; time is looked at once per call and events are built only when one is due.
// hg's ui.makeprogress is the model (progress.increment per chunk), minus its per-call rendering.

import { performance } from 'node:perf_hooks';
import type { FileEntry, VfsKey } from '../../../shared/events';
import type { JobContext } from './job-context';
import { displayPath } from '../working-copy/path-auditor';

/** Rate window: long enough to smooth per-file jitter, short enough to follow a stall. */
const RATE_WINDOW_MS = 2000;
/** A files event never carries more entries than this (bounded message size for IPC). */
const MAX_FILES_PER_EVENT = 2000;

export interface ProgressTotals {
  bytes: number;
  files: number;
}

export class ProgressTracker {
  bytes = 0;
  files = 0;
  private totalBytes: number;
  private totalFiles: number;
  private readonly startedAt: number;
  private nextEmitAt: number;
  /** (time, bytes) at each emitted event, oldest first, for the moving-window rate */
  private samples: { t: number; bytes: number }[] = [];
  private pendingFiles: FileEntry[] = [];
  private lastEmittedBytes = -1;
  private lastEmittedFiles = -1;

  constructor(
    private readonly ctx: JobContext,
    totals: ProgressTotals,
    /** ms clock (tests inject a fake one) */
    private readonly now: () => number = () => performance.now(),
  ) {
    this.startedAt = this.now();
    this.totalBytes = totals.bytes;
    this.totalFiles = totals.files;
    this.nextEmitAt = this.startedAt + ctx.progressIntervalMs;
    this.samples.push({ t: this.startedAt, bytes: 0 });
  }

  /** Totals can arrive late (a header read after the job started). */
  setTotals(totals: ProgressTotals): void {
    this.totalBytes = totals.bytes;
    this.totalFiles = totals.files;
  }

  addBytes(n: number): void {
    this.bytes += n;
    const now = this.now();
    if (now >= this.nextEmitAt) this.emit(now);
  }

  /** One entry finished. `name` is the engine's latin1 byte string; decoded only if file events are on. */
  fileDone(vfs: VfsKey, name: string, size: number): void {
    this.files++;
    if (this.ctx.fileEvents) {
      this.pendingFiles.push({ vfs, name: displayPath(name), size });
      if (this.pendingFiles.length >= MAX_FILES_PER_EVENT) this.flushFiles();
    }
    const now = this.now();
    if (now >= this.nextEmitAt) this.emit(now);
  }

  /** Absolute counts from a producer that reports totals (bundle generation). */
  update(files: number, bytes: number): void {
    this.files = files;
    this.bytes = bytes;
    const now = this.now();
    if (now >= this.nextEmitAt) this.emit(now);
  }

  /** The final event: remaining file entries, then progress at 100 % of what was done. */
  finish(): void {
    this.flushFiles();
    if (this.totalBytes < this.bytes) this.totalBytes = this.bytes;
    if (this.totalFiles < this.files) this.totalFiles = this.files;
    this.emitProgress(this.now(), true);
  }

  /** Emits pending file entries and a progress event now if anything changed (before phase changes). */
  flush(): void {
    this.flushFiles();
    if (this.bytes !== this.lastEmittedBytes || this.files !== this.lastEmittedFiles)
      this.emitProgress(this.now(), false);
  }

  private emit(now: number): void {
    this.flushFiles();
    this.emitProgress(now, false);
  }

  private flushFiles(): void {
    if (this.pendingFiles.length === 0) return;
    const entries = this.pendingFiles;
    this.pendingFiles = [];
    this.ctx.emit({ type: 'files', entries });
  }

  private emitProgress(now: number, final: boolean): void {
    this.nextEmitAt = now + this.ctx.progressIntervalMs;
    this.samples.push({ t: now, bytes: this.bytes });
    while (this.samples.length > 2 && this.samples[1]!.t <= now - RATE_WINDOW_MS) this.samples.shift();
    const oldest = this.samples[0]!;
    const dt = now - oldest.t;
    const bytesPerSec = dt > 0 ? ((this.bytes - oldest.bytes) * 1000) / dt : 0;
    const left = Math.max(0, this.totalBytes - this.bytes);
    let etaMs: number | undefined;
    if (final) etaMs = 0;
    else if (bytesPerSec > 0) etaMs = Math.round((left * 1000) / bytesPerSec);
    this.lastEmittedBytes = this.bytes;
    this.lastEmittedFiles = this.files;
    this.ctx.emit({
      type: 'progress',
      bytes: this.bytes,
      files: this.files,
      totalBytes: this.totalBytes,
      totalFiles: this.totalFiles,
      bytesPerSec: Math.round(bytesPerSec),
      elapsedMs: Math.round(now - this.startedAt),
      ...(etaMs !== undefined ? { etaMs } : {}),
    });
  }
}
