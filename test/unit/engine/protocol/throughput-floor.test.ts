import { PassThrough, Writable } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SluiceError } from '../../../../src/main/engine/errors';
import { PipeReader } from '../../../../src/main/engine/protocol/pipe-reader';
import {
  FLOOR_BYTES,
  FLOOR_WINDOW_IDLES,
  ReaderFloor,
  ThroughputFloor,
} from '../../../../src/main/engine/protocol/throughput-floor';

const IDLE = 1000;
const WINDOW = IDLE * FLOOR_WINDOW_IDLES;

describe('ThroughputFloor', () => {
  afterEach(() => void vi.useRealTimers());

  const floor = (): ThroughputFloor => new ThroughputFloor((b, ms) => `${b} bytes in ${ms} ms`);

  it('a byte now and then, each wait below the idle timeout: TIMEOUT once the waits fill a window', () => {
    vi.useFakeTimers();
    const f = floor();
    let err: SluiceError | null = null;
    let waits = 0;
    while (!err && waits < 100) {
      f.waiting();
      vi.advanceTimersByTime(IDLE - 1);
      err = f.arrived(1, IDLE);
      waits++;
    }
    expect(waits).toBe(Math.ceil(WINDOW / (IDLE - 1)));
    expect(err?.code).toBe('TIMEOUT');
    expect(err?.details).toMatchObject({ trickle: true, bytes: waits });
  });

  it('the floor per window arriving: never a TIMEOUT, however long it goes on', () => {
    vi.useFakeTimers();
    const f = floor();
    for (let i = 0; i < 1000; i++) {
      f.waiting();
      vi.advanceTimersByTime(IDLE - 1);
      expect(f.arrived(Math.ceil(FLOOR_BYTES / FLOOR_WINDOW_IDLES) + 1, IDLE)).toBeNull();
    }
  });

  it('time the reader does not wait (its own work, backpressure) does not count', () => {
    vi.useFakeTimers();
    const f = floor();
    for (let i = 0; i < 100; i++) {
      f.waiting();
      vi.advanceTimersByTime(1);
      expect(f.arrived(1, IDLE)).toBeNull();
      vi.advanceTimersByTime(IDLE); // busy: not waiting
    }
  });

  it('an idle timeout of 0 (none) has no floor either', () => {
    vi.useFakeTimers();
    const f = floor();
    f.waiting();
    vi.advanceTimersByTime(10 * WINDOW);
    expect(f.arrived(1, 0)).toBeNull();
  });
});

describe('PipeReader: the floor on a pipe (ssh)', () => {
  it('a peer trickling a byte every 10 ms (idle timeout 50 ms) fails the read with TIMEOUT', async () => {
    const src = new PassThrough();
    const reader = new PipeReader(src, { idleTimeoutMs: 50 });
    const timer = setInterval(() => src.write('x'), 10);
    const err = await reader.readExact(10_000).catch((e: unknown) => e);
    clearInterval(timer);
    expect((err as SluiceError).code).toBe('TIMEOUT');
    expect((err as Error).message).toMatch(/sent only \d+ bytes in \d+ s of waiting/);
  });

  it('a reader busy for many windows with the data already there is not failed', async () => {
    const src = new PassThrough();
    const reader = new PipeReader(src, { idleTimeoutMs: 20 });
    src.write('a\n');
    expect((await reader.readLine(10)).toString()).toBe('a\n');
    for (let i = 0; i < 5; i++) {
      src.write('b');
      await new Promise((r) => setTimeout(r, 40)); // busy: more than a window in all
    }
    expect((await reader.readExact(5)).toString()).toBe('bbbbb');
  });

  it('newReply() starts a new window: small replies over a long session do not add up', async () => {
    const src = new PassThrough();
    const reader = new PipeReader(src, { idleTimeoutMs: 50 });
    for (let i = 0; i < 12; i++) {
      reader.newReply();
      setTimeout(() => src.write('r'), 30); // each reply a wait of 30 ms: 360 ms in all
      expect((await reader.readExact(1)).toString()).toBe('r');
    }
  });
});

