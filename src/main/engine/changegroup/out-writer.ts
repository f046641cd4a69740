// The byte sink of changegroup generation: every header and payload is copied once into large
// output pieces (no Buffer per revision header, no concatenation of small pieces), optionally
// already cut into bundle2 payload frames (an i32 size before every `frame` bytes) so that a
// server's framing and its wire compressor take the pieces as they are, without another copy.
// A framed piece the wire compressor is done with comes back (recyclePiece) for the next one:
// without it, every reply allocated its whole size in fresh 2 MiB pieces, and that churn of
// external memory drove most of a served clone's full garbage collections.

import { COMPRESS_INPUT } from '../codec/compression';

/** Output piece size without framing (what a file writer or a framer downstream gets). */
export const OUT_PIECE = 256 << 10;

export class OutWriter {
  /** bytes of changegroup written so far (frame headers not counted) */
  total = 0;
  private buf: Buffer;
  private pos = 0;
  /** framed: where the current frame's payload ends in buf (pos === frameEnd: a new frame is due) */
  private frameEnd = 0;
  private readonly pieceSize: number;
  private ready: Uint8Array[] = [];
  /** a reused buffer for the i32 headers callers write through int32() */
  private readonly word = Buffer.allocUnsafe(4);
  /** end() or stopLending() ran: this writer is no longer counted in writersLending */
  private lendingDone = false;

  /** frame: bundle2 payload frame size, 0 for plain changegroup bytes. */
  constructor(private readonly frame = 0) {
    // framed pieces hold whole frames, so a frame header never has to be patched in a piece
    // already handed out (only the last frame can be short, and it is in the last piece); at
    // least a compressor's write, so the wire compressor takes them without coalescing
    this.pieceSize = frame ? Math.ceil(COMPRESS_INPUT / (frame + 4)) * (frame + 4) : OUT_PIECE;
    if (frame) writersLending++;
    this.buf = this.newPiece();
  }

  /** Copies b in (across pieces and frames as needed). */
  write(b: Uint8Array): void {
    let off = 0;
    this.total += b.length;
    while (off < b.length) {
      const room = this.room();
      const n = Math.min(room, b.length - off);
      this.buf.set(n === b.length ? b : b.subarray(off, off + n), this.pos);
      this.pos += n;
      off += n;
    }
  }

  int32(n: number): void {
    this.word.writeInt32BE(n, 0);
    this.write(this.word);
  }

  /** Full pieces ready to hand out (at least ~256 KiB of them when `full`). */
  get full(): boolean {
    return this.ready.length > 0;
  }

  take(): Uint8Array[] {
    const out = this.ready;
    this.ready = [];
    return out;
  }

  /** The pieces left, the last one cut short (and its last frame's size set). */
  end(): Uint8Array[] {
    if (this.frame && this.pos) {
      const start = this.frameEnd - this.frame - 4;
      this.buf.writeInt32BE(this.pos - start - 4, start);
    }
    if (this.pos) this.ready.push(this.buf.subarray(0, this.pos));
    this.pos = 0;
    this.stopLending();
    return this.take();
  }

  /** Ends lending pieces (end() does; a writer dropped before it, as a cancelled reply's, must). */
  stopLending(): void {
    if (!this.frame || this.lendingDone) return;
    this.lendingDone = true;
    if (--writersLending === 0) freePieces.length = 0;
  }

  /** Framed pieces are lent from the pool (and may come back), plain ones are the caller's. */
  private newPiece(): Buffer {
    if (!this.frame) return Buffer.allocUnsafeSlow(this.pieceSize);
    const free = freePieces.pop();
    const piece = free?.length === this.pieceSize ? free : Buffer.allocUnsafeSlow(this.pieceSize);
    lent.add(piece.buffer);
    return piece;
  }

  /** Contiguous bytes writable at pos, starting a new piece or frame when the current one is full. */
  private room(): number {
    if (this.pos === this.buf.length) {
      this.ready.push(this.buf);
      this.buf = this.newPiece();
      this.pos = 0;
      this.frameEnd = 0;
    }
    if (!this.frame) return this.buf.length - this.pos;
    if (this.pos === this.frameEnd) {
      this.buf.writeInt32BE(this.frame, this.pos);
      this.pos += 4;
      this.frameEnd = this.pos + this.frame;
    }
    return this.frameEnd - this.pos;
  }
}

/** Framed pieces handed out and not back yet, by their memory. */
const lent = new WeakSet<ArrayBufferLike>();
/** Pieces back from the compressor, ready for the next writer's next piece. */
const freePieces: Buffer[] = [];
/** At most this many free pieces are kept: about what one reply has in flight. */
const FREE_MAX = 4;
/** Framed writers not ended: with none, no free piece is kept (an idle server holds none). */
let writersLending = 0;

/**
 * Gives a framed piece (or a view of one) back once nothing reads it any more (the wire
 * compressor's write of it completed). Anything else, or a piece given twice, is ignored.
 */
export function recyclePiece(piece: Uint8Array): void {
  const memory = piece.buffer;
  if (!lent.delete(memory)) return;
  if (writersLending === 0 || freePieces.length >= FREE_MAX) return;
  freePieces.push(Buffer.from(memory, 0, memory.byteLength));
}
