// bzip2 decoding of BZ bundles and HG10BZ files (utils/compression.py `_bz2engine`), streaming:
// unbzip2-stream's block decoder (lib/bzip2.js, a port of micro-bunzip; vendored in ./vendor with
// its licence) driven block by block from here. The package's own stream wrapper collected every output byte in a JS array and
// copied the array into a Buffer per block: on the medium corpus's bzip2 bundle (33 MB in, 117 MB
// out) that wrapper cost more CPU than the decoding itself, and seconds of system time. Here a
// block is written into one reused buffer and handed on as one copy; the decoding core measured
// as fast as Python's C bz2 module on the same input.
//
// A block is decoded only when enough input is buffered to hold it whole (the stream's block
// size × 100 kB + 25 kB, as unbzip2-stream does), or once the input has ended; the decoder pulls
// bits synchronously. Every block's CRC and the stream's are checked before its bytes are handed
// on. A block's output is bounded by its format (≤ 900 k symbols, runs ≤ 259 bytes).

import { SluiceError, toSluiceError } from '../errors';
import core, { bitIterator, type BitReader } from './vendor/bzip2';

const SLACK = 25000;

function corrupt(e: unknown): SluiceError {
  return new SluiceError(
    'COMPRESSION',
    `corrupt bzip2 stream: ${e instanceof Error ? e.message : String(e)}`,
  );
}

/** Decompresses a bzip2 stream (or several, concatenated). Errors of `src` pass through unchanged. */
export async function* bunzip2(src: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  const queue: Uint8Array[] = [];
  let received = 0;
  let bits: BitReader | null = null;
  /** block size in units of 100 kB; 0 before a stream header */
  let level = 0;
  let crc: number | null = null;
  let work = new Int32Array(0);
  let out = new Uint8Array(1 << 20);
  let n = 0;
  const put = (b: number): void => {
    if (n === out.length) {
      const bigger = new Uint8Array(out.length * 2);
      bigger.set(out);
      out = bigger;
    }
    out[n++] = b;
  };
  /** One stream header or one block; a block's bytes, or null. */
  const step = (reader: BitReader): Uint8Array | null => {
    try {
      if (!level) {
        level = core.header(reader);
        crc = 0;
        if (work.length !== 100000 * level) work = new Int32Array(100000 * level);
        return null;
      }
      n = 0;
      crc = core.decompress(reader, put, work, work.length, crc);
      if (crc === null) {
        level = 0; // end of this stream; another may follow
        return null;
      }
      return out.slice(0, n);
    } catch (e) {
      throw corrupt(e);
    }
  };
  const need = (): number => (level ? 100000 * level + SLACK : 4);
  try {
    for await (const chunk of src) {
      if (!chunk.length) continue;
      queue.push(chunk);
      received += chunk.length;
      bits ??= bitIterator(() => queue.shift());
      // bytesRead counts a byte from its first bit read: at most one byte more is left than this says
      while (received - bits.bytesRead >= need()) {
        const block = step(bits);
        if (block) yield block;
      }
    }
  } catch (e) {
    throw toSluiceError(e);
  }
  while (bits && received > bits.bytesRead) {
    const block = step(bits);
    if (block) yield block;
  }
  if (level) throw corrupt(new Error('input stream ended prematurely'));
}
