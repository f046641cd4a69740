// The one zstd codec of the engine: revlog chunks (one frame each, decoded whole, hg's
// utils/compression.py `zstdrevlogcompressor`) are decoded and encoded here; bundle and wire
// streams go through node:zlib's zstd streams (codec/compression.ts).
//
// Which codec, by measurement (scripts/bench/codec-bench.ts, Node 24.22; docs/benchmarks/analysis.md "zstd codecs"):
// - decoding a chunk: @bokuweb/zstd-wasm through its public API with one decompression context
//   kept per thread, ~16 µs per revlog-sized chunk, once prepareZstd() has loaded it; node:zlib's
//   zstdDecompressSync builds a stream object and a native context per call, ~36 µs. node:zlib
//   takes the frames whose output may exceed WASM_ONESHOT_MAX, and every frame until (or unless)
//   the wasm module is loaded: no frame ever waits for a decoder.
// - encoding a chunk: node:zlib's zstdCompressSync (one call with ZSTD_e_end: zstd pledges the
//   input's size, so the frame carries its content size as ZSTD_compress's does), as fast as the
//   wasm encoder's kept context (~53 µs per revlog-sized text) and byte-identical to its frames.
// Every frame is first walked structurally (frame header, block headers, no decompression) to
// learn the window size, the declared content size and an upper bound of the output, so nothing
// reaches a decoder that could allocate more than the caller allows; windows beyond 128 MiB are
// refused like zstd's own default (ZSTD_WINDOWLOG_LIMIT_DEFAULT = 27).
import * as zlib from 'node:zlib';
import { SluiceError } from '../errors';

export const ZSTD_MAGIC = 0xfd2fb528;
const MAX_WINDOW = 1 << 27;
const BLOCK_MAX = 128 * 1024;
/** The wasm decoder takes frames whose output bound is up to this (its heap grows to input + output). */
const WASM_ONESHOT_MAX = 16 << 20;

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
  return scanFrameInto(data, { windowSize: 0, contentSize: undefined, maxOutput: 0, frameLength: 0 });
}

/** Frame_Header_Descriptor's Dictionary_ID_Flag -> the field's size in bytes */
const DICT_ID_BYTES = [0, 1, 2, 4] as const;

/**
 * scanZstdFrame into `info` (zstdDecompress passes one object kept for every frame of the thread:
 * a fresh info object per revlog chunk was ~200 bytes of garbage per file of a checkout).
 */
function scanFrameInto(data: Uint8Array, info: ZstdFrameInfo): ZstdFrameInfo {
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
  const dictBytes = DICT_ID_BYTES[dictFlag]!;
  let dictId = 0;
  for (let i = 0; i < dictBytes; i++) dictId += data[pos + i]! * 2 ** (8 * i);
  pos += dictBytes;
  if (dictBytes && dictId !== 0) throw zerr('zstd frame needs a dictionary');
  // Frame_Content_Size_Flag -> the field's size (flag 0: 1 byte for a single segment, else none)
  const fcsBytes = fcsFlag === 0 ? (singleSegment ? 1 : 0) : 1 << fcsFlag;
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
  info.windowSize = windowSize;
  info.contentSize = contentSize;
  info.maxOutput = maxOutput;
  info.frameLength = pos;
  return info;
}

/** zstdDecompress's frame info, reused (read before the next frame is scanned on this thread) */
const frameInfo: ZstdFrameInfo = { windowSize: 0, contentSize: undefined, maxOutput: 0, frameLength: 0 };

// --- @bokuweb/zstd-wasm (one-shot decoding, public API) ----------------------------------------

interface WasmZstd {
  init(): Promise<void>;
  createDCtx(): number;
  createCCtx(): number;
  compressUsingDict(cctx: number, buf: Uint8Array, dict: Uint8Array, level: number): Uint8Array;
  decompressUsingDict(
    dctx: number,
    buf: Uint8Array,
    dict: Uint8Array,
    opts: { defaultHeapSize: number },
  ): Uint8Array;
}

/** The loaded wasm decoder and its kept context; undefined before prepareZstd() has loaded it. */
let wasm: { m: WasmZstd; dctx: number; cctx: number } | undefined;
let wasmLoading: Promise<void> | undefined;
/** The wasm module could not load: node:zlib decodes everything on this thread. */
let wasmFailed = false;
const NO_DICT = new Uint8Array(0);

/**
 * Loads the wasm decoder small frames take (once per thread; node:zlib decodes them meanwhile).
 * Never rejects: a module that fails to load leaves node:zlib decoding every frame.
 */
export function prepareZstd(): Promise<void> {
  wasmLoading ??= (async () => {
    try {
      const mod = (await import('@bokuweb/zstd-wasm')) as unknown as WasmZstd & { default?: WasmZstd };
      const m = typeof mod.createDCtx === 'function' ? mod : mod.default!;
      await m.init();
      const dctx = m.createDCtx();
      const cctx = m.createCCtx();
      if (!dctx || !cctx) throw new Error('no zstd context');
      wasm = { m, dctx, cctx };
    } catch (e) {
      wasmFailed = true;
      console.warn(`zstd: the wasm decoder did not load, node:zlib decodes every frame (${String(e)})`);
    }
  })();
  return wasmLoading;
}

