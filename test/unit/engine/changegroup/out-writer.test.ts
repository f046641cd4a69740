import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { OUT_PIECE, OutWriter, recyclePiece } from '../../../../src/main/engine/changegroup/out-writer';

/** bundle2 payload frames of data, the way FORMAT's framer cuts them: i32 size, bytes; the last shorter. */
function framed(data: Buffer, frame: number): Buffer {
  const out: Buffer[] = [];
  for (let at = 0; at < data.length; at += frame) {
    const piece = data.subarray(at, at + frame);
    const size = Buffer.alloc(4);
    size.writeInt32BE(piece.length, 0);
    out.push(size, piece);
  }
  return Buffer.concat(out);
}

/** Writes `sizes`-long random pieces (and an i32 after each) and returns what was written and produced. */
function run(frame: number, sizes: number[]): { written: Buffer; produced: Buffer[] } {
  const w = new OutWriter(frame);
  const written: Buffer[] = [];
  const produced: Buffer[] = [];
  for (const n of sizes) {
    const b = randomBytes(n);
    w.write(b);
    w.int32(n);
    const word = Buffer.alloc(4);
    word.writeInt32BE(n, 0);
    written.push(b, word);
    if (w.full) produced.push(...w.take().map((p) => Buffer.from(p)));
  }
  produced.push(...w.end().map((p) => Buffer.from(p)));
  return { written: Buffer.concat(written), produced };
}

describe('OutWriter', () => {
  it('unframed: the bytes written, in order, in pieces of OUT_PIECE but the last', () => {
    const { written, produced } = run(0, [5, 0, 100_000, 300_000, 17, OUT_PIECE, 3]);
    expect(Buffer.concat(produced).equals(written)).toBe(true);
    for (const p of produced.slice(0, -1)) expect(p.length).toBe(OUT_PIECE);
  });

  it('framed: the same bytes as framing their concatenation, frames whole in each piece', () => {
    for (const frame of [1, 7, 4096, 32768]) {
      // beyond one framed piece (~2 MiB) for the real frame sizes; tiny frames stay quick
      const sizes = [0, 1, 3, 4095, 4096, 4097, 70_000, frame >= 4096 ? 2_500_000 : 0, 9];
      const { written, produced } = run(frame, sizes);
      expect(Buffer.concat(produced).equals(framed(written, frame))).toBe(true);
      // every piece but the last holds whole frames: it parses on its own
      for (const p of produced.slice(0, -1)) {
        let at = 0;
        while (at < p.length) at += 4 + p.readInt32BE(at);
        expect(at).toBe(p.length);
      }
    }
  });

  it('framed: nothing written, nothing produced (no empty frame)', () => {
    expect(new OutWriter(32768).end()).toEqual([]);
    const { produced } = run(16, [12]); // 12 bytes + the i32: exactly one full frame
    expect(Buffer.concat(produced).equals(framed(Buffer.concat(produced).subarray(4), 16))).toBe(true);
    expect(Buffer.concat(produced).length).toBe(20);
  });

  it('framed: a piece given back is the memory of a later piece; others are ignored', () => {
    const w = new OutWriter(32768);
    const fill = (n: number): Uint8Array[] => {
      w.write(randomBytes(n));
      return w.take();
    };
    const [first] = fill(2_200_000);
    expect(first).toBeDefined();
    recyclePiece(first!.subarray(100)); // a view of it, as the compressor's stream hands it back
    recyclePiece(first!); // twice: ignored
    recyclePiece(Buffer.alloc(first!.length)); // never lent: ignored
    // the piece being written when it came back is handed out next, then the reused one
    expect(fill(2_100_000).length).toBe(1);
    const later = fill(2_100_000);
    expect(later.length).toBe(1);
    expect(later[0]!.buffer).toBe(first!.buffer);
    w.end();
    // an unframed writer's pieces are the caller's: never lent, never reused
    const plain = new OutWriter(0);
    plain.write(randomBytes(OUT_PIECE + 1));
    const [own] = plain.take();
    recyclePiece(own!);
    plain.write(randomBytes(OUT_PIECE));
    expect(plain.take()[0]!.buffer).not.toBe(own!.buffer);
  });

  it('framed: no free piece outlives the writers (an idle server keeps none)', () => {
    const w = new OutWriter(32768);
    w.write(randomBytes(2_200_000));
    const [first] = w.take();
    w.end();
    recyclePiece(first!); // back after the last writer ended: dropped
    const next = new OutWriter(32768);
    next.write(randomBytes(2_200_000));
    expect(next.take()[0]!.buffer).not.toBe(first!.buffer);
    next.end();
  });
});
