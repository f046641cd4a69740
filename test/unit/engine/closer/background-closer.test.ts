import { closeSync, fstatSync, openSync, mkdtempSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SluiceError } from '../../../../src/main/engine/errors';
import {
  ADAPT_SAMPLE,
  BackgroundCloser,
  planCloser,
  threadpoolSizeFor,
  type CloseImpl,
} from '../../../../src/main/engine/closer/background-closer';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-closer-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function openFiles(n: number): number[] {
  const fds: number[] = [];
  for (let i = 0; i < n; i++) {
    const fd = openSync(join(dir, `f${fds.length}-${i}`), 'w');
    writeSync(fd, 'x');
    fds.push(fd);
  }
  return fds;
}

function isOpen(fd: number): boolean {
  try {
    fstatSync(fd);
    return true;
  } catch {
    return false;
  }
}

/** A close that takes `ms` of latency before really closing (NTFS + antivirus in miniature). */
function slowClose(ms: number, log?: { active: number; maxActive: number }): CloseImpl {
  return (fd, cb) => {
    if (log) log.maxActive = Math.max(log.maxActive, ++log.active);
    setTimeout(() => {
      if (log) log.active--;
      try {
        closeSync(fd);
        cb(null);
      } catch (e) {
        cb(e as NodeJS.ErrnoException);
      }
    }, ms);
  };
}

/** The writer's loop: hand every fd to the closer, awaiting only when it asks to. */
async function writeAll(closer: BackgroundCloser, fds: number[]): Promise<void> {
  for (const fd of fds) {
    const wait = closer.close(fd);
    if (wait) await wait;
  }
}

describe('planCloser', () => {
  it('auto is on for Windows, adaptive (starting synchronous) elsewhere', () => {
    expect(planCloser({ backgroundClose: 'auto' }, 5000, 'win32', 40)).toMatchObject({ background: true });
    expect(planCloser({ backgroundClose: 'auto' }, 5000, 'linux', 40)).toMatchObject({
      background: false,
      adaptive: true,
    });
    expect(planCloser({ backgroundClose: 'auto' }, 5000, 'darwin', 40)).toMatchObject({
      background: false,
      adaptive: true,
    });
    expect(planCloser({ backgroundClose: 'auto' }, 100, 'linux', 40)).toEqual({
      background: false,
      threads: 0,
      maxQueue: 384,
    });
    expect(planCloser({ backgroundClose: 'on' }, 5000, 'linux', 40).adaptive).toBeUndefined();
  });
  it('on/off override the platform; a known count below minFileCount stays synchronous', () => {
    expect(planCloser({ backgroundClose: 'on' }, 5000, 'linux', 40).background).toBe(true);
    expect(planCloser({ backgroundClose: 'off' }, 5000, 'win32', 40).background).toBe(false);
    expect(planCloser({ backgroundClose: 'on', minFileCount: 2048 }, 2047, 'linux', 40).background).toBe(
      false,
    );
    expect(planCloser({ backgroundClose: 'on', minFileCount: 2048 }, 2048, 'linux', 40).background).toBe(
      true,
    );
    // unknown count (0): like hg's expectedcount=-1, the threshold does not apply
    expect(planCloser({ backgroundClose: 'on', minFileCount: 2048 }, 0, 'linux', 40).background).toBe(true);
  });
  it('never plans more closes in flight than the threadpool can run next to the reads', () => {
    expect(planCloser({ backgroundClose: 'on', closeThreads: 64 }, 0, 'linux', 4).threads).toBe(2);
    expect(planCloser({ backgroundClose: 'on', closeThreads: 8 }, 0, 'linux', 64).threads).toBe(8);
    expect(threadpoolSizeFor(32)).toBe(34);
    expect(threadpoolSizeFor(1)).toBe(4);
  });
  it('gates a plan for fewer threads than the pool runs (else the pool would close more at once)', () => {
    expect(planCloser({ backgroundClose: 'on', closeThreads: 48 }, 0, 'linux', 50).gated).toBeUndefined();
    expect(planCloser({ backgroundClose: 'on', closeThreads: 4 }, 0, 'linux', 50)).toMatchObject({
      threads: 4,
      gated: true,
    });
    expect(planCloser({ backgroundClose: 'auto', closeThreads: 4 }, 5000, 'linux', 50)).toMatchObject({
      adaptive: true,
      gated: true,
    });
  });
  it('ignores undefined fields (partial options from a request)', () => {
    const plan = planCloser({ backgroundClose: 'on', closeThreads: undefined, maxQueue: 7 }, 0, 'linux', 64);
    expect(plan.threads).toBeGreaterThan(0);
    expect(plan.maxQueue).toBe(7);
  });
});

