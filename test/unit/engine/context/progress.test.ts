import { describe, expect, it } from 'vitest';
import type { SluiceEvent } from '../../../../src/shared/events';
import { JobContext } from '../../../../src/main/engine/context/job-context';
import { ProgressTracker } from '../../../../src/main/engine/context/progress';

function setup(opts: { fileEvents?: boolean } = {}) {
  const events: SluiceEvent[] = [];
  const ctx = new JobContext({ sink: (e) => events.push(e), fileEvents: opts.fileEvents ?? false });
  let t = 1000;
  const clock = { now: () => t, advance: (ms: number) => (t += ms) };
  return { events, ctx, clock };
}

const progress = (events: SluiceEvent[]) =>
  events.filter((e) => e.type === 'progress') as Extract<SluiceEvent, { type: 'progress' }>[];

describe('ProgressTracker', () => {
  it('throttles progress to ~10 events per second however often it is fed', () => {
    const { events, ctx, clock } = setup();
    const p = new ProgressTracker(ctx, { bytes: 10_000_000, files: 10_000 }, clock.now);
    for (let i = 0; i < 10_000; i++) {
      clock.advance(0.3); // 10k files in 3 s
      p.addBytes(1000);
      p.fileDone('s', `data/f${i}.i`, 1000);
    }
    const n = progress(events).length;
    expect(n).toBeGreaterThanOrEqual(29);
    expect(n).toBeLessThanOrEqual(31);
  });

  it('reports a moving-window rate and an ETA from it', () => {
    const { events, ctx, clock } = setup();
    const p = new ProgressTracker(ctx, { bytes: 100_000_000, files: 100 }, clock.now);
    // 3 s at 10 MB/s, then 3 s at 1 MB/s: the 2 s window follows the slowdown
    for (let i = 0; i < 300; i++) {
      clock.advance(10);
      p.addBytes(100_000);
    }
    const fast = progress(events).at(-1)!;
    expect(fast.bytesPerSec).toBeGreaterThan(9_000_000);
    expect(fast.bytesPerSec).toBeLessThan(11_000_000);
    expect(fast.etaMs).toBeGreaterThan(6000);
    expect(fast.etaMs).toBeLessThan(8000);
    for (let i = 0; i < 300; i++) {
      clock.advance(10);
      p.addBytes(10_000);
    }
    const slow = progress(events).at(-1)!;
    expect(slow.bytesPerSec).toBeGreaterThan(900_000);
    expect(slow.bytesPerSec).toBeLessThan(1_200_000);
    expect(slow.bytes).toBe(33_000_000);
    expect(slow.elapsedMs).toBeGreaterThanOrEqual(5900);
    // ETA = (total - done) / rate ≈ 67 MB / 1 MB/s
    expect(slow.etaMs! / 1000).toBeGreaterThan(55);
    expect(slow.etaMs! / 1000).toBeLessThan(75);
  });

  it('has no ETA before any rate is known', () => {
    const { events, ctx, clock } = setup();
    const p = new ProgressTracker(ctx, { bytes: 100, files: 1 }, clock.now);
    clock.advance(200);
    p.fileDone('s', 'data/empty.i', 0);
    expect(progress(events)[0]!.etaMs).toBeUndefined();
  });

  it('batches file entries (never one event per file) and decodes names for display', () => {
    const { events, ctx, clock } = setup({ fileEvents: true });
    const p = new ProgressTracker(ctx, { bytes: 0, files: 5000 }, clock.now);
    const utf8Name = Buffer.from('data/café.txt.i', 'utf8').toString('latin1'); // engine names are bytes
    for (let i = 0; i < 5000; i++) p.fileDone('s', i === 0 ? utf8Name : `data/f${i}.i`, 1);
    p.finish();
    const files = events.filter((e) => e.type === 'files') as Extract<SluiceEvent, { type: 'files' }>[];
    expect(files.map((e) => e.entries.length)).toEqual([2000, 2000, 1000]);
    expect(files[0]!.entries[0]).toEqual({ vfs: 's', name: 'data/café.txt.i', size: 1 });
  });

  it('finish emits a final event at 100 % with ETA 0, after the last file entries', () => {
    const { events, ctx, clock } = setup({ fileEvents: true });
    const p = new ProgressTracker(ctx, { bytes: 300, files: 3 }, clock.now);
    for (let i = 0; i < 3; i++) {
      p.addBytes(100);
      p.fileDone('c', `cache${i}`, 100);
    }
    p.finish();
    expect(events.at(-2)).toMatchObject({ type: 'files' });
    expect(events.at(-1)).toMatchObject({
      type: 'progress',
      bytes: 300,
      totalBytes: 300,
      files: 3,
      totalFiles: 3,
      etaMs: 0,
    });
  });

  it('never reports more done than total (a stream that announced too little)', () => {
    const { events, ctx, clock } = setup();
    const p = new ProgressTracker(ctx, { bytes: 100, files: 1 }, clock.now);
    p.addBytes(150);
    p.fileDone('s', 'data/a.i', 150);
    p.finish();
    expect(progress(events).at(-1)).toMatchObject({ bytes: 150, totalBytes: 150 });
  });
});
