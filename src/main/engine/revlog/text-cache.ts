/**
 * LRU of full texts keyed by rev, bounded in bytes; shared by the reader (chain bases that later
 * revisions delta against) and the writer (delta bases of revisions being added). A text larger
 * than `budget / maxShare` is never kept, so one huge file cannot flush everything else.
 */
export class TextCache {
  private readonly map = new Map<number, Uint8Array>();
  private bytes = 0;
  constructor(
    private readonly budget: number,
    private readonly maxShare: number,
    /** told about each text the budget pushes out (the writer recycles its large buffers) */
    private readonly onEvict?: (text: Uint8Array) => void,
  ) {}
  get(rev: number): Uint8Array | undefined {
    const t = this.map.get(rev);
    if (t !== undefined) {
      this.map.delete(rev);
      this.map.set(rev, t);
    }
    return t;
  }
  /** Whether a text of `size` bytes would be kept (false for every size when the budget is 0). */
  keeps(size: number): boolean {
    return size <= this.budget / this.maxShare && this.budget > 0;
  }
  /** Keeps text for rev; false when it is too large to keep (it was not taken). */
  set(rev: number, text: Uint8Array): boolean {
    if (this.map.has(rev)) return true;
    if (!this.keeps(text.length)) return false;
    this.map.set(rev, text);
    this.bytes += text.length;
    for (const [r, t] of this.map) {
      if (this.bytes <= this.budget) break;
      this.map.delete(r);
      this.bytes -= t.length;
      this.onEvict?.(t);
    }
    return true;
  }
  /** without touching the LRU order */
  peek(rev: number): Uint8Array | undefined {
    return this.map.get(rev);
  }
  /** each text kept (the caller hands their buffers on before clear()) */
  forEach(fn: (text: Uint8Array) => void): void {
    for (const t of this.map.values()) fn(t);
  }
  clear(): void {
    // Map.clear allocates a new table even when empty (once per filelog read whole in a checkout)
    if (this.map.size > 0) this.map.clear();
    this.bytes = 0;
  }
}

/**
 * Buffers of mid-sized texts (filelog revisions: 4 KiB up to the writer's recycling size) that
 * revlog writers built, handed back once no writer reads them (evicted from a text cache, or the
 * writer closed), for the next texts of any writer sharing the pool: a changegroup session's
 * filelogs one after another. Allocated per revision, they were the bulk of an apply's garbage
 * (history corpus: 1.9 GB of ArrayBuffers for 33k file texts), each full GC it forced promoting
 * the live young objects, which grew V8's young generation to its maximum in long jobs. Sizes
 * come in classes of a quarter of a power of two (at most 25% unused); at most `budget` bytes
 * wait free.
 */
export class TextBufferPool {
  /** free buffers, oldest first */
  private free: Uint8Array[] = [];
  private bytes = 0;
  /** buffers take() allocated (only those come back) */
  private readonly mine = new WeakSet<ArrayBufferLike>();
  /** buffers waiting in `free` (a second give() of one is ignored) */
  private readonly waiting = new WeakSet<ArrayBufferLike>();

  constructor(private readonly budget: number) {}

  static capacity(size: number): number {
    const step = 2 ** Math.floor(Math.log2(Math.max(4, size))) / 4;
    return Math.ceil(size / step) * step;
  }

  /**
   * A buffer of `size` bytes (not zeroed), a view of one of the pool's: the newest free one of
   * `size`'s class up to twice it, else a new one.
   */
  take(size: number): Uint8Array {
    const cap = TextBufferPool.capacity(size);
    const free = this.free;
    for (let i = free.length - 1; i >= 0; i--) {
      const b = free[i]!;
      if (b.length < cap || b.length >= 2 * cap) continue;
      free.splice(i, 1);
      this.bytes -= b.length;
      this.waiting.delete(b.buffer);
      return b.subarray(0, size);
    }
    const fresh = Buffer.allocUnsafeSlow(cap);
    this.mine.add(fresh.buffer);
    return fresh.subarray(0, size);
  }

  /**
   * Hands back the buffer under `text` (a view take() returned), which its holder no longer
   * reads; ignored for any other buffer. Past the budget the oldest free buffers are let go (the
   * sizes in demand change from one file to the next).
   */
  give(text: Uint8Array): void {
    const ab = text.buffer;
    if (!this.mine.has(ab) || this.waiting.has(ab) || ab.byteLength > this.budget) return;
    this.free.push(new Uint8Array(ab));
    this.waiting.add(ab);
    this.bytes += ab.byteLength;
    if (this.bytes <= this.budget) return;
    let drop = 0;
    while (this.bytes > this.budget) {
      const old = this.free[drop++]!;
      this.bytes -= old.length;
      this.waiting.delete(old.buffer);
    }
    this.free = this.free.slice(drop);
  }

  /** bytes waiting free (tests) */
  get freeBytes(): number {
    return this.bytes;
  }
}

/** Texts from this size up are built into buffers the writer allocates and reuses. */
const RECYCLE_MIN = 256 << 10;
/** Texts from this size up to RECYCLE_MIN come from the text pool; smaller ones from Buffer's own. */
const POOL_MIN = 4 << 10;
/** Evicted large buffers kept for the next large texts. */
const MAX_SPARE = 2;

/**
 * Where a revlog writer builds its texts: small ones in Buffer's pool, mid-sized ones in the
 * session's shared pool, large ones in buffers this writer owns and reuses once evicted (nobody
 * else holds them then).
 */
export class TextBuffers {
  private readonly owned = new WeakSet<ArrayBufferLike>();
  private readonly spare: Uint8Array[] = [];

  constructor(private readonly pool: TextBufferPool) {}

  /** A buffer of `want` bytes for a text of about that size. */
  take(want: number): Uint8Array {
    if (want < POOL_MIN) return Buffer.allocUnsafe(want);
    if (want < RECYCLE_MIN) return this.pool.take(want);
    for (let i = 0; i < this.spare.length; i++) {
      const b = this.spare[i]!;
      if (b.length >= want) {
        this.spare.splice(i, 1);
        return b.subarray(0, want);
      }
    }
    // room for the next revision, usually a little larger
    const whole = new Uint8Array(want + (want >> 3));
    this.owned.add(whole.buffer);
    return whole.subarray(0, want);
  }

  /** A copy of a borrowed text (a view of a received chunk), in a pool buffer when mid-sized. */
  copy(text: Uint8Array): Uint8Array {
    if (text.length < POOL_MIN || text.length >= RECYCLE_MIN) return new Uint8Array(text);
    const copy = this.pool.take(text.length);
    copy.set(text);
    return copy;
  }

  /** A text the writer no longer keeps: its buffer goes back where it came from. */
  recycle(text: Uint8Array): void {
    const ab = text.buffer;
    if (!this.owned.has(ab)) return this.pool.give(text);
    if (this.spare.length >= MAX_SPARE) this.owned.delete(this.spare.shift()!.buffer);
    this.spare.push(new Uint8Array(ab));
  }

  dropSpares(): void {
    this.spare.length = 0;
  }
}
