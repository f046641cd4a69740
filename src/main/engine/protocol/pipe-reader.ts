// Reading hg's ssh protocol off a pipe (a child's stdout on the client, process.stdin on the
// server): lines, exact byte counts and open-ended streams, with backpressure (the pipe is paused
// while a few MiB wait unread) and an idle timeout that turns a stalled peer into TIMEOUT (as
// http-client.ts does for a stalled HTTP response), and a trickling one too (throughput-floor.ts,
// per reply: the peer calls newReply()). Bounded: a line longer than the limit given
// is an error, never an unbounded buffer.

import type { Readable } from 'node:stream';
import { SluiceError } from '../errors';
import { failUnlessProgress } from './late-timeout';
import { ThroughputFloor } from './throughput-floor';

const HIGH_WATER = 4 << 20;
const LOW_WATER = 1 << 20;

export interface PipeReaderOptions {
  /** no byte for this long while a read waits: the reader fails with TIMEOUT (0: never) */
  idleTimeoutMs?: number;
  /** the words of that TIMEOUT */
  describeStall?: (ms: number) => string;
  /** the error a read meets when the pipe ends early (default TRUNCATED) */
  onEnd?: () => Promise<SluiceError> | SluiceError;
}

export class PipeReader {
  private chunks: Buffer[] = [];
  private have = 0;
  private ended = false;
  private failure: SluiceError | null = null;
  private waiters: (() => void)[] = [];
  private paused = false;
  private endError: Promise<SluiceError> | null = null;
  /** bytes a pending read needs buffered at once (readExact of a large framed reply) */
  private need = 0;
  /** bytes read so far */
  consumed = 0;
  /** bytes that came off the pipe so far, plus one once it ended: progress for a late idle timer */
  private arrived = 0;
  /** no byte for this long while a read waits: TIMEOUT (0: never); may change between reads */
  idleTimeoutMs: number;
  private floor: ThroughputFloor;

  constructor(
    private readonly src: Readable,
    private readonly opts: PipeReaderOptions = {},
  ) {
    this.idleTimeoutMs = opts.idleTimeoutMs ?? 0;
    this.floor = this.newFloor();
    src.on('data', (b: Buffer) => {
      const slow = this.floor.arrived(b.length, this.idleTimeoutMs);
      if (slow) this.fail(slow);
      this.arrived += b.length;
      this.chunks.push(b);
      this.have += b.length;
      if (this.have > Math.max(HIGH_WATER, this.need) && !this.paused) {
        this.paused = true;
        src.pause();
      }
      this.wake();
    });
    src.on('end', () => {
      this.ended = true;
      this.arrived++;
      this.wake();
    });
    src.on('error', (e) => this.fail(new SluiceError('IO', `pipe: ${e.message}`)));
  }

  private newFloor(): ThroughputFloor {
    return new ThroughputFloor(
      (bytes, ms) => `the peer sent only ${bytes} bytes in ${Math.round(ms / 1000)} s of waiting (trickling)`,
    );
  }

  /** A new reply starts: the throughput floor counts from here (small replies do not add up). */
  newReply(): void {
    this.floor = this.newFloor();
  }

  /** Makes every pending and later read fail with `e` (first failure wins). */
  fail(e: SluiceError): void {
    if (!this.failure) this.failure = e;
    this.wake();
  }