/**
 * undefined when small frames take their usual decoder (the wasm one is loaded, or failed to
 * load), else the promise prepareZstd() returns: a reader of many chunks awaits it once instead
 * of paying node:zlib's per-call cost on every chunk (a loop that never yields to the event loop
 * would never see a background load finish).
 */
export function zstdDecoderLoading(): Promise<void> | undefined {
  return wasm || wasmFailed ? undefined : prepareZstd();
}

/** Whether this thread loaded the wasm decoder (what prepareZstd() costs: its module and heap). */
export function zstdWasmLoaded(): boolean {
  return wasm !== undefined;
}

/** zstd's ERROR_* codes (zstd_errors.h) that a corrupt frame can produce, in zstd's words. */
const ZSTD_ERRORS: Record<number, string> = {
  10: 'Unknown frame descriptor',
  20: 'Data corruption detected',
  22: 'Restored data doesn\u2019t match checksum',
  70: 'Destination buffer is too small',
  72: 'Src size is incorrect',
};

function wasmDecode(w: NonNullable<typeof wasm>, data: Uint8Array, limit: number): Uint8Array {
  try {
    return w.m.decompressUsingDict(w.dctx, data, NO_DICT, { defaultHeapSize: Math.max(1, limit) });
  } catch (e) {
    // the package reports zstd's error code in its message ("... with code -20")
    const m = /code (-?\d+)/.exec(e instanceof Error ? e.message : '');
    const code = m ? Math.abs(Number(m[1])) : NaN;
    throw zerr(ZSTD_ERRORS[code] ?? `corrupt zstd frame (${e instanceof Error ? e.message : String(e)})`);
  }
}

// --- node:zlib ---------------------------------------------------------------------------------

/** node:zlib's zstd (Node >= 22.15, package.json `engines`); @types/node 20 does not declare it. */
interface NativeZstd {
  zstdDecompressSync(buf: Uint8Array, opts: { maxOutputLength: number }): Buffer;
  zstdCompressSync(buf: Uint8Array, opts: { chunkSize: number; params: Record<number, number> }): Buffer;
  constants: Record<string, number>;
}
const native = zlib as unknown as NativeZstd;

function nativeDecode(data: Uint8Array, limit: number): Uint8Array {
  try {
    return native.zstdDecompressSync(data, { maxOutputLength: Math.max(1, limit) });
  } catch (e) {
    throw zerr(e instanceof Error ? e.message : String(e));
  }
}

// --- revlog chunks -----------------------------------------------------------------------------

/**
 * Decompresses a chunk holding exactly one zstd frame, producing at most maxOutput bytes.
 * Synchronous; a copy the caller owns.
 */
export function zstdDecompress(data: Uint8Array, maxOutput: number): Uint8Array {
  const info = scanFrameInto(data, frameInfo);
  const contentSize = info.contentSize; // (info is reused by the next frame)
  if (info.frameLength !== data.length) throw zerr('data after the end of the zstd frame');
  if (contentSize !== undefined && contentSize > maxOutput) {
    throw zerr(`zstd frame declares ${contentSize} bytes, more than the ${maxOutput} expected`);
  }
  const limit = Math.min(maxOutput, info.maxOutput);
  const out = wasm && limit <= WASM_ONESHOT_MAX ? wasmDecode(wasm, data, limit) : nativeDecode(data, limit);
  if (contentSize !== undefined && out.length !== contentSize) {
    throw zerr(`zstd frame produced ${out.length} bytes, declared ${contentSize}`);
  }
  if (out.length > limit) throw zerr(`zstd frame decompresses to more than ${limit} bytes`);
  return out;
}

/**
 * One zstd frame of data at `level`, with its content size, like python-zstandard's
 * ZstdCompressor.compress (hg's zstdrevlogcompressor). Errors are SluiceError('COMPRESSION').
 */
export function zstdCompressChunk(data: Uint8Array, level: number): Uint8Array {
  // Small texts and deltas (most of a pull's) go to the wasm encoder's kept context: node:zlib's
  // sync call makes and frees a native context every time, which costs more than compressing a
  // few kilobytes; from WASM_COMPRESS_MAX up the native encoder's speed wins. Same frames.
  if (wasm && data.length <= WASM_COMPRESS_MAX) return wasmEncode(wasm, data, level);
  // one output buffer of ZSTD_compressBound: the whole frame in one call, as ZSTD_compress makes it
  // (smaller output buffers made other frames for texts beyond 1 MB)
  const n = data.length;
  const bound = n + (n >>> 8) + (n < 128 << 10 ? ((128 << 10) - n) >>> 11 : 0) + 64;
  try {
    return native.zstdCompressSync(data, {
      chunkSize: bound,
      params: { [native.constants.ZSTD_c_compressionLevel!]: level },
    });
  } catch (e) {
    throw new SluiceError(
      'COMPRESSION',
      `zstd compression failed: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
}

/** Texts up to this size are compressed by the wasm encoder (its kept context), larger by node:zlib. */
const WASM_COMPRESS_MAX = 12 << 10;

function wasmEncode(w: NonNullable<typeof wasm>, data: Uint8Array, level: number): Uint8Array {
  try {
    return w.m.compressUsingDict(w.cctx, data, NO_DICT, level);
  } catch (e) {
    throw new SluiceError(
      'COMPRESSION',
      `zstd compression failed: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
}
