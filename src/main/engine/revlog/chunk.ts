// Revlog chunk encoding and decoding (revlog.py `compress`/`decompress`, hg-stream-formats.md §8.2): the first byte says
// how the chunk is stored. `x` starts a zlib stream (the byte is part of it), `(` a zstd frame,
// `\0` raw data whose NUL is part of the data, `u` raw data after the marker, empty = empty text.
import * as zlib from 'node:zlib';
import { SluiceError } from '../errors';
import { zstdDecoderLoading, zstdDecompress } from '../codec/revlog-zstd';
import { zstdCompressChunk } from '../codec/zstd';

export type ChunkKind = 'empty' | 'zlib' | 'zstd' | 'raw' | 'stored';

export function chunkKind(chunk: Uint8Array): ChunkKind {
  if (chunk.length === 0) return 'empty';
  switch (chunk[0]) {
    case 0x78:
      return 'zlib';
    case 0x28:
      return 'zstd';
    case 0x00:
      return 'raw';
    case 0x75:
      return 'stored';
    default:
      throw new SluiceError(
        'REVLOG',
        `unknown compression type ${Buffer.from(chunk.subarray(0, 1)).toString('hex')}`,
        {
          problem: 'decompress',
        },
      );
  }
}

/**
 * Returns a promise when this chunk is zstd and the thread's zstd decoder for small frames (the
 * wasm one) is still loading, undefined otherwise, so callers pay nothing on the common path.
 * Decoding without waiting is correct too (node:zlib), only slower per chunk.
 */
export function chunkNeedsPreparation(chunk: Uint8Array): Promise<void> | undefined {
  if (chunk.length === 0 || chunk[0] !== 0x28) return undefined;
  return zstdDecoderLoading();
}

/** zlib's smallest output piece (Z_MIN_CHUNK): node:zlib refuses a smaller chunkSize. */
const ZLIB_MIN_OUT = 64;
/** The largest first output piece: `expected` comes from an index, which may lie. */
const ZLIB_MAX_FIRST_OUT = 4 << 20;
/** deflate's largest expansion (a 258-byte match in ~2 bits): no more can come out of an input. */
const DEFLATE_MAX_RATIO = 1032;

/** The output piece for a zlib chunk: the likely size, but never more than the input can make. */
function zlibOutputPiece(chunk: Uint8Array, maxOutput: number, expected: number): number {
  const bound = Math.min(expected, maxOutput, ZLIB_MAX_FIRST_OUT, chunk.length * DEFLATE_MAX_RATIO);
  return Math.max(ZLIB_MIN_OUT, bound);
}

/**
 * Decodes one chunk into at most maxOutput bytes (the caller knows the bound: the revision's text
 * size for a full text, a bound derived from base and result sizes for a delta). Raw chunks are
 * returned as views, not copies. `expected`: the likely decoded size, when the caller has one:
 * a zlib chunk is inflated into an output buffer of that size (node:zlib's default is 16 KiB,
 * kept whole behind the result; a delta's is mostly a few hundred bytes), more pieces if short.
 */
export function decompressChunk(chunk: Uint8Array, maxOutput: number, expected?: number): Uint8Array {
  const kind = chunkKind(chunk);
  switch (kind) {
    case 'empty':
      return chunk;
    case 'raw':
      return chunk;
    case 'stored':
      return chunk.subarray(1);
    case 'zlib':
      try {
        return zlib.inflateSync(chunk, {
          maxOutputLength: Math.max(1, maxOutput),
          ...(expected !== undefined ? { chunkSize: zlibOutputPiece(chunk, maxOutput, expected) } : {}),
        });
      } catch (e) {
        const err = e as NodeJS.ErrnoException;
        // Python's zlib words it "Error -3 while decompressing data: incorrect header check"
        let why = err.message;
        if (err.code === 'ERR_BUFFER_TOO_LARGE') why = `more than ${maxOutput} bytes`;
        else if (typeof err.errno === 'number') {
          const text = err.errno === -5 ? 'incomplete or truncated stream' : err.message;
          why = `Error ${err.errno} while decompressing data: ${text}`;
        }
        throw new SluiceError('REVLOG', `revlog decompress error: ${why}`, { problem: 'decompress' });
      }
    case 'zstd':
      return zstdDecompress(chunk, maxOutput);
  }
}

/** A revlog's compression engine for new chunks ('none': hg's no-op engine, exp-compression-none). */
export type ChunkEngine = 'zlib' | 'zstd' | 'none';

/**
 * revlog.compress: the engine's output when it is smaller, else the data raw (`u`-marked unless it
 * starts with NUL, which marks raw data itself).
 */
export function compressChunk(engine: ChunkEngine, data: Uint8Array): Uint8Array {
  if (data.length === 0) return data;
  let compressed: Uint8Array | null = null;
  if (engine === 'zstd') {
    // level 3: hg's revlog.zstd.level default
    if (data.length >= 50) compressed = zstdCompressChunk(data, 3);
  } else if (engine === 'zlib' && data.length >= 44) {
    compressed = zlib.deflateSync(data);
  }
  if (compressed && compressed.length < data.length) return compressed;
  if (data[0] === 0) return data;
  const out = Buffer.allocUnsafe(data.length + 1);
  out[0] = 0x75; // 'u'
  out.set(data, 1);
  return out;
}
