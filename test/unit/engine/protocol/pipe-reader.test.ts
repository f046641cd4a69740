import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { PipeReader } from '../../../../src/main/engine/protocol/pipe-reader';

/** Writes `total` bytes (piece i filled with i & 0xff) into `src` in 64 KiB pieces, as a pipe delivers them, with backpressure. */
function feed(src: PassThrough, total: number): { sent: number } {
  const piece = 64 << 10;
  const state = { sent: 0 };
  const pump = (): void => {
    while (state.sent < total) {
      const b = Buffer.alloc(Math.min(piece, total - state.sent), (state.sent / piece) & 0xff);
      state.sent += b.length;
      if (!src.write(b)) return void src.once('drain', pump);
    }
  };
  pump();
  return state;
}

describe('PipeReader', () => {
  it('reads an exact count larger than what it buffers before pausing the pipe (a 12 MiB framed reply or argument)', async () => {
    const src = new PassThrough({ highWaterMark: 64 << 10 });
    const r = new PipeReader(src, { idleTimeoutMs: 2000 });
    feed(src, (12 << 20) + 5);
    const b = await r.readExact(12 << 20);
    expect(b.length).toBe(12 << 20);
    expect(b[0]).toBe(0);
    expect(b[(12 << 20) - 1]).toBe(((12 << 20) / (64 << 10) - 1) & 0xff);
    expect((await r.readExact(5)).length).toBe(5);
  });

  it('without a read waiting, pauses the pipe after a few MiB (backpressure, not the whole stream in memory)', async () => {
    const src = new PassThrough({ highWaterMark: 64 << 10 });
    const r = new PipeReader(src);
    const fed = feed(src, 64 << 20);
    await new Promise((res) => setTimeout(res, 200));
    expect(r.consumed).toBe(0);
    expect(src.isPaused()).toBe(true);
    // the reader's 4 MiB and a piece, plus what the PassThrough itself holds
    expect(fed.sent).toBeLessThan(6 << 20);
    // and reading on resumes it, in bounded pieces
    let got = 0;
    while (got < 64 << 20) got += (await r.readSome(1 << 20))!.length;
    expect(got).toBe(64 << 20);
  });
});
