// ByteSource: exact reads over an AsyncIterable<Uint8Array> split at arbitrary places (HTTP chunks,
// file reads, decompressor output, bundle2 payload chunks). Mirrors what hg gets from
// util.readexactly / uvarintdecodestream / fp.readline, without hg's trust in its input: every
// read is bounded and an early end is SluiceError('TRUNCATED').
//
// Speed matters: the apply loop reads ~100k small entries. Reads that fit in the current upstream
// chunk are served as zero-copy views and have synchronous variants (tryReadExact, tryReadUvarint)
// so the hot loop awaits only when a structure straddles a chunk boundary. Straddling reads are
// assembled in one reusable carry-over buffer.
//
// Validity of returned views: a Uint8Array returned by readExact / readLine / peek may point into
// the carry-over buffer and is valid only until the next call on this source; copy what you keep.
// tryReadExact's views and the chunks handed to copy()'s `write` are views of upstream chunks,
// never of the carry-over buffer: they stay valid as long as the upstream does not reuse its own
// buffers (sockets, pipes, file reads, decompressors and bundle2 payloads here never do; the
// changegroup reader relies on it to hand deltas on without a copy).

import { SluiceError, toSluiceError } from '../errors';
import { MAX_CONTIGUOUS_READ, MAX_UVARINT_BYTES, limitError } from './limits';

const EMPTY = new Uint8Array(0);

export type ChunkWriter = (chunk: Uint8Array) => void | Promise<void>;

export class ByteSource {
  private readonly iterator: AsyncIterator<Uint8Array>;
  /** current upstream chunk (never the carry-over buffer) and read position in it */
  private buf: Uint8Array = EMPTY;
  private pos = 0;
  /** assembly area of straddling reads, allocated on first use */
  private carry: Uint8Array = EMPTY;
  private ended = false;
  private closed = false;
  /** bytes consumed before `buf` */
  private base = 0;

  constructor(input: AsyncIterable<Uint8Array> | Iterable<Uint8Array>) {
    this.iterator =
      Symbol.asyncIterator in input
        ? (input as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]()
        : toAsyncIterator((input as Iterable<Uint8Array>)[Symbol.iterator]());
  }

  /** A source over in-memory bytes (tests, small captures). */
  static fromBytes(...chunks: Uint8Array[]): ByteSource {
    return new ByteSource(chunks);
  }

  /** Bytes consumed so far (for error messages). */
  get offset(): number {
    return this.base + this.pos;
  }

  /** Bytes readable without waiting. */
  get buffered(): number {
    return this.buf.length - this.pos;
  }

  /** Reads exactly n bytes if they are already buffered in the current chunk, else returns null. */
  tryReadExact(n: number): Uint8Array | null {
    const pos = this.pos;
    if (this.buf.length - pos < n) return null;
    this.pos = pos + n;
    return this.buf.subarray(pos, pos + n);
  }

  /**
   * Gives back the last n bytes taken by tryReadExact / tryReadUvarint / tryReadLine. Only valid
   * with no await in between (no chunk was pulled since): the synchronous entry parsers use it to
   * leave anything unusual to the awaiting path, which then reports it exactly as it always did.
   */
  unread(n: number): void {
    if (n > this.pos) throw new SluiceError('USAGE', `unread of ${n} bytes beyond the current chunk`);
    this.pos -= n;
  }

  /**
   * A line without its '\n' if the whole line is in the current chunk and at most `max` bytes
   * long, else null with nothing consumed (readLine then decides between waiting, LIMIT and
   * TRUNCATED).
   */
  tryReadLine(max: number): Uint8Array | null {
    const pos = this.pos;
    const nl = this.buf.indexOf(10, pos);
    if (nl < 0 || nl - pos > max) return null;
    this.pos = nl + 1;
    return this.buf.subarray(pos, nl);
  }

  /** Exactly n bytes; TRUNCATED if the input ends first. See the header for view validity. */
  readExact(n: number): Promise<Uint8Array> {
    const view = this.tryReadExact(n);
    return view ? Promise.resolve(view) : this.readExactSlow(n);
  }

