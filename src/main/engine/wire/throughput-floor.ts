// The client's guard against a server that trickles: the idle timeout fires only after a silence,
// so a server sending a byte every 50 s would hold a clone forever. Fewer than FLOOR_BYTES
// arriving while the reader waited FLOOR_WINDOW_IDLES idle timeouts in all (5 min by default) is
// a TIMEOUT. Only the time the reader spends waiting counts: a client busy writing to a slow disk
// (the transport paused by backpressure) never trips it. There is no overall deadline (hg has
// none): a huge clone at any plausible speed (218 B/s and up) goes on as long as it takes.

import { SluiceError } from '../errors';

/** bytes that must arrive per window of waiting */
export const FLOOR_BYTES = 64 << 10;
/** the window, in idle timeouts of waiting */
export const FLOOR_WINDOW_IDLES = 5;

export class ThroughputFloor {
  private waited = 0;
  private bytes = 0;
  private waitStart: number | null = null;

  constructor(private readonly describe: (bytes: number, ms: number) => string) {}

  /** The reader starts waiting for bytes (a second call while waiting changes nothing). */
  waiting(): void {
    this.waitStart ??= Date.now();
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
    const windowMs = idleMs * FLOOR_WINDOW_IDLES;
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
