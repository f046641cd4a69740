// Bundle2 core compression (utils/compression.py engines, by bundle type key): UN none, GZ zlib
// stream (not gzip: `78 9c`), BZ bzip2 (decode only), ZS zstd. Corrupt compressed input is
// SluiceError('COMPRESSION'); errors of the input iterable pass through unchanged.
//
// zstd: node:zlib has it from Node 22.15 (Electron) — used when present; on Node 20 the wasm
// build of zstd-codec. hg reads a ZS bundle with ONE decompressobj, which stops at the end of
// the first frame, so compressStream('ZS') always emits exactly one frame. Level 3 like hg.
// zlib: level -1 (= 6) like hg's zlib engine. Outputs differ byte-wise from hg's (other
// compressor builds); decompressed cores are identical.

import { createRequire } from 'node:module';
import { PassThrough, Readable, type Transform } from 'node:stream';
import zlib from 'node:zlib';
import { SluiceError, toSluiceError } from '../errors';
import type { CompressionKey } from './stream-reader';

const require = createRequire(import.meta.url);

export type { CompressionKey };

const OUTPUT_CHUNK = 64 * 1024;

export function decompressStream(
  kind: CompressionKey,
  src: AsyncIterable<Uint8Array>,
): AsyncIterable<Uint8Array> {
  switch (kind) {
    case 'UN':
      return src;
    case 'GZ':
      return viaTransform(() => zlib.createInflate({ chunkSize: OUTPUT_CHUNK }), src, 'zlib');
    case 'BZ':
      return viaTransform(() => (require('unbzip2-stream') as () => Transform)(), src, 'bzip2');
    case 'ZS': {
      const native = nativeZstd();
      if (native)
        return viaTransform(() => native.createZstdDecompress({ chunkSize: OUTPUT_CHUNK }), src, 'zstd');
      return zstdCodecStream('decompress', src);
    }
    default:
      throw new SluiceError('UNSUPPORTED_COMPRESSION', `unknown compression ${JSON.stringify(kind)}`);
  }
}

export function compressStream(
  kind: CompressionKey,
  src: AsyncIterable<Uint8Array>,
): AsyncIterable<Uint8Array> {
  switch (kind) {
    case 'UN':
      return src;
    case 'GZ':
      return viaTransform(
        () => zlib.createDeflate({ level: zlib.constants.Z_DEFAULT_COMPRESSION, chunkSize: OUTPUT_CHUNK }),
        src,
        'zlib',
      );
    case 'ZS': {
      const native = nativeZstd();
      if (native) {
        return viaTransform(
          () =>
            native.createZstdCompress({
              chunkSize: OUTPUT_CHUNK,
              params: { [native.constants.ZSTD_c_compressionLevel]: 3 },
            }),
          src,
          'zstd',
        );
      }
      return zstdCodecStream('compress', src);
    }
    default:
      throw new SluiceError('UNSUPPORTED_COMPRESSION', `Sluice cannot write ${kind}-compressed bundles`);
  }
}

// --- node:zlib / unbzip2-stream transforms ---------------------------------------------------

/**
 * Pumps `src` through a Node transform. Errors of `src` are rethrown as they are; anything the
 * transform raises is COMPRESSION. Ending the iteration early destroys the transform and
 * closes `src`.
 */
