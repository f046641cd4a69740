// One-shot zstd decompression of revlog chunks (hg: utils/compression.py `zstdrevlogcompressor`).
//
// Node 22 (Electron) has zstd in node:zlib; Node 20 does not, so we fall back to the zstd-codec
// package. Its wasm build has a FIXED 16 MiB heap and answers any allocation failure with an
// Emscripten abort() that kills the module for good, so nothing may reach it before we know what it
// will allocate: every chunk is first walked structurally (frame header, block headers, no
// decompression) to learn the window size, the declared content size and an upper bound of the
// output. Small frames go through the one-shot API (no window buffer), larger ones through the
// streaming API fed 128 KiB at a time (window + one block), frames whose window does not fit the
// wasm heap through the asm.js build with a larger heap (rare: levels > 19 or --long), and windows
// beyond 128 MiB are refused like zstd's own default (ZSTD_WINDOWLOG_LIMIT_DEFAULT = 27).
import * as zlib from 'node:zlib';
import { createRequire } from 'node:module';
import { SluiceError } from '../errors';

const require_ = createRequire(import.meta.url);

export const ZSTD_MAGIC = 0xfd2fb528;
const MAX_WINDOW = 1 << 27;
const BLOCK_MAX = 128 * 1024;
/** wasm one-shot: input + output must fit the 16 MiB heap with room to spare */
const WASM_ONESHOT_MAX = 6 << 20;
/** wasm streaming: the window buffer must fit, with the same margin */
const WASM_WINDOW_MAX = 4 << 20;
const ASMJS_HEAP = 256 << 20;

export interface ZstdFrameInfo {
  windowSize: number;
  /** declared Frame_Content_Size, undefined when absent */
  contentSize: number | undefined;
  /** upper bound of the decompressed size from the block headers */
  maxOutput: number;
  /** bytes of the input the frame occupies */
  frameLength: number;
}

function zerr(message: string): SluiceError {
  // hg (python-zstandard) says "revlog decompress error: zstd decompressor error: <zstd's words>"
  return new SluiceError('REVLOG', `revlog decompress error: zstd decompressor error: ${message}`, {
    problem: 'decompress',
  });
}

/**
 * Walks one zstd frame at the start of data without decompressing it (RFC 8878 §3.1.1). Throws
 * SluiceError('REVLOG') on anything malformed, a dictionary, or a window beyond 128 MiB.
 */
export function scanZstdFrame(data: Uint8Array): ZstdFrameInfo {
  const len = data.length;
  if (len < 6) throw zerr('truncated zstd frame header');
  const magic = (data[0]! | (data[1]! << 8) | (data[2]! << 16) | (data[3]! << 24)) >>> 0;
  if (magic !== ZSTD_MAGIC) throw zerr('not a zstd frame');
  const fhd = data[4]!;
  const fcsFlag = fhd >> 6;
  const singleSegment = (fhd & 0x20) !== 0;
  if (fhd & 0x08) throw zerr('reserved bit set in zstd frame header');
  const checksum = (fhd & 0x04) !== 0;
  const dictFlag = fhd & 3;
  let pos = 5;
  let windowSize = 0;
  if (!singleSegment) {
    const wd = data[pos++]!;
    const windowLog = 10 + (wd >> 3);
    const base = 2 ** windowLog;
    windowSize = base + (base / 8) * (wd & 7);
  }
  const dictBytes = [0, 1, 2, 4][dictFlag]!;
  let dictId = 0;
  for (let i = 0; i < dictBytes; i++) dictId += data[pos + i]! * 2 ** (8 * i);
  pos += dictBytes;
  if (dictBytes && dictId !== 0) throw zerr('zstd frame needs a dictionary');
  const fcsBytes = [singleSegment ? 1 : 0, 2, 4, 8][fcsFlag]!;
  if (pos + fcsBytes > len) throw zerr('truncated zstd frame header');
  let contentSize: number | undefined;
  if (fcsBytes) {
    let v = 0;
    for (let i = 0; i < fcsBytes; i++) v += data[pos + i]! * 2 ** (8 * i);
    if (fcsBytes === 2) v += 256;
    contentSize = v;
  }
  pos += fcsBytes;
  if (singleSegment) windowSize = contentSize!;
  if (windowSize > MAX_WINDOW) throw zerr(`zstd window of ${windowSize} bytes exceeds the 128 MiB limit`);
  const blockMax = Math.min(windowSize, BLOCK_MAX);
  let maxOutput = 0;
  for (;;) {
    if (pos + 3 > len) throw zerr('truncated zstd block header');
    const bh = data[pos]! | (data[pos + 1]! << 8) | (data[pos + 2]! << 16);
    pos += 3;
    const last = bh & 1;
    const type = (bh >> 1) & 3;
    const size = bh >>> 3;
    if (type === 3) throw zerr('reserved zstd block type');
    if (type === 1) {
      // RLE: one byte repeated `size` times
      if (size > blockMax) throw zerr('zstd block larger than the window');
      pos += 1;
      maxOutput += size;
    } else {
      if (size > blockMax) throw zerr('zstd block larger than the window');
      pos += size;
      maxOutput += type === 0 ? size : blockMax;
    }
    if (pos > len) throw zerr('truncated zstd block');
    if (last) break;
  }
  if (checksum) pos += 4;
  if (pos > len) throw zerr('truncated zstd checksum');
  if (contentSize !== undefined) {
    if (contentSize > maxOutput) throw zerr('zstd content size larger than its blocks can hold');
    maxOutput = contentSize;
  }
  return { windowSize, contentSize, maxOutput, frameLength: pos };
}

