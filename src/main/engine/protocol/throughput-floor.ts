// The client's guard against a server that trickles: the idle timeout fires only after a silence,
// so a server sending a byte every 50 s would hold a clone forever. Fewer than FLOOR_BYTES
// arriving while the reader waited FLOOR_WINDOW_IDLES idle timeouts in all (5 min by default) is
// a TIMEOUT. Only the time the reader spends waiting counts: a client busy writing to a slow disk
// (the transport paused by backpressure) never trips it. There is no overall deadline (hg has
// none): a huge clone at any plausible speed (218 B/s and up) goes on as long as it takes.

import type { Writable } from 'node:stream';
import { SluiceError } from '../errors';

/** bytes that must arrive per window of waiting */
export const FLOOR_BYTES = 64 << 10;
/** the window, in idle timeouts of waiting */
export const FLOOR_WINDOW_IDLES = 5;

export class ThroughputFloor {
  private waited = 0;
  private bytes = 0;
  private waitStart: number | null = null;

  constructor(
    private readonly describe: (bytes: number, ms: number) => string,
    /** the window, in idle timeouts of waiting */
    private readonly windowIdles = FLOOR_WINDOW_IDLES,
  ) {}

  /** The reader starts waiting for bytes (a second call while waiting changes nothing). */
  waiting(): void {
    this.waitStart ??= Date.now();
  }

  /** `ms` of the current wait were the reader's own stall, not waiting: they do not count. */
  excuse(ms: number): void {
    if (this.waitStart !== null) this.waitStart = Math.min(Date.now(), this.waitStart + ms);
  }

  /**
   * `n` bytes arrived. Returns the TIMEOUT to fail with when this window's waits reached its
   * length with fewer than FLOOR_BYTES in it; `idleMs` is the reader's idle timeout (0: no floor).
   */
  arrived(n: number, idleMs: number): SluiceError | null {
    if (this.waitStart !== null) {
      this.waited += Date.now() - this.waitStart;
      this.waitStart = null;
    }
    this.bytes += n;
    const windowMs = idleMs * this.windowIdles;
    if (idleMs <= 0 || this.waited < windowMs) return null;
    const { bytes, waited } = this;
    this.waited = 0;
    this.bytes = 0;
    // `trickle`: not worth a retry (a resumed download would trickle again, its progress resetting
    // the retry budget each time)
    return bytes < FLOOR_BYTES
      ? new SluiceError('TIMEOUT', this.describe(bytes, waited), { trickle: true, bytes, ms: waited })
      : null;
  }
}

/**
 * The server's side of the floor: a client that reads a reply too slowly holds a connection slot
 * (HTTP) or a session (ssh) and the reply's producer, so a reply writer waits for `out` to drain
 * through this. Bytes count once the stream has handed them on (written less `writableLength`,
 * which falls only as whole writes complete: 16 KiB and more under backpressure); the wait is
 * looked at every idleMs / 4. Nothing taken for idleMs, or fewer than FLOOR_BYTES in one idle
 * timeout of waiting (218 B/s at the default 300 s: the least plausible speed above), is a
 * TIMEOUT: the caller ends the connection or session. The window is one idle timeout, not the
 * client's five: a client that just avoids the idle timeout already moves a whole write (16 KiB)
 * per idle timeout, which five of would pass the client's floor; with a socket's kernel
 * buffers, reading a byte now and then moves nothing at all (the idle timeout's case). idleMs 0:
 * wait forever (a local peer). A look that comes late (the server's own event loop held up: a
 * busy machine, a long GC, a laptop asleep) could not have seen the client's reads meanwhile, so
 * the lateness is not counted as the client's.
 */
export class ReaderFloor {
  private readonly floor = new ThroughputFloor(
    (bytes, ms) =>
      `the client read only ${bytes} bytes of the reply in ${(ms / 1000).toFixed(1)} s of waiting (reading too slowly)`,
    1,
  );
  /** bytes already counted as taken */
  private taken = 0;

  constructor(
    private readonly out: Writable,
    private readonly idleMs: number,
  ) {}

  /**
   * Resolves once `out` has drained (at once when it needs no draining) or closed; rejects with
   * TIMEOUT as above. `written`: every byte written to `out` so far.
   */
  drained(written: number): Promise<void> {
    const out = this.out;
    if (!out.writableNeedDrain || out.destroyed) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const period = Math.max(1, this.idleMs / 4);
      let lastProgress = Date.now();
      let lastLook = lastProgress;
      const count = (): SluiceError | null => {
        const taken = Math.max(this.taken, written - out.writableLength);
        const n = taken - this.taken;
        this.taken = taken;
        if (n > 0) lastProgress = Date.now();
        if (this.idleMs > 0 && Date.now() - lastProgress >= this.idleMs)
          return new SluiceError('TIMEOUT', `the client read nothing of the reply for ${this.idleMs} ms`);
        return this.floor.arrived(n, this.idleMs);
      };
      const settle = (err: SluiceError | null): void => {
        clearInterval(timer);
        out.off('drain', done);
        out.off('close', done);
        if (err) reject(err);
        else resolve();
      };
      const done = (): void => settle(out.destroyed ? null : count());
      const tick = (): void => {
        const late = Date.now() - lastLook - period;
        lastLook = Date.now();
        if (late > period) {
          lastProgress += late;
          this.floor.excuse(late);
        }
        const err = count();
        if (err) settle(err);
        else this.floor.waiting();
      };
      const timer = this.idleMs > 0 ? setInterval(tick, period) : undefined;
      this.floor.waiting();
      out.on('drain', done);
      out.on('close', done);
    });
  }
}