async function* viaTransform(
  make: () => Transform,
  src: AsyncIterable<Uint8Array>,
  codec: string,
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
  input.pipe(transform);
  // unbzip2-stream is a classic (through) stream: wrap its output side to iterate it
  let output: AsyncIterable<Buffer> = transform;
  if (!(Symbol.asyncIterator in transform)) {
    const classic = transform as NodeJS.ReadWriteStream;
    const pass = new PassThrough();
    classic.on('error', (e: Error) => pass.destroy(e));
    output = classic.pipe(pass);
  }
  try {
    for await (const out of output) {
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

interface NativeZstd {
  createZstdCompress(opts: object): Transform;
  createZstdDecompress(opts: object): Transform;
  constants: Record<string, number>;
}

function nativeZstd(): NativeZstd | null {
  const z = zlib as unknown as Partial<NativeZstd>;
  if (process.env.SLUICE_FORCE_ZSTD_CODEC === '1') return null;
  return typeof z.createZstdCompress === 'function' && typeof z.createZstdDecompress === 'function'
    ? (z as NativeZstd)
    : null;
}

// --- zstd-codec (wasm) fallback ------------------------------------------------------------
//
// The wasm module has a fixed 16 MiB heap and dies for good on an allocation failure (emscripten
// abort("OOM"), e.g. a hostile frame asking for a huge window, or contexts leaked by streams
// nobody finished). So every stream gets an instance of its own: taken from a small pool of
// instances whose previous stream ended cleanly (its context freed), or created (~5 ms once the
// module is compiled). An instance whose stream failed or was abandoned is never reused; the
// garbage collector reclaims it with its heap.

interface CodecStreamBinding {
  begin(level?: number): boolean;
  transform(chunk: Uint8Array, callback: (out: Uint8Array) => void): boolean;
  end(callback: (out: Uint8Array) => void): boolean;
  delete(): void;
}
interface CodecInstance {
  ZstdCompressStreamBinding: new () => CodecStreamBinding;
  ZstdDecompressStreamBinding: new () => CodecStreamBinding;
}

const POOL_MAX = 4;
const CODEC_DECOMPRESS_PIECE = 1024;
const idleInstances: CodecBox[] = [];

/** Boxed: the emscripten Module has a `then` method, so it must never settle a promise itself. */
interface CodecBox {
  codec: CodecInstance;
}

function newCodecInstance(): Promise<CodecBox> {
  return new Promise<CodecBox>((resolve, reject) => {
    try {
      const factory = require('zstd-codec/lib/zstd-codec-binding-wasm.js') as (m: object) => unknown;
      const module: Record<string, unknown> = {};
      module.onRuntimeInitialized = () => resolve({ codec: module as unknown as CodecInstance });
      module.onAbort = (what: unknown) =>
        reject(new SluiceError('UNSUPPORTED_COMPRESSION', `zstd is not available: ${String(what)}`));
      factory(module);
    } catch (e) {
      reject(new SluiceError('UNSUPPORTED_COMPRESSION', `zstd is not available: ${String(e)}`));
    }
  });
}

/** Never return the instance itself from an async function (see CodecBox). */
function acquireCodec(): Promise<CodecBox> {
  const idle = idleInstances.pop();
  return idle ? Promise.resolve(idle) : newCodecInstance();
}

/**
 * One zstd-codec stream: the binding works synchronously through a callback, so each input
 * chunk yields the outputs it produced. Output arrays are fresh copies out of the wasm heap.
 */
async function* zstdCodecStream(
  mode: 'compress' | 'decompress',
  src: AsyncIterable<Uint8Array>,
): AsyncGenerator<Uint8Array> {
  const box = await acquireCodec();
  const codec = box.codec;
  let healthy = true;
  const call = <T>(f: () => T): T => {
    try {
      return f();
    } catch (e) {
      healthy = false; // emscripten abort: this instance is dead
      throw new SluiceError(
        'COMPRESSION',
        `zstd ${mode} failed: ${e instanceof Error ? e.message : String(e)}`,
      );
    }
  };
  const stream = call(() =>
    mode === 'compress' ? new codec.ZstdCompressStreamBinding() : new codec.ZstdDecompressStreamBinding(),
  );
  try {
    const ok = call(() => (mode === 'compress' ? stream.begin(3) : stream.begin()));
    if (!ok) throw new SluiceError('COMPRESSION', `zstd ${mode} could not start`);
    let outputs: Uint8Array[] = [];
    const collect = (out: Uint8Array): void => {
      if (out.length) outputs.push(out);
    };
    // A transform call cannot be paused: it decompresses all of its input at once. zstd expands
    // up to ~32768× (4-byte RLE blocks of 128 KiB), so input is fed in 1 KiB pieces (≤ 32 MiB
    // out per call) and the consumer's pace applies between pieces (decompression bombs stay
    // bounded). Measured: no slower than 64 KiB pieces.
    const piece = mode === 'decompress' ? CODEC_DECOMPRESS_PIECE : Infinity;
    for await (const chunk of src) {
      for (let at = 0; at < chunk.length; at += piece) {
        const input = piece >= chunk.length ? chunk : chunk.subarray(at, at + piece);
        const good = call(() => stream.transform(input, collect));
        // outputs produced before a failure are still delivered: a valid frame followed by
        // garbage yields the frame's bytes, then the error (hg would stop at the frame's end)
        const ready = outputs;
        outputs = [];
        for (const out of ready) yield out;
        if (!good) throw new SluiceError('COMPRESSION', `corrupt zstd stream (${mode} failed)`);
      }
    }
    // zstd-codec's decompressor does not report a frame cut short: the container's own framing
    // (bundle2 end marker) turns that into TRUNCATED.
    const good = call(() => stream.end(collect));
    for (const out of outputs) yield out;
    if (!good) throw new SluiceError('COMPRESSION', `corrupt zstd stream (${mode} end failed)`);
  } finally {
    if (healthy) {
      try {
        stream.delete();
        if (idleInstances.length < POOL_MAX) idleInstances.push(box);
      } catch {
        // a failed delete means a broken instance: drop it
      }
    }
  }
}