  get failed(): SluiceError | null {
    return this.failure;
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** Waits until more bytes than `have` are buffered, the pipe ended, or the reader failed. */
  private async more(): Promise<void> {
    if (this.failure) throw this.failure;
    if (this.ended) {
      this.endError ??= Promise.resolve(
        this.opts.onEnd
          ? this.opts.onEnd()
          : new SluiceError('TRUNCATED', 'the connection closed mid-response'),
      );
      throw await this.endError;
    }
    if (this.paused && (this.have < LOW_WATER || this.have < this.need)) {
      this.paused = false;
      this.src.resume();
    }
    const idle = this.idleTimeoutMs;
    this.floor.waiting();
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      this.waiters.push(resolve);
      if (idle > 0)
        timer = setTimeout(() => {
          const words = this.opts.describeStall?.(idle) ?? `the peer sent nothing for ${idle} ms`;
          failUnlessProgress(
            () => this.arrived,
            () => this.fail(new SluiceError('TIMEOUT', words)),
          );
        }, idle);
    });
    clearTimeout(timer);
    if (this.failure) throw this.failure;
  }

  private take(n: number): Buffer {
    if (n === 0) return Buffer.alloc(0);
    let out: Buffer;
    const head = this.chunks[0]!;
    if (head.length >= n) {
      out = head.subarray(0, n);
      if (head.length === n) this.chunks.shift();
      else this.chunks[0] = head.subarray(n);
    } else {
      const parts: Buffer[] = [];
      let need = n;
      while (need > 0) {
        const c = this.chunks[0]!;
        if (c.length <= need) {
          parts.push(c);
          this.chunks.shift();
          need -= c.length;
        } else {
          parts.push(c.subarray(0, need));
          this.chunks[0] = c.subarray(need);
          need = 0;
        }
      }
      out = Buffer.concat(parts, n);
    }
    this.have -= n;
    this.consumed += n;
    if (this.paused && this.have < LOW_WATER) {
      this.paused = false;
      this.src.resume();
    }
    return out;
  }

  private indexOfNewline(): number {
    let off = 0;
    for (const c of this.chunks) {
      const i = c.indexOf(10);
      if (i >= 0) return off + i;
      off += c.length;
    }
    return -1;
  }

  /**
   * One line including its `\n`; at the end of the pipe what is left (possibly ''), as Python's
   * readline. More than `limit` bytes without a newline: MALFORMED.
   */
  async readLine(limit: number): Promise<Buffer> {
    for (;;) {
      const i = this.indexOfNewline();
      if (i >= 0) {
        if (i + 1 > limit) throw new SluiceError('LIMIT', `line longer than ${limit} bytes`);
        return this.take(i + 1);
      }
      if (this.have > limit) throw new SluiceError('LIMIT', `line longer than ${limit} bytes`);
      if (this.ended && !this.failure) return this.take(this.have);
      await this.more();
    }
  }

  /** Waits until a byte is buffered (true) or the pipe ended (false), consuming nothing. */
  async ready(): Promise<boolean> {
    for (;;) {
      if (this.have > 0) return true;
      if (this.ended && !this.failure) return false;
      await this.more();
    }
  }

  /** Up to `max` bytes already buffered (an unfinished line), without consuming them. */
  peek(max: number): Buffer {
    const parts: Buffer[] = [];
    let n = 0;
    for (const c of this.chunks) {
      if (n >= max) break;
      parts.push(c.subarray(0, max - n));
      n += parts[parts.length - 1]!.length;
    }
    return Buffer.concat(parts, n);
  }

  /** Exactly `n` bytes; the pipe ending first is the onEnd error. */
  async readExact(n: number): Promise<Buffer> {
    // more than HIGH_WATER at once (a framed reply or argument of up to 64 MiB, bounded by the
    // caller): the pipe must not stay paused while the read waits for the rest
    this.need = n;
    try {
      while (this.have < n) await this.more();
    } finally {
      this.need = 0;
    }
    return this.take(n);
  }

  /**
   * What is buffered (at most `max`), waiting for at least one byte; null at the end of the pipe,
   * or as soon as `stillMine` says the caller's reply is over (a later reply's bytes are not its).
   */
  async readSome(max: number, stillMine: () => boolean = () => true): Promise<Buffer | null> {
    for (;;) {
      if (!stillMine()) return null;
      if (this.have > 0) break;
      if (this.ended && !this.failure) return null;
      await this.more();
    }
    return this.take(Math.min(max, this.have, this.chunks[0]!.length));
  }
}