interface ZstdBinding {
  ZstdCodec: new () => { decompress(dest: unknown, src: unknown): number; delete(): void };
  VectorU8: new () => { resize(n: number, v: number): void; delete(): void };
  cloneToVector(v: unknown, bytes: Uint8Array): void;
  cloneAsTypedArray(v: unknown): Uint8Array;
  ZstdDecompressStreamBinding: new () => {
    begin(): boolean;
    transform(chunk: Uint8Array, cb: (out: Uint8Array) => void): boolean;
    end(cb: (out: Uint8Array) => void): boolean;
    delete(): void;
  };
}

type NativeZstd = (buf: Uint8Array, opts: { maxOutputLength: number }) => Buffer;
const nativeZstd: NativeZstd | undefined = (zlib as unknown as { zstdDecompressSync?: NativeZstd })
  .zstdDecompressSync;

let wasm: ZstdBinding | undefined;
let wasmCodec: InstanceType<ZstdBinding['ZstdCodec']> | undefined;
let wasmLoading: Promise<void> | undefined;
let asmjs: ZstdBinding | undefined;
let asmjsLoading: Promise<void> | undefined;

/**
 * Instantiates an Emscripten build of zstd-codec and hands it to `use`. The Module object is a
 * thenable (MODULARIZE adds `then`), so it must never travel through a promise resolution.
 */
function loadBinding(file: string, use: (b: ZstdBinding) => void, totalMemory?: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const mod: Record<string, unknown> = {};
    if (totalMemory) mod.TOTAL_MEMORY = totalMemory;
    mod.onRuntimeInitialized = () => {
      use(mod as unknown as ZstdBinding);
      resolve();
    };
    mod.onAbort = (what: unknown) =>
      reject(new SluiceError('UNSUPPORTED_COMPRESSION', `zstd decoder failed to load: ${String(what)}`));
    try {
      (require_(file) as (m: unknown) => void)(mod);
    } catch (e) {
      reject(new SluiceError('UNSUPPORTED_COMPRESSION', `zstd decoder failed to load: ${String(e)}`));
    }
  });
}

type DecoderPath = 'oneshot' | 'stream' | 'stream-big-heap';

/** Which zstd-codec path a frame of `length` bytes takes (see the header). */
function decoderPath(info: ZstdFrameInfo, length: number): DecoderPath {
  if (info.contentSize !== undefined && info.contentSize + length <= WASM_ONESHOT_MAX) return 'oneshot';
  return info.windowSize <= WASM_WINDOW_MAX ? 'stream' : 'stream-big-heap';
}

/** True when a frame of `length` bytes can be decompressed right now without awaiting anything. */
export function zstdReadyFor(info: ZstdFrameInfo, length: number): boolean {
  if (nativeZstd) return true;
  return decoderPath(info, length) === 'stream-big-heap' ? asmjs !== undefined : wasm !== undefined;
}

