import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { EventBatcher } from '../../../src/main/host/event-batcher';
import type { FileEntry, SluiceEvent } from '../../../src/shared/events';

const jobId = 'j1';
const start = (): SluiceEvent => ({
  type: 'start',
  jobId,
  time: Date.now(),
  kind: 'apply',
  files: 0,
  bytes: 0,
  requirements: [],
  source: '/b.hg',
});
const progress = (bytes: number): SluiceEvent => ({
  type: 'progress',
  jobId,
  time: Date.now(),
  bytes,
  files: 0,
  totalBytes: 1e9,
  totalFiles: 1e5,
  bytesPerSec: 1,
  elapsedMs: 0,
});
const files = (names: string[]): SluiceEvent => ({
  type: 'files',
  jobId,
  time: Date.now(),
  entries: names.map((name) => ({ vfs: 's', name, size: 1 })),
});
const done = (): SluiceEvent => ({
  type: 'done',
  jobId,
  time: Date.now(),
  wallMs: 1,
  userCpuMs: 0,
  systemCpuMs: 0,
  bytes: 0,
  files: 0,
});

describe('EventBatcher', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('loses no file entry and bounds the message rate under a flood of events', () => {
    const batches: SluiceEvent[][] = [];
    const deliveredAt: number[] = [];
    const batcher = new EventBatcher(
      (events) => {
        batches.push(events);
        deliveredAt.push(Date.now());
      },
      { intervalMs: 50 },
    );
    batcher.push(start());
    // 10 s of engine activity: a files event every ms (3 entries each), progress every 0.5 ms.
    const sent: string[] = [];
    for (let ms = 0; ms < 10_000; ms++) {
      const names = [`data/${ms}-a.i`, `data/${ms}-b.i`, `data/${ms}-c.d`];
      sent.push(...names);
      batcher.push(files(names));
      batcher.push(progress(ms * 2));
      batcher.push(progress(ms * 2 + 1));
      vi.advanceTimersByTime(1);
    }
    batcher.push(progress(20_000));
    batcher.push(done());

    const all = batches.flat();
    const received = all
      .filter((e) => e.type === 'files')
      .flatMap((e) => (e.type === 'files' ? e.entries.map((x: FileEntry) => x.name) : []));
    expect(received).toEqual(sent);

    // 10 s at 50 ms: at most 200 timed flushes, plus the immediate start and done flushes.
    expect(batches.length).toBeLessThanOrEqual(10_000 / 50 + 2 + 1);
    expect(batches.length).toBeGreaterThan(150);
    // No two timed flushes closer than the interval (the first and last are urgent ones).
    for (let i = 2; i < deliveredAt.length - 1; i++)
      expect(deliveredAt[i]! - deliveredAt[i - 1]!).toBeGreaterThanOrEqual(50);
    // In any 1 s window, at most ~20 messages.
    for (let t = 0; t < 10_000; t += 100) {
      expect(deliveredAt.filter((d) => d >= t && d < t + 1000).length).toBeLessThanOrEqual(21);
    }

    // Each batch carries at most one progress event, the latest, and the last progress seen is the final one.
    for (const b of batches) expect(b.filter((e) => e.type === 'progress').length).toBeLessThanOrEqual(1);
    const progresses = all.filter((e) => e.type === 'progress');
    expect(progresses.at(-1)).toMatchObject({ bytes: 20_000 });
    // done is the very last event, right after the final progress.
    expect(all.at(-1)!.type).toBe('done');
    expect(all.at(-2)).toMatchObject({ type: 'progress', bytes: 20_000 });
  });

  it('flushes start, phase, done and error at once, with what was queued before them, in order', () => {
    const batches: SluiceEvent[][] = [];
    const batcher = new EventBatcher((e) => batches.push(e), { intervalMs: 50 });
    batcher.push(start());
    expect(batches).toHaveLength(1);
    vi.advanceTimersByTime(10);
    batcher.push(files(['a']));
    batcher.push(progress(5));
    batcher.push({ type: 'log', jobId, time: Date.now(), level: 'info', message: 'hello' });
    expect(batches).toHaveLength(1);
    batcher.push({ type: 'phase', jobId, time: Date.now(), phase: 'finalize' });
    expect(batches).toHaveLength(2);
    expect(batches[1]!.map((e) => e.type)).toEqual(['files', 'log', 'progress', 'phase']);
    batcher.push({ type: 'error', jobId, time: Date.now(), code: 'IO', message: 'disk full' });
    expect(batches).toHaveLength(3);
    expect(batches[2]!.map((e) => e.type)).toEqual(['error']);
  });

  it('flushes a retry wait at once (the UI counts it down), after the progress before it', () => {
    const batches: SluiceEvent[][] = [];
    const batcher = new EventBatcher((e) => batches.push(e), { intervalMs: 50 });
    batcher.push(start());
    vi.advanceTimersByTime(10);
    batcher.push(progress(7));
    batcher.push({
      type: 'retry',
      jobId,
      time: Date.now(),
      attempt: 1,
      maxAttempts: 8,
      waitMs: 500,
      reason: 'the connection closed before the response was complete',
      bytes: 7,
      totalBytes: 100,
    });
    expect(batches).toHaveLength(2);
    expect(batches[1]!.map((e) => e.type)).toEqual(['progress', 'retry']);
  });

  it('delivers a lone event after at most one interval, and then promptly after idle time', () => {
    const batches: SluiceEvent[][] = [];
    const batcher = new EventBatcher((e) => batches.push(e), { intervalMs: 50 });
    batcher.push(start()); // flushed at t=0
    batcher.push(progress(1));
    vi.advanceTimersByTime(49);
    expect(batches).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(batches).toHaveLength(2);
    vi.advanceTimersByTime(1000);
    batcher.push(progress(2)); // idle for long: no reason to wait
    vi.advanceTimersByTime(0);
    expect(batches).toHaveLength(3);
  });

  it('does not share the entries array of the events it was given', () => {
    const batches: SluiceEvent[][] = [];
    const batcher = new EventBatcher((e) => batches.push(e), { intervalMs: 50 });
    const first = files(['a']);
    batcher.push(first);
    batcher.push(files(['b']));
    batcher.flush();
    expect(first.type === 'files' && first.entries.map((e) => e.name)).toEqual(['a']);
    expect(
      batches[0]![0]!.type === 'files' &&
        (batches[0]![0] as { entries: FileEntry[] }).entries.map((e) => e.name),
    ).toEqual(['a', 'b']);
  });

  it('touch() delivers within the interval with nothing queued (a log chunk rides along), once', () => {
    const batches: SluiceEvent[][] = [];
    const batcher = new EventBatcher((e) => batches.push(e), { intervalMs: 50 });
    batcher.push(start()); // flushed at t=0
    batcher.touch();
    batcher.touch();
    vi.advanceTimersByTime(49);
    expect(batches).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(batches).toEqual([[expect.objectContaining({ type: 'start' })], []]);
    vi.advanceTimersByTime(1000);
    expect(batches).toHaveLength(2);
    batcher.flush(); // nothing queued, not touched: nothing delivered
    expect(batches).toHaveLength(2);
  });

  it('dispose flushes and then ignores events', () => {
    const batches: SluiceEvent[][] = [];
    const batcher = new EventBatcher((e) => batches.push(e), { intervalMs: 50 });
    batcher.push(progress(1));
    batcher.dispose();
    expect(batches).toHaveLength(1);
    batcher.push(progress(2));
    vi.advanceTimersByTime(1000);
    expect(batches).toHaveLength(1);
  });
});