describe('BackgroundCloser', () => {
  /** A synchronous close that takes `ms` (busy wait: the writer really pays it). */
  const slowCloseSync = (ms: number) => (fd: number) => {
    const end = performance.now() + ms;
    while (performance.now() < end);
    closeSync(fd);
  };

  it('adaptive: switches to background closing when the first closes are slow', async () => {
    let background = 0;
    const counting: CloseImpl = (fd, cb) => (background++, closeSync(fd), setImmediate(() => cb(null)));
    const closer = new BackgroundCloser(
      { background: false, threads: 4, maxQueue: 8, adaptive: true },
      counting,
      slowCloseSync(0.3),
    );
    const fds = openFiles(ADAPT_SAMPLE + 50);
    await writeAll(closer, fds);
    const stats = await closer.drain();
    expect(stats).toMatchObject({
      background: true,
      threads: 4,
      syncClosed: ADAPT_SAMPLE,
      backgroundClosed: 50,
    });
    expect(background).toBe(50);
  });

  it('adaptive: stays synchronous when closes are fast', async () => {
    const never: CloseImpl = () => {
      throw new Error('must not close in the background');
    };
    const closer = new BackgroundCloser(
      { background: false, threads: 4, maxQueue: 8, adaptive: true },
      never,
    );
    await writeAll(closer, openFiles(ADAPT_SAMPLE + 50));
    expect(await closer.drain()).toMatchObject({
      background: false,
      threads: 0,
      syncClosed: ADAPT_SAMPLE + 50,
    });
  });

  it('off: closes synchronously on the writer and counts it', async () => {
    const closer = new BackgroundCloser({ background: false, threads: 0, maxQueue: 10 });
    const fds = openFiles(20);
    await writeAll(closer, fds);
    expect(fds.every((fd) => !isOpen(fd))).toBe(true);
    const stats = await closer.drain();
    expect(stats).toMatchObject({ background: false, threads: 0, backgroundClosed: 0, syncClosed: 20 });
  });

  it('on: hides close latency behind the writer (40 closes of 20 ms overlap, 24 at once)', async () => {
    const n = 40;
    const latency = 20;
    const log = { active: 0, maxActive: 0 };
    const closer = new BackgroundCloser(
      { background: true, threads: 8, maxQueue: 16 },
      slowClose(latency, log),
    );
    const fds = openFiles(n);
    await writeAll(closer, fds);
    const stats = await closer.drain();
    // 8 threads + 16 queued closes in flight at once: the writer never waited for one (serial
    // closing would show 1). Asserted by overlap, not by elapsed time, which measures the machine.
    expect(log.maxActive).toBe(24);
    expect(stats).toMatchObject({ background: true, threads: 8, backgroundClosed: n, syncClosed: 0 });
    expect(fds.every((fd) => !isOpen(fd))).toBe(true);
  });

  it('gated: never more than `threads` in the close implementation, the rest queued, none lost', async () => {
    const n = 40;
    const log = { active: 0, maxActive: 0 };
    let closed = 0;
    const inner = slowClose(10, log);
    const counting: CloseImpl = (fd, cb) => inner(fd, (err) => (closed++, cb(err)));
    const closer = new BackgroundCloser(
      { background: true, threads: 4, maxQueue: 16, gated: true },
      counting,
    );
    const fds = openFiles(n);
    let maxOutstanding = 0;
    for (const [i, fd] of fds.entries()) {
      const wait = closer.close(fd);
      maxOutstanding = Math.max(maxOutstanding, i + 1 - closed);
      if (wait) await wait;
    }
    const stats = await closer.drain();
    expect(log.maxActive).toBe(4);
    // 4 closing and up to 16 waiting in the gate's queue (plus the one the writer waits to hand over)
    expect(maxOutstanding).toBe(4 + 16 + 1);
    expect(stats).toMatchObject({ background: true, threads: 4, backgroundClosed: n });
    expect(fds.every((fd) => !isOpen(fd))).toBe(true);
  });

  it('simulated slow close: a synchronous closer closes on the writer, a background one hands every close to its threads', async () => {
    const n = 40;
    const delay = 10;
    const off = new BackgroundCloser(
      planCloser({ backgroundClose: 'off', simulateCloseMs: delay }, n, 'linux', 50),
    );
    const offFds = openFiles(n);
    // synchronous: each fd is closed (after its simulated delay) before close() returns
    const openAfterReturn = offFds.filter((fd) => (void off.close(fd), isOpen(fd)));
    expect(openAfterReturn).toEqual([]);
    const offStats = await off.drain();
    expect(offStats).toMatchObject({ background: false, syncClosed: n, backgroundClosed: 0 });
    expect(offStats.writerWaitMs).toBeGreaterThan(0);

    const plan = planCloser(
      { backgroundClose: 'on', closeThreads: 8, minFileCount: 1, simulateCloseMs: delay },
      n,
      'linux',
      50,
    );
    expect(plan).toMatchObject({ background: true, threads: 8, gated: true });
    const log = { active: 0, maxActive: 0 };
    // the closer runs each close after its simulated delay; a delay of 0 here keeps the count exact
    const on = new BackgroundCloser(plan, slowClose(0, log));
    const onFds = openFiles(n);
    let waits = 0;
    for (const fd of onFds) {
      const wait = on.close(fd);
      if (wait) {
        waits++;
        await wait;
      }
    }
    // the writer handed all 40 over without waiting for one, and none was closed on its thread
    expect(waits).toBe(0);
    expect(onFds.filter(isOpen)).toEqual(onFds);
    const onStats = await on.drain();
    expect(onStats).toMatchObject({ background: true, threads: 8, backgroundClosed: n, syncClosed: 0 });
    // the gate let at most 8 delayed closes run at once
    expect(log.maxActive).toBe(8);
    expect([...offFds, ...onFds].every((fd) => !isOpen(fd))).toBe(true);
  });

  it('with one thread and a queue of one, the writer waits for nearly every close (control)', async () => {
    const n = 10;
    const log = { active: 0, maxActive: 0 };
    const closer = new BackgroundCloser({ background: true, threads: 1, maxQueue: 1 }, slowClose(20, log));
    const fds = openFiles(n);
    let waits = 0;
    for (const fd of fds) {
      const wait = closer.close(fd);
      if (wait) {
        waits++;
        await wait;
      }
    }
    const stats = await closer.drain();
    // two outstanding at a time: every close after the first two waits for one to finish
    expect(waits).toBe(n - 2);
    expect(log.maxActive).toBe(2);
    expect(stats).toMatchObject({ background: true, backgroundClosed: n });
    expect(stats.writerWaitMs).toBeGreaterThan(0);
  });

  it('bounds the outstanding fds: the writer waits when threads + maxQueue are not closed yet', async () => {
    const log = { active: 0, maxActive: 0 };
    let closed = 0;
    const inner = slowClose(5, log);
    const counting: CloseImpl = (fd, cb) => inner(fd, (err) => (closed++, cb(err)));
    const closer = new BackgroundCloser({ background: true, threads: 2, maxQueue: 3 }, counting);
    let waited = 0;
    let maxOpen = 0;
    for (let i = 0; i < 12; i++) {
      const wait = closer.close(openFiles(1)[0]!);
      maxOpen = Math.max(maxOpen, i + 1 - closed);
      if (wait) {
        waited++;
        await wait;
      }
    }
    await closer.drain();
    expect(closed).toBe(12);
    expect(waited).toBeGreaterThan(0);
    // at most 2 (threads) + 3 (queue) closing, plus the one the writer waits to hand over
    // (hg: the file blocked in Queue.put)
    expect(maxOpen).toBe(6);
    expect(log.maxActive).toBe(5);
  });

  it('a failed close fails the next close() call, and still closes the fd it was given', async () => {
    let calls = 0;
    let secondDone!: () => void;
    const secondReported = new Promise<void>((r) => (secondDone = r));
    const failing: CloseImpl = (fd, cb) => {
      const call = ++calls;
      closeSync(fd);
      setImmediate(() => {
        cb(call === 2 ? Object.assign(new Error('EIO: i/o error, close'), { code: 'EIO' }) : null);
        if (call === 2) secondDone();
      });
    };
    const closer = new BackgroundCloser({ background: true, threads: 1, maxQueue: 4 }, failing);
    const fds = openFiles(5);
    void closer.close(fds[0]!); // a queue of 4: neither asks to wait
    void closer.close(fds[1]!);
    await secondReported;
    let thrown: unknown;
    try {
      void closer.close(fds[2]!);
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(SluiceError);
    expect((thrown as SluiceError).code).toBe('CLOSE_FAILED');
    expect((thrown as SluiceError).message).toContain('EIO');
    expect(isOpen(fds[2]!)).toBe(false);
    // drain reports it too (the error is not consumed by the first throw, unlike hg)
    await expect(closer.drain()).rejects.toMatchObject({ code: 'CLOSE_FAILED' });
    closeSync(fds[3]!);
    closeSync(fds[4]!);
  });

  it('an error raised after the last enqueue surfaces at drain (hg drops it)', async () => {
    const failing: CloseImpl = (fd, cb) => {
      closeSync(fd);
      setTimeout(
        () => cb(Object.assign(new Error('ENOSPC: no space left on device, close'), { code: 'ENOSPC' })),
        5,
      );
    };
    const closer = new BackgroundCloser({ background: true, threads: 4, maxQueue: 4 }, failing);
    await writeAll(closer, openFiles(3));
    await expect(closer.drain()).rejects.toMatchObject({
      code: 'CLOSE_FAILED',
      details: { errno: 'ENOSPC' },
    });
  });

  it('drain closes every queued fd even after a failure (no fd outlives the job)', async () => {
    let first = true;
    const failOnce: CloseImpl = (fd, cb) => {
      setTimeout(() => {
        closeSync(fd);
        const fail = first;
        first = false;
        cb(fail ? Object.assign(new Error('EIO'), { code: 'EIO' }) : null);
      }, 2);
    };
    const closer = new BackgroundCloser({ background: true, threads: 2, maxQueue: 50 }, failOnce);
    const fds = openFiles(30);
    for (const fd of fds) void closer.close(fd); // queue of 50: never asks to wait
    await expect(closer.drain()).rejects.toMatchObject({ code: 'CLOSE_FAILED' });
    expect(fds.filter(isOpen)).toEqual([]);
  });

  it('a writer blocked on a full queue is released by a failure and then sees it', async () => {
    const failing: CloseImpl = (fd, cb) => {
      setTimeout(() => {
        closeSync(fd);
        cb(Object.assign(new Error('EIO'), { code: 'EIO' }));
      }, 5);
    };
    const closer = new BackgroundCloser({ background: true, threads: 1, maxQueue: 1 }, failing);
    const fds = openFiles(4);
    const handed: number[] = [];
    const writer = async () => {
      for (const fd of fds) {
        handed.push(fd);
        const wait = closer.close(fd);
        if (wait) await wait;
      }
    };
    await expect(writer()).rejects.toMatchObject({ code: 'CLOSE_FAILED' });
    await expect(closer.drain()).rejects.toMatchObject({ code: 'CLOSE_FAILED' });
    // every fd handed over is closed, including the one whose close() threw
    expect(handed.length).toBeLessThan(fds.length);
    expect(handed.filter(isOpen)).toEqual([]);
    for (const fd of fds.filter(isOpen)) closeSync(fd);
  });

  it('real fs.close on the threadpool closes everything', async () => {
    const closer = new BackgroundCloser({ background: true, threads: 2, maxQueue: 8 });
    const fds = openFiles(100);
    await writeAll(closer, fds);
    const stats = await closer.drain();
    expect(stats.backgroundClosed).toBe(100);
    expect(fds.filter(isOpen)).toEqual([]);
  });
});
