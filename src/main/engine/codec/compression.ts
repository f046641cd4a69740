// Bundle2 core compression (utils/compression.py engines, by bundle type key): UN none, GZ zlib
// stream (not gzip: `78 9c`), BZ bzip2 (decode only, ./bzip2.ts), ZS zstd. Corrupt compressed input is
// SluiceError('COMPRESSION'); errors of the input iterable pass through unchanged.
//
// zstd: node:zlib's streams (Node >= 22.15, package.json `engines`). hg reads a ZS bundle with ONE
// decompressobj, which stops at the end of the first frame, so compressStream('ZS') always emits
// exactly one frame. Level 3 like hg.
// zlib: level -1 (= 6) like hg's zlib engine. Outputs differ byte-wise from hg's (other
// compressor builds); decompressed cores are identical.

import { Readable, type Transform } from 'node:stream';
import zlib from 'node:zlib';
import { SluiceError, toSluiceError } from '../errors';
import type { CompressionKey } from '../format/stream-reader';
import { bunzip2 } from './bzip2';

/** node:zlib's zstd streams (Node >= 22.15); @types/node 20 does not declare them. */
const zstd = zlib as unknown as {
  createZstdCompress(opts: object): Transform;
  createZstdDecompress(opts: object): Transform;
  constants: Record<string, number>;
};

export type { CompressionKey };

const OUTPUT_CHUNK = 64 * 1024;
/**
 * zstd's output pieces: each full output buffer is another threadpool round-trip, and fewer,
 * larger calls keep the compressor's tables warm in cache (docs/benchmarks/analysis.md, "Serving").
 */
const ZSTD_OUTPUT_CHUNK = 256 << 10;
/** A compressor's input write: smaller pieces are coalesced up to it, larger ones go as they are. */
export const COMPRESS_INPUT = 2 << 20;
/**
 * Decompressed pieces: node:zlib's streams cost a threadpool round-trip and a buffer per piece, so
 * larger pieces cost less CPU, while each piece stays allocated as long as one delta viewing it
 * lives. A piece the apply takes longer to get through than two scavenges outlives the young
 * generation and then waits for a full GC: 256 KiB ones held tens of MB of dead pieces at a
 * pull's peak where 64 KiB ones mostly die young, for no measurable CPU (docs/benchmarks/analysis.md).
 */
const DECOMPRESSED_CHUNK = 64 << 10;

export function decompressStream(
  kind: CompressionKey,
  src: AsyncIterable<Uint8Array>,
): AsyncIterable<Uint8Array> {
  switch (kind) {
    case 'UN':
      return src;
    case 'GZ':
      return viaTransform(() => zlib.createInflate({ chunkSize: DECOMPRESSED_CHUNK }), src, 'zlib');
    case 'BZ':
      return bunzip2(src);
    case 'ZS':
      return viaTransform(() => zstd.createZstdDecompress({ chunkSize: DECOMPRESSED_CHUNK }), src, 'zstd');
    default:
      throw new SluiceError('UNSUPPORTED_COMPRESSION', `unknown compression ${JSON.stringify(kind)}`);
  }
}

/**
 * `consumed`, when given, is called with each input piece (or a view of the same bytes) once the
 * compressor is done with it, so its producer may reuse the memory; not called for 'UN' (the
 * pieces are the output) nor for pieces coalesced into a copy.
 */
export function compressStream(
  kind: CompressionKey,
  src: AsyncIterable<Uint8Array>,
  consumed?: (piece: Uint8Array) => void,
): AsyncIterable<Uint8Array> {
  switch (kind) {
    case 'UN':
      return src;
    case 'GZ':
      return viaTransform(
        () => zlib.createDeflate({ level: zlib.constants.Z_DEFAULT_COMPRESSION, chunkSize: OUTPUT_CHUNK }),
        coalesce(src),
        'zlib',
        consumed,
      );
    case 'ZS':
      return withoutTrailingEmptyFrame(
        viaTransform(
          () =>
            zstd.createZstdCompress({
              chunkSize: ZSTD_OUTPUT_CHUNK,
              params: { [zstd.constants.ZSTD_c_compressionLevel!]: 3 },
            }),
          coalesce(src),
          'zstd',
          consumed,
        ),
      );
    default:
      throw new SluiceError('UNSUPPORTED_COMPRESSION', `Sluice cannot write ${kind}-compressed bundles`);
  }
}