  private async readExactSlow(n: number): Promise<Uint8Array> {
    if (n > MAX_CONTIGUOUS_READ) throw limitError('contiguous read of', n, MAX_CONTIGUOUS_READ);
    if (this.buf.length === this.pos) {
      // nothing buffered: the next chunk alone may hold the whole read (zero-copy)
      if (!(await this.pull())) throw truncated(this.offset, 0, n);
      const view = this.tryReadExact(n);
      if (view) return view;
    }
    if (this.carry.length < n) this.carry = new Uint8Array(Math.max(n, 256, this.carry.length * 2));
    const out = this.carry;
    let have = 0;
    const start = this.offset;
    while (have < n) {
      if (this.buf.length === this.pos && !(await this.pull())) {
        throw truncated(start, have, n);
      }
      const take = Math.min(n - have, this.buf.length - this.pos);
      out.set(this.buf.subarray(this.pos, this.pos + take), have);
      this.pos += take;
      have += take;
    }
    return out.subarray(0, n);
  }

  /** One byte, as a number. */
  async readByte(): Promise<number> {
    if (this.pos < this.buf.length) return this.buf[this.pos++]!;
    return (await this.readExactSlow(1))[0]!;
  }

  /**
   * Decodes an unsigned LEB128 varint if it is complete in the current chunk (util.py
   * uvarintdecodestream); returns -1 when more input is needed. LIMIT beyond 8 bytes or 2^53.
   */
  tryReadUvarint(): number {
    const buf = this.buf;
    let pos = this.pos;
    let value = 0;
    let scale = 1;
    for (let i = 0; i < MAX_UVARINT_BYTES; i++) {
      if (pos >= buf.length) return -1;
      const byte = buf[pos++]!;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) {
        if (value > Number.MAX_SAFE_INTEGER) throw uvarintLimit(this.offset);
        this.pos = pos;
        return value;
      }
      scale *= 128;
    }
    throw uvarintLimit(this.offset);
  }

  async readUvarint(): Promise<number> {
    const fast = this.tryReadUvarint();
    if (fast >= 0) return fast;
    let value = 0;
    let scale = 1;
    const start = this.offset;
    for (let i = 0; i < MAX_UVARINT_BYTES; i++) {
      const byte = await this.readByte();
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) {
        if (value > Number.MAX_SAFE_INTEGER) throw uvarintLimit(start);
        return value;
      }
      scale *= 128;
    }
    throw uvarintLimit(start);
  }

  /**
   * A line without its '\n' (like fp.readline, but the newline is required: EOF first is
   * TRUNCATED). More than `max` bytes before the newline is LIMIT.
   */
  async readLine(max: number): Promise<Uint8Array> {
    const nl = this.buf.indexOf(10, this.pos);
    if (nl >= 0 && nl - this.pos <= max) {
      const line = this.buf.subarray(this.pos, nl);
      this.pos = nl + 1;
      return line;
    }
    const start = this.offset;
    let have = 0;
    for (;;) {
      if (this.buf.length === this.pos && !(await this.pull())) throw truncated(start, have, have + 1);
      const limitEnd = Math.min(this.buf.length, this.pos + (max + 1 - have));
      let end = this.buf.indexOf(10, this.pos);
      const found = end >= 0 && end < limitEnd;
      if (!found) end = limitEnd;
      const piece = end - this.pos;
      if (this.carry.length < have + piece) {
        const bigger = new Uint8Array(Math.max(have + piece, 256, this.carry.length * 2));
        bigger.set(this.carry.subarray(0, have));
        this.carry = bigger;
      }
      this.carry.set(this.buf.subarray(this.pos, end), have);
      have += piece;
      this.pos = found ? end + 1 : end;
      if (found) return this.carry.subarray(0, have);
      if (have > max) throw limitError('line length', `> ${max}`, max);
    }
  }

  /**
   * The next n bytes without consuming them; fewer only if the input ends first. Rare (format
   * sniffing): a straddling peek merges chunks into a new buffer.
   */
  async peek(n: number): Promise<Uint8Array> {
    if (this.buf.length === this.pos) await this.pull();
    if (this.buf.length - this.pos >= n) return this.buf.subarray(this.pos, this.pos + n);
    if (n > MAX_CONTIGUOUS_READ) throw limitError('peek of', n, MAX_CONTIGUOUS_READ);
    const parts = [this.buf.subarray(this.pos)];
    let have = parts[0]!.length;
    const offset = this.offset;
    while (have < n && (await this.pull())) {
      parts.push(this.buf);
      have += this.buf.length;
    }
    const merged = new Uint8Array(have);
    let at = 0;
    for (const p of parts) {
      merged.set(p, at);
      at += p.length;
    }
    this.buf = merged;
    this.pos = 0;
    this.base = offset;
    return merged.subarray(0, Math.min(n, have));
  }

  /**
   * Streams exactly n bytes to `write` in pieces (views of upstream chunks, see the header);
   * awaits each write that returns a promise. TRUNCATED if the input ends first.
   */
  async copy(n: number, write: ChunkWriter): Promise<void> {
    const start = this.offset;
    let left = n;
    while (left > 0) {
      if (this.buf.length === this.pos && !(await this.pull())) throw truncated(start, n - left, n);
      const take = Math.min(left, this.buf.length - this.pos);
      const piece = this.buf.subarray(this.pos, this.pos + take);
      this.pos += take;
      left -= take;
      const pending = write(piece);
      if (pending) await pending;
    }
  }

  /** Discards exactly n bytes. */
  async skip(n: number): Promise<void> {
    const start = this.offset;
    let left = n;
    while (left > 0) {
      if (this.buf.length === this.pos && !(await this.pull())) throw truncated(start, n - left, n);
      const take = Math.min(left, this.buf.length - this.pos);
      this.pos += take;
      left -= take;
    }
  }

  /** Up to `max` bytes that are available now (pulling one chunk if none is); null at EOF. */
  async readSome(max: number): Promise<Uint8Array | null> {
    if (this.buf.length === this.pos && !(await this.pull())) return null;
    const take = Math.min(max, this.buf.length - this.pos);
    const piece = this.buf.subarray(this.pos, this.pos + take);
    this.pos += take;
    return piece;
  }

  /** Reads and discards everything up to EOF; returns the number of bytes skipped. */
  async drain(): Promise<number> {
    let n = this.buf.length - this.pos;
    this.pos = this.buf.length;
    while (await this.pull()) {
      n += this.buf.length;
      this.pos = this.buf.length;
    }
    return n;
  }

  /** True when no byte is left. */
  async atEof(): Promise<boolean> {
    if (this.buf.length > this.pos) return false;
    return !(await this.pull());
  }

  /** Stops the upstream (closes files, ends generators). Safe to call more than once. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.ended = true;
    this.buf = EMPTY;
    this.pos = 0;
    try {
      await this.iterator.return?.();
    } catch {
      // closing is best effort: the error that made us close is the one that matters
    }
  }

  private async pull(): Promise<boolean> {
    if (this.ended) return false;
    this.base += this.buf.length;
    this.buf = EMPTY;
    this.pos = 0;
    for (;;) {
      let next: IteratorResult<Uint8Array>;
      try {
        next = await this.iterator.next();
      } catch (e) {
        this.ended = true;
        throw toSluiceError(e);
      }
      if (next.done) {
        this.ended = true;
        return false;
      }
      if (next.value.length > 0) {
        this.buf = next.value;
        return true;
      }
    }
  }
}

function truncated(offset: number, got: number, expected: number): SluiceError {
  return new SluiceError(
    'TRUNCATED',
    `stream ended unexpectedly at byte ${offset + got} (got ${got} bytes, expected ${expected})`,
    { offset: offset + got, got, expected },
  );
}

function uvarintLimit(offset: number): SluiceError {
  return new SluiceError(
    'LIMIT',
    `varint at byte ${offset} is longer than ${MAX_UVARINT_BYTES} bytes or above 2^53`,
    {
      offset,
    },
  );
}

function toAsyncIterator(it: Iterator<Uint8Array>): AsyncIterator<Uint8Array> {
  return {
    next: () => Promise.resolve(it.next()),
    return: () => Promise.resolve(it.return?.() ?? { done: true, value: undefined }),
  };
}