describe('ReaderFloor: the server waiting on a client that reads its reply', () => {
  afterEach(() => void vi.useRealTimers());

  /** A client taking `step` bytes every `everyMs` (step 0: takes nothing), behind a 1 KiB buffer. */
  function client(step: number, everyMs: number): { out: Writable; stop: () => void } {
    let credit = 0;
    let pending: { n: number; cb: () => void } | null = null;
    const timer = setInterval(() => {
      credit += step;
      if (pending && credit >= pending.n) {
        credit -= pending.n;
        const { cb } = pending;
        pending = null;
        cb();
      }
    }, everyMs);
    const out = new Writable({
      highWaterMark: 1024,
      write(chunk: Buffer, _enc, cb) {
        if (credit >= chunk.length) {
          credit -= chunk.length;
          setImmediate(cb);
        } else pending = { n: chunk.length, cb };
      },
    });
    return { out, stop: () => clearInterval(timer) };
  }

  /** Writes `total` bytes in 512-byte writes through a ReaderFloor; the error that ended it, or null. */
  async function reply(out: Writable, idleMs: number, total: number): Promise<Error | null> {
    const floor = new ReaderFloor(out, idleMs);
    let written = 0;
    try {
      while (written < total) {
        written += 512;
        if (!out.write(Buffer.alloc(512))) await floor.drained(written);
      }
      return null;
    } catch (e) {
      return e as Error;
    }
  }

  it('a client taking 512 bytes every 20 ms (never idle for 200 ms, 5 KiB per idle timeout): TIMEOUT, reading too slowly', async () => {
    const c = client(512, 20);
    const err = await reply(c.out, 200, 1 << 20);
    c.stop();
    expect(err).toBeInstanceOf(SluiceError);
    expect((err as SluiceError).code).toBe('TIMEOUT');
    expect(err!.message).toMatch(
      /^the client read only \d+ bytes of the reply in 0\.\d s of waiting \(reading too slowly\)$/,
    );
    expect((err as SluiceError).details!.bytes).toBeLessThan(FLOOR_BYTES);
  });

  it('a client taking nothing: TIMEOUT after the idle timeout', async () => {
    const c = client(0, 10);
    const err = await reply(c.out, 200, 1 << 20);
    c.stop();
    expect((err as SluiceError).code).toBe('TIMEOUT');
    expect(err!.message).toBe('the client read nothing of the reply for 200 ms');
  });

  it('a client taking the floor and more per idle timeout gets the whole reply', async () => {
    const c = client(64 << 10, 20); // 3.2 MB/s
    expect(await reply(c.out, 200, 1 << 20)).toBeNull();
    c.stop();
  });

  it("a late look (the server's own event loop held up) is not counted as the client's idleness", async () => {
    vi.useFakeTimers();
    const takes: (() => void)[] = [];
    const out = new Writable({ highWaterMark: 1024, write: (_c, _e, cb) => void takes.push(cb) });
    const outcome = (p: Promise<void>) =>
      p.then(
        () => 'drained',
        (e: Error) => e.message,
      );
    const floor = new ReaderFloor(out, 200);
    out.write(Buffer.alloc(2048));
    const first = outcome(floor.drained(2048));
    vi.setSystemTime(Date.now() + 1000); // a second passes with no timer run: the server stalled
    await vi.advanceTimersByTimeAsync(60); // the late look, then one on time
    takes.shift()!(); // the client takes the write
    await vi.advanceTimersByTimeAsync(1);
    expect(await first).toBe('drained');
    // a client that then really takes nothing is still timed out
    out.write(Buffer.alloc(2048));
    const second = outcome(floor.drained(4096));
    await vi.advanceTimersByTimeAsync(250);
    expect(await second).toMatch(/^the client read (nothing|only \d+ bytes) of the reply/);
  });

  it('an idle timeout of 0 waits for the slowest client', async () => {
    const c = client(512, 20);
    expect(await reply(c.out, 0, 8 << 10)).toBeNull();
    c.stop();
  });
});