/**
 * Input for a compressor in pieces of at least COMPRESS_INPUT bytes. Each write into a node:zlib
 * transform is a thread-pool round trip and a callback on the main thread; a getbundle reply is
 * written as 4-byte bundle2 frame headers and views. Coalescing costs one memcpy of the input and
 * holds about three pieces per stream (this one, the transform's, the one being compressed); 2 MiB
 * pieces cost clearly less CPU than 256 KiB ones for a served pull (docs/benchmarks/analysis.md).
 * A piece of COMPRESS_INPUT or more (a server's framed changegroup) is passed on without a copy.
 */
async function* coalesce(src: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  let held: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of src) {
    if (!chunk.length) continue;
    if (size && chunk.length >= COMPRESS_INPUT) {
      yield held.length === 1 ? held[0]! : Buffer.concat(held, size);
      held = [];
      size = 0;
    }
    held.push(chunk);
    size += chunk.length;
    if (size >= COMPRESS_INPUT) {
      yield held.length === 1 ? held[0]! : Buffer.concat(held, size);
      held = [];
      size = 0;
    }
  }
  if (size) yield held.length === 1 ? held[0]! : Buffer.concat(held, size);
}

/** An empty zstd frame: magic, single segment with a 1-byte content size of 0, one empty last raw block. */
const EMPTY_ZSTD_FRAME = Buffer.from('28b52ffd2000010000', 'hex');

/**
 * Node 24's ZstdCompress ends the stream with a second, empty frame after the real one (its
 * final flush starts a new frame). hg reads one frame and stops, but a bundle must be exactly
 * one frame: that last output piece is dropped.
 */
async function* withoutTrailingEmptyFrame(src: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  let held: Uint8Array | undefined;
  let any = false;
  for await (const chunk of src) {
    if (held) yield held;
    any ||= held !== undefined;
    held = chunk;
  }
  if (held && !(any && Buffer.from(held.buffer, held.byteOffset, held.length).equals(EMPTY_ZSTD_FRAME)))
    yield held;
}

// --- node:zlib transforms --------------------------------------------------------------------

/**
 * Pumps `src` through a Node transform. Errors of `src` are rethrown as they are; anything the
 * transform raises is COMPRESSION. Ending the iteration early destroys the transform and
 * closes `src`. `consumed` gets each input piece once the transform's write of it completed.
 */
async function* viaTransform(
  make: () => Transform,
  src: AsyncIterable<Uint8Array>,
  codec: string,
  consumed?: (piece: Uint8Array) => void,
): AsyncGenerator<Uint8Array> {
  let sourceError: unknown;
  async function* tagged(): AsyncGenerator<Uint8Array> {
    try {
      for await (const chunk of src) if (chunk.length) yield chunk;
    } catch (e) {
      sourceError = e;
      throw e;
    }
  }
  const input = Readable.from(tagged(), { objectMode: false, highWaterMark: 4 });
  const transform = make();
  input.on('error', (e) => transform.destroy(e));
  if (consumed) feedTracked(input, transform, consumed);
  else input.pipe(transform);
  try {
    for await (const out of transform as AsyncIterable<Buffer>) {
      if (out.length) yield out;
    }
  } catch (e) {
    if (sourceError !== undefined) throw toSluiceError(sourceError);
    throw new SluiceError(
      'COMPRESSION',
      `corrupt ${codec} stream: ${e instanceof Error ? e.message : String(e)}`,
    );
  } finally {
    input.destroy();
    transform.destroy();
  }
}

/**
 * input.pipe(transform), with a write callback per piece: pipe() writes without one, so nothing
 * would say when the transform no longer needs a piece. Backpressure as pipe's: pause on a full
 * buffer, resume on drain; the caller destroys both streams when it stops.
 */
function feedTracked(input: Readable, transform: Transform, consumed: (piece: Uint8Array) => void): void {
  const resume = (): void => void input.resume();
  input.on('data', (piece: Buffer) => {
    if (!transform.write(piece, (e) => e || consumed(piece))) {
      input.pause();
      transform.once('drain', resume);
    }
  });
  input.on('end', () => transform.end());
}