/** Loads the decoder a frame of `length` bytes needs (default: the common wasm one; no-op with native zstd). */
export async function prepareZstd(info?: ZstdFrameInfo, length = 0): Promise<void> {
  if (nativeZstd) return;
  if (info && decoderPath(info, length) === 'stream-big-heap') {
    asmjsLoading ??= loadBinding(
      'zstd-codec/lib/zstd-codec-binding.js',
      (b) => {
        asmjs = b;
      },
      ASMJS_HEAP,
    );
    return asmjsLoading;
  }
  wasmLoading ??= loadBinding('zstd-codec/lib/zstd-codec-binding-wasm.js', (b) => {
    wasm = b;
    wasmCodec = new b.ZstdCodec();
  });
  return wasmLoading;
}

/**
 * Decompresses a chunk holding exactly one zstd frame, producing at most maxOutput bytes.
 * Synchronous; with the zstd-codec fallback the decoder must have been loaded (prepareZstd).
 */
export function zstdDecompress(data: Uint8Array, maxOutput: number): Uint8Array {
  const info = scanZstdFrame(data);
  if (info.frameLength !== data.length) throw zerr('data after the end of the zstd frame');
  if (info.contentSize !== undefined && info.contentSize > maxOutput) {
    throw zerr(`zstd frame declares ${info.contentSize} bytes, more than the ${maxOutput} expected`);
  }
  const limit = Math.min(maxOutput, info.maxOutput);
  let out: Uint8Array;
  if (nativeZstd) {
    try {
      out = nativeZstd(data, { maxOutputLength: Math.max(1, limit) });
    } catch (e) {
      throw zerr((e as Error).message);
    }
  } else {
    const path = decoderPath(info, data.length);
    const big = path === 'stream-big-heap';
    const b = big ? requireAsmjs() : requireWasm();
    try {
      out = path === 'oneshot' ? oneShot(b, data, info.contentSize!) : streaming(b, data, limit);
    } catch (e) {
      if (e instanceof SluiceError) throw e;
      // An Emscripten abort (it should not happen: sizes are checked above) leaves the instance
      // unusable; drop it so the next chunk loads a fresh one, and report this chunk.
      if (big) {
        asmjs = undefined;
        asmjsLoading = undefined;
      } else {
        wasm = undefined;
        wasmCodec = undefined;
        wasmLoading = undefined;
      }
      throw zerr(`zstd decoder failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  if (info.contentSize !== undefined && out.length !== info.contentSize) {
    throw zerr(`zstd frame produced ${out.length} bytes, declared ${info.contentSize}`);
  }
  return out;
}

function requireWasm(): ZstdBinding {
  if (!wasm)
    throw new SluiceError('UNSUPPORTED_COMPRESSION', 'zstd decoder not loaded (call prepareZstd first)');
  return wasm;
}
function requireAsmjs(): ZstdBinding {
  if (!asmjs)
    throw new SluiceError(
      'UNSUPPORTED_COMPRESSION',
      'zstd large-window decoder not loaded (call prepareZstd first)',
    );
  return asmjs;
}

function oneShot(b: ZstdBinding, data: Uint8Array, size: number): Uint8Array {
  if (size === 0) {
    // zstd-codec's one-shot path treats 0 as "unknown"; an empty frame is valid (hg never writes one)
    return streaming(b, data, 0);
  }
  const src = new b.VectorU8();
  const dest = new b.VectorU8();
  try {
    b.cloneToVector(src, data);
    dest.resize(size, 0);
    const rc = wasmCodec!.decompress(dest, src);
    if (rc !== size)
      throw zerr(rc < 0 ? 'corrupt zstd frame' : `zstd frame produced ${rc} bytes, declared ${size}`);
    return b.cloneAsTypedArray(dest);
  } finally {
    src.delete();
    dest.delete();
  }
}

function streaming(b: ZstdBinding, data: Uint8Array, limit: number): Uint8Array {
  const stream = new b.ZstdDecompressStreamBinding();
  const parts: Uint8Array[] = [];
  let total = 0;
  let over = false;
  const sink = (piece: Uint8Array): void => {
    total += piece.length;
    if (total > limit) over = true;
    else parts.push(piece);
  };
  try {
    if (!stream.begin()) throw zerr('zstd decoder refused to start');
    for (let p = 0; p < data.length && !over; p += BLOCK_MAX) {
      if (!stream.transform(data.subarray(p, p + BLOCK_MAX), sink)) throw zerr('corrupt zstd frame');
    }
    if (!over && !stream.end(sink)) throw zerr('corrupt zstd frame');
  } finally {
    stream.delete();
  }
  if (over) throw zerr(`zstd frame decompresses to more than ${limit} bytes`);
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts, total);
}
