// The one zstd codec loader of the engine: revlog chunks (one frame each, decoded whole,
// hg's utils/compression.py `zstdrevlogcompressor`) and bundle/wire streams (codec/compression.ts)
// both get their decoder here.
//
// Which decoder, by measurement (docs/benchmarks/analysis.md "zstd codecs": real revlog chunks,
// 3.6 KB of text on average; Node 24.15 and 20.20, same machine):
// - one-shot chunks: where node:zlib has zstd (Node >= 22.15, Electron's Node 24), its native
//   decoder kept across frames (nativeKeptDecoder: ~30% less CPU than the wasm decoder on the
//   corpora's chunks, nothing to load); elsewhere the wasm build of @bokuweb/zstd-wasm, ~10 µs
//   per chunk and 330+ MB/s. node:zlib's zstdDecompressSync costs 30-40 µs per call whatever
//   the size (it builds a stream object and its native context each time), 3x slower on revlog
//   chunks; fzstd (pure JS) decodes at ~75 MB/s; zstd-codec's one-shot
//   ~200 MB/s and a fixed 16 MiB heap that dies for good on any allocation failure. Frames whose
//   output may exceed WASM_ONESHOT_MAX go to node:zlib where it exists (the per-call cost no
//   longer matters there), else to zstd-codec's streaming decoder (fed 128 KiB at a time: window
//   + one block) or, for windows beyond its heap, its asm.js build with a 256 MiB heap.
// - streams: node:zlib's createZstdDecompress/createZstdCompress where they exist, else
//   zstd-codec's streaming bindings (see zstdCodecStream).
// Every frame is first walked structurally (frame header, block headers, no decompression) to
// learn the window size, the declared content size and an upper bound of the output, so nothing
// reaches a decoder that could allocate more than the caller allows; windows beyond 128 MiB are
// refused like zstd's own default (ZSTD_WINDOWLOG_LIMIT_DEFAULT = 27).
// SLUICE_FORCE_ZSTD_CODEC=1 hides node:zlib's zstd (tests of the fallback on a new Node, A/B runs).
import * as zlib from 'node:zlib';
import { createRequire } from 'node:module';
import type { Transform } from 'node:stream';
import { SluiceError } from '../errors';

const require_ = createRequire(import.meta.url);

export const ZSTD_MAGIC = 0xfd2fb528;
const MAX_WINDOW = 1 << 27;
const BLOCK_MAX = 128 * 1024;
/** bokuweb one-shot: output bound up to this size (the wasm heap grows to input + output) */
const WASM_ONESHOT_MAX = 16 << 20;
/** zstd-codec streaming: the window buffer must fit its 16 MiB heap with room to spare */
const CODEC_WINDOW_MAX = 4 << 20;
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

// --- node:zlib ------------------------------------------------------------------------------

export interface NativeZstd {
  zstdDecompressSync(buf: Uint8Array, opts: { maxOutputLength: number }): Buffer;
  createZstdCompress(opts: object): Transform;
  createZstdDecompress(opts: object): Transform;
  constants: Record<string, number>;
}

/** node:zlib's zstd (Node >= 22.15 / 23.8, Electron 45), null when absent or hidden by the env. */
export function nativeZstd(): NativeZstd | null {
  if (process.env.SLUICE_FORCE_ZSTD_CODEC === '1') return null;
  const z = zlib as unknown as Partial<NativeZstd>;
  return typeof z.zstdDecompressSync === 'function' &&
    typeof z.createZstdCompress === 'function' &&
    typeof z.createZstdDecompress === 'function'
    ? (z as NativeZstd)
    : null;
}

/** kept buffers grow up to this; larger frames get buffers of their own, freed after */
const KEPT_BUFFER_MAX = 1 << 20;

// --- node:zlib's decoder, kept (one-shot frames where node:zlib has zstd) ----------------------

/** The native half of a node:zlib ZstdDecompress stream (the binding the sync API drives). */
interface ZstdNativeHandle {
  writeSync(
    flush: number,
    input: Uint8Array,
    inOff: number,
    inLen: number,
    out: Uint8Array,
    outOff: number,
    outLen: number,
  ): void;
  onerror: (message: string, errno: number) => void;
  close(): void;
}

/** A node:zlib zstd stream's native handle, kept and driven by hand (one frame per writeSync). */
interface NativeKept {
  handle: ZstdNativeHandle;
  state: Uint32Array;
  out: Buffer;
  error: string | undefined;
}

/**
 * The handle and write state of a fresh node:zlib zstd stream, with its error handler replaced
 * (the stream's own destroys the stream; the frame's caller throws instead); null when node:zlib's
 * internals are not the expected shape.
 */
function keepNativeHandle(stream: { _handle?: ZstdNativeHandle; _writeState?: unknown }): NativeKept | null {
  const handle = stream._handle;
  const state = stream._writeState;
  if (
    !handle ||
    typeof handle.writeSync !== 'function' ||
    !(state instanceof Uint32Array) ||
    state.length < 2
  )
    return null;
  const k: NativeKept = { handle, state, out: Buffer.allocUnsafe(64 << 10), error: undefined };
  handle.onerror = (message) => {
    k.error = message;
  };
  return k;
}

/**
 * At least `cap` bytes of output: the kept buffer, grown up to KEPT_BUFFER_MAX; a fresh one beyond
 * (the caller tells which by `out !== k.out`: no result object per frame).
 */
function keptOutput(k: NativeKept, cap: number): Buffer {
  if (cap > KEPT_BUFFER_MAX) return Buffer.allocUnsafe(cap);
  if (cap > k.out.length)
    k.out = Buffer.allocUnsafe(Math.min(KEPT_BUFFER_MAX, Math.max(cap, 2 * k.out.length)));
  return k.out;
}

function closeNative(k: NativeKept): void {
  try {
    k.handle.close();
  } catch {
    // closed already
  }
}

/**
 * One node:zlib zstd decoder kept for every frame on this thread: its ZSTD_DCtx decodes a whole
 * frame per writeSync call into a kept output buffer, the way node:zlib's own sync calls drive
 * it (lib/zlib.js processChunkSync: `_handle.writeSync`, then `_writeState` = [avail out, avail
 * in]), minus the stream object and the context zstdDecompressSync builds per call (30-40 us).
 * A zstd stream decoder starts the next frame where one ends; a failed frame (zstd keeps its
 * error) retires the decoder and the next frame gets a new one. null: not this runtime (no zstd
 * in node:zlib, SLUICE_FORCE_ZSTD_CODEC, or the internals are not the expected shape): the wasm
 * decoder then. Against the kept wasm decoder (Node 24.22, loaded machine): the inline filelogs'
 * chunks, medium corpus 23k frames of 1.8 -> 3.5 KB, 200-219 -> 128-149 ms of CPU, history 33k
 * of 1.0 -> 1.9 KB, 213-239 -> 166-218 ms; `sluice update` from null, CPU medians of 4-5
 * interleaved runs, history 2.04 -> 1.82 s, medium 2.94 -> 2.76 s.
 */
let nativeKept: NativeKept | null | undefined;

function nativeKeptDecoder(): NativeKept | null {
  if (nativeKept !== undefined) return nativeKept;
  nativeKept = null;
  const Ctor = (zlib as unknown as { ZstdDecompress?: new () => unknown }).ZstdDecompress;
  if (!nativeZstd() || typeof Ctor !== 'function') return null;
  try {
    nativeKept = keepNativeHandle(new Ctor() as Parameters<typeof keepNativeHandle>[0]);
  } catch {
    nativeKept = null;
  }
  return nativeKept;
}

/** Retires the kept native decoder after a failed frame (zstd keeps a context's error). */
function dropNativeKept(k: NativeKept): void {
  if (nativeKept === k) nativeKept = undefined;
  closeNative(k);
}

/** ZSTD_e_continue: node:zlib's flush value for a write that is not the stream's last */
const ZSTD_E_CONTINUE = 0;

/**
 * One whole frame (checked by scanZstdFrame: exactly `data`) through the kept native decoder,
 * into at most `limit` bytes: a view of the kept buffer (valid until the next frame on this
 * thread) when `view`, else a copy.
 */
function nativeKeptDecode(k: NativeKept, data: Uint8Array, limit: number, view: boolean): Uint8Array {
  // one byte beyond the limit tells "more than limit" from "exactly limit"
  const cap = Math.max(1, limit) + 1;
  const out = keptOutput(k, cap);
  const own = out !== k.out;
  k.handle.writeSync(ZSTD_E_CONTINUE, data, 0, data.length, out, 0, cap);
  if (k.error !== undefined) {
    dropNativeKept(k);
    throw zerr(k.error);
  }
  const n = cap - k.state[0]!;
  if (k.state[1] !== 0 || n > limit) {
    dropNativeKept(k); // mid-frame: the next frame needs a fresh context
    throw zerr(`zstd frame decompresses to more than ${limit} bytes`);
  }
  const result = out.subarray(0, n);
  return view || own ? result : Buffer.from(result);
}

// --- node:zlib's encoder, kept (revlog chunks where node:zlib has zstd) -----------------------

/**
 * One node:zlib zstd encoder per level kept for every chunk on this thread, driven as the kept
 * decoder is: one writeSync with ZSTD_e_end per chunk makes one whole frame (zstd takes the
 * input's size as the pledged size on such a first call: the same frame, content size included,
 * as ZSTD_compress; checked byte-identical to the wasm encoder's on 2,000 texts), and the context
 * starts the next frame on the next call. Against the wasm encoder (Node 24.22, loaded machine),
 * the 19,678 texts of the medium corpus's tip (107.5 MB) at level 3: 1.02-1.42 -> 0.67-1.00 s of
 * CPU. null: not this runtime (the wasm encoder then).
 */
const nativeEncoders = new Map<number, NativeKept | null>();

function nativeKeptEncoder(level: number): NativeKept | null {
  const known = nativeEncoders.get(level);
  if (known !== undefined) return known;
  nativeEncoders.set(level, null);
  const native = nativeZstd();
  const Ctor = (zlib as unknown as { ZstdCompress?: new (opts: object) => unknown }).ZstdCompress;
  const levelParam = native?.constants.ZSTD_c_compressionLevel;
  if (!native || typeof Ctor !== 'function' || levelParam === undefined) return null;
  try {
    const e = keepNativeHandle(
      new Ctor({ params: { [levelParam]: level } }) as Parameters<typeof keepNativeHandle>[0],
    );
    nativeEncoders.set(level, e);
    return e;
  } catch {
    return null;
  }
}

/** ZSTD_e_end: node:zlib's flush value that ends the frame */
const ZSTD_E_END = 2;

/** One frame of data through a kept native encoder: a copy (the kept buffer is reused). */
function nativeKeptEncode(e: NativeKept, data: Uint8Array): Uint8Array {
  // ZSTD_compressBound, plus one byte so that a full buffer means "did not fit"
  const cap =
    data.length +
    (data.length >>> 8) +
    (data.length < 128 << 10 ? ((128 << 10) - data.length) >>> 11 : 0) +
    64;
  const out = keptOutput(e, cap);
  const own = out !== e.out;
  e.handle.writeSync(ZSTD_E_END, data, 0, data.length, out, 0, cap);
  const failed =
    e.error ?? (e.state[1] !== 0 || e.state[0] === 0 ? 'frame did not fit its bound' : undefined);
  if (failed !== undefined) {
    // a context left mid-frame or in error cannot start the next frame: a new encoder then
    for (const [level, enc] of nativeEncoders) if (enc === e) nativeEncoders.delete(level);
    closeNative(e);
    throw new SluiceError('COMPRESSION', `zstd compression failed: ${failed}`);
  }
  const result = out.subarray(0, cap - e.state[0]!);
  return own ? result : Buffer.from(result);
}

// --- @bokuweb/zstd-wasm (one-shot) ------------------------------------------------------------

interface OneShotWasm {
  init(): Promise<void>;
  decompress(buf: Uint8Array, opts: { defaultHeapSize: number }): Uint8Array;
  createCCtx(): number;
  compressUsingDict(cctx: number, buf: Uint8Array, dict: Uint8Array, level: number): Uint8Array;
}
let oneShot: OneShotWasm | undefined;
let oneShotLoading: Promise<void> | undefined;
/** the wasm decoder could not load where node:zlib has zstd: small frames stay native */
let oneShotFailed = false;

/**
 * The decoder's Emscripten module (the package's dist/common/module.js, beside its entry): its
 * heap and exported functions let frames decode through one kept context and kept input/output
 * buffers, where the package's decompress() mallocs both buffers (and ZSTD_decompress a context)
 * and copies the output out for every frame. Medium corpus, 17k frames of ~4 KB, Node 24: 11.1 ->
 * 9.2 µs per frame, and no allocation per frame when the caller takes a view (see zstdDecompress).
 * Undefined when the package's layout is not the one expected: the public decompress() then.
 */
interface EmscriptenZstd {
  HEAPU8: Uint8Array;
  _malloc(size: number): number;
  _free(ptr: number): void;
  _ZSTD_createDCtx(): number;
  _ZSTD_isError(code: number): number;
  _ZSTD_decompress_usingDict(
    dctx: number,
    dst: number,
    dstCapacity: number,
    src: number,
    srcSize: number,
    dict: number,
    dictSize: number,
  ): number;
}
let kept:
  { m: EmscriptenZstd; dctx: number; src: number; srcCap: number; dst: number; dstCap: number } | undefined;

function keptDecoder(): typeof kept {
  try {
    const entry = require_.resolve('@bokuweb/zstd-wasm');
    const m = (require_(entry.replace(/[^/\\]+$/, 'module.js')) as { Module?: EmscriptenZstd }).Module;
    const fns = [
      '_malloc',
      '_free',
      '_ZSTD_createDCtx',
      '_ZSTD_isError',
      '_ZSTD_decompress_usingDict',
    ] as const;
    if (!m || !(m.HEAPU8 instanceof Uint8Array) || fns.some((f) => typeof m[f] !== 'function'))
      return undefined;
    const dctx = m._ZSTD_createDCtx();
    return dctx ? { m, dctx, src: 0, srcCap: 0, dst: 0, dstCap: 0 } : undefined;
  } catch {
    return undefined;
  }
}

function loadOneShot(): Promise<void> {
  oneShotLoading ??= (async () => {
    try {
      const m = require_('@bokuweb/zstd-wasm') as OneShotWasm;
      await m.init();
      kept = keptDecoder();
      oneShot = m;
    } catch (e) {
      oneShotLoading = undefined;
      throw new SluiceError('UNSUPPORTED_COMPRESSION', `zstd decoder failed to load: ${String(e)}`);
    }
  })();
  return oneShotLoading;
}

/** zstd's ERROR_* codes (zstd_errors.h) that a corrupt frame can produce, in zstd's words. */
const ZSTD_ERRORS: Record<number, string> = {
  10: 'Unknown frame descriptor',
  20: 'Data corruption detected',
  22: 'Restored data doesn\u2019t match checksum',
  70: 'Destination buffer is too small',
  72: 'Src size is incorrect',
};

function wasmError(code: number): SluiceError {
  return zerr(ZSTD_ERRORS[code] ?? `corrupt zstd frame (zstd error ${code})`);
}

/**
 * One frame through the kept context and buffers: a view of the decoder's heap (valid until its
 * next call on this thread) when `view`, else a copy.
 */
function wasmKept(k: NonNullable<typeof kept>, data: Uint8Array, limit: number, view: boolean): Uint8Array {
  const { m } = k;
  const cap = Math.max(1, limit);
  let src = k.src;
  let dst = k.dst;
  // buffers of this frame's own when larger than the kept ones may grow to
  const ownSrc = data.length > KEPT_BUFFER_MAX;
  const ownDst = cap > KEPT_BUFFER_MAX;
  if (ownSrc) src = m._malloc(data.length);
  else if (data.length > k.srcCap) {
    if (k.src) m._free(k.src);
    k.srcCap = Math.max(data.length, 2 * k.srcCap, 64 << 10);
    src = k.src = m._malloc(k.srcCap);
  }
  if (ownDst) dst = m._malloc(cap);
  else if (cap > k.dstCap) {
    if (k.dst) m._free(k.dst);
    k.dstCap = Math.min(KEPT_BUFFER_MAX, Math.max(cap, 2 * k.dstCap, 64 << 10));
    dst = k.dst = m._malloc(k.dstCap);
  }
  try {
    if (!src || !dst) throw zerr('out of decoder memory');
    m.HEAPU8.set(data, src); // HEAPU8 is replaced when malloc grows the memory: read it after
    const n = m._ZSTD_decompress_usingDict(k.dctx, dst, cap, src, data.length, 0, 0);
    if (m._ZSTD_isError(n)) throw wasmError(-(n | 0));
    const out = m.HEAPU8.subarray(dst, dst + n);
    return view && !ownDst ? out : out.slice();
  } finally {
    if (ownSrc && src) m._free(src);
    if (ownDst && dst) m._free(dst);
  }
}

function wasmOneShot(data: Uint8Array, limit: number): Uint8Array {
  try {
    return oneShot!.decompress(data, { defaultHeapSize: Math.max(1, limit) });
  } catch (e) {
    const m = /code (-?\d+)/.exec(e instanceof Error ? e.message : '');
    const code = m ? Math.abs(Number(m[1])) : NaN;
    throw zerr(ZSTD_ERRORS[code] ?? `corrupt zstd frame (${e instanceof Error ? e.message : String(e)})`);
  }
}

// --- one-shot compression (revlog chunks) ------------------------------------------------------
//
// One frame with its content size, like python-zstandard's ZstdCompressor.compress (hg's
// zstdrevlogcompressor). The same wasm build, with one compression context kept for every call:
// measured on 4000 texts of the medium corpus (4.9 KB average), 51 µs per text on Node 24 and
// 85 µs on Node 20, against 130 µs for node:zlib's zstdCompressSync (a stream object and a native
// context per call) and 137 µs for a fresh context per call; the frames are byte-identical.

/** Inputs up to this size take the wasm encoder (its heap grows to input + bound + context). */
export const ZSTD_WASM_COMPRESS_MAX = 16 << 20;
let cctx: number | undefined;
const NO_DICT = new Uint8Array(0);

/** True when zstdCompressChunk can run now (prepareZstd() loads the encoder). */
export function zstdCompressReady(): boolean {
  return oneShot !== undefined || nativeKeptEncoder(3) !== null;
}

/**
 * One zstd frame of data (at most ZSTD_WASM_COMPRESS_MAX bytes) at `level`. Synchronous: call
 * prepareZstd() first. Errors are SluiceError('COMPRESSION').
 */
export function zstdCompressChunk(data: Uint8Array, level: number): Uint8Array {
  const native = nativeKeptEncoder(level);
  if (native) return nativeKeptEncode(native, data);
  if (!oneShot)
    throw new SluiceError('UNSUPPORTED_COMPRESSION', 'zstd encoder not loaded (call prepareZstd first)');
  if (data.length > ZSTD_WASM_COMPRESS_MAX)
    throw new SluiceError(
      'COMPRESSION',
      `zstd chunk of ${data.length} bytes is beyond the wasm encoder's bound`,
    );
  try {
    cctx ??= oneShot.createCCtx();
    return oneShot.compressUsingDict(cctx, data, NO_DICT, level);
  } catch (e) {
    cctx = undefined; // a failed call may leave the context in any state: the next one makes a new one
    throw new SluiceError(
      'COMPRESSION',
      `zstd compression failed: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
}

// --- zstd-codec (streaming; large frames and streams without node:zlib) ------------------------

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
/** Boxed: the emscripten Module has a `then` method, so it must never settle a promise itself. */
interface CodecBox {
  codec: CodecInstance;
}

/** Instantiates an Emscripten build of zstd-codec (a fresh module and heap each call). */
function newCodec(file: string, totalMemory?: number): Promise<CodecBox> {
  return new Promise<CodecBox>((resolve, reject) => {
    const mod: Record<string, unknown> = {};
    if (totalMemory) mod.TOTAL_MEMORY = totalMemory;
    mod.onRuntimeInitialized = () => resolve({ codec: mod as unknown as CodecInstance });
    mod.onAbort = (what: unknown) =>
      reject(new SluiceError('UNSUPPORTED_COMPRESSION', `zstd decoder failed to load: ${String(what)}`));
    try {
      (require_(file) as (m: unknown) => void)(mod);
    } catch (e) {
      reject(new SluiceError('UNSUPPORTED_COMPRESSION', `zstd decoder failed to load: ${String(e)}`));
    }
  });
}
const CODEC_WASM = 'zstd-codec/lib/zstd-codec-binding-wasm.js';
const CODEC_ASMJS = 'zstd-codec/lib/zstd-codec-binding.js';

/** The zstd-codec instances large one-shot frames use (one per build, replaced after an abort). */
let frameCodec: CodecBox | undefined;
let frameCodecLoading: Promise<void> | undefined;
let bigCodec: CodecBox | undefined;
let bigCodecLoading: Promise<void> | undefined;

type DecoderPath = 'kept-native' | 'wasm' | 'native' | 'codec-stream' | 'codec-big-heap';

function decoderPath(info: ZstdFrameInfo, limit: number): DecoderPath {
  if (limit <= WASM_ONESHOT_MAX) {
    if (nativeKeptDecoder()) return 'kept-native';
    return oneShot || !nativeZstd() ? 'wasm' : 'native';
  }
  if (nativeZstd()) return 'native';
  return info.windowSize <= CODEC_WINDOW_MAX ? 'codec-stream' : 'codec-big-heap';
}

/** True when a frame can be decompressed right now (maxOutput: the caller's bound) without awaiting anything. */
export function zstdReadyFor(info: ZstdFrameInfo, maxOutput: number): boolean {
  const limit = Math.min(maxOutput, info.maxOutput);
  const path = decoderPath(info, limit);
  // A small frame goes native only while the wasm decoder is not loaded: have the caller load it
  // (prepareZstd, once per thread) rather than pay node:zlib's 30-40 µs per call on every chunk
  // (a loop that never yields to the event loop would never see a background load finish).
  if (path === 'kept-native') return true;
  if (path === 'native') return limit > WASM_ONESHOT_MAX || oneShotFailed;
  if (path === 'wasm') return oneShot !== undefined;
  return path === 'codec-stream' ? frameCodec !== undefined : bigCodec !== undefined;
}

/**
 * zstdReadyFor without walking the frame: true when any frame decoded with this bound takes the
 * loaded one-shot decoder (a bound within WASM_ONESHOT_MAX). Callers that check every chunk
 * before decoding it (revlog reads) skip a second walk of its block headers.
 */
export function zstdReadyForBound(maxOutput: number): boolean {
  return (oneShot !== undefined || nativeKeptDecoder() !== null) && maxOutput <= WASM_ONESHOT_MAX;
}

/**
 * prepareZstd() for a reader that only decodes revlog chunks: nothing to load where node:zlib's
 * kept decoder takes them (Node >= 22.15, Electron's Node 24), so the wasm module is neither
 * loaded nor compiled (~40 ms of CPU per thread, its heap).
 */
export function prepareZstdDecoding(): Promise<void> {
  return nativeKeptDecoder() ? Promise.resolve() : prepareZstd();
}

/** Whether this thread loaded the wasm codec (@bokuweb/zstd-wasm): what prepareZstd() costs, its heap. */
export function zstdWasmLoaded(): boolean {
  return oneShot !== undefined;
}

/**
 * prepareZstd() for a writer of revlog chunks (it decodes delta bases and encodes at `level`):
 * nothing to load where node:zlib keeps both a decoder and an encoder (Node >= 22.15, Electron's
 * Node 24). Loading the wasm module there anyway cost its 16 MiB heap in every pull and apply
 * (measured: peak RSS of the medium corpus's bundle apply, Node 24) for chunks it never saw.
 */
export function prepareZstdWriting(level = 3): Promise<void> {
  return nativeKeptDecoder() && nativeKeptEncoder(level) ? Promise.resolve() : prepareZstd();
}

/**
 * Loads the decoder a frame needs (default: the one-shot decoder revlog chunks use). The frame's
 * info and the caller's bound pick it, as zstdDecompress will.
 */
export async function prepareZstd(info?: ZstdFrameInfo, maxOutput = 0): Promise<void> {
  // the one-shot decoder always: any smaller bound the caller passes later decodes through it
  try {
    await loadOneShot();
  } catch (e) {
    if (!nativeZstd()) throw e;
    oneShotFailed = true; // node:zlib decodes everything
  }
  const path = info ? decoderPath(info, Math.min(maxOutput, info.maxOutput)) : 'wasm';
  if (path === 'codec-stream') {
    frameCodecLoading ??= newCodec(CODEC_WASM).then((b) => {
      frameCodec = b;
    });
    return frameCodecLoading;
  }
  if (path === 'codec-big-heap') {
    bigCodecLoading ??= newCodec(CODEC_ASMJS, ASMJS_HEAP).then((b) => {
      bigCodec = b;
    });
    return bigCodecLoading;
  }
}

/**
 * Decompresses a chunk holding exactly one zstd frame, producing at most maxOutput bytes.
 * Synchronous: the decoder zstdReadyFor names must have been loaded (prepareZstd). `view`: the
 * result may be a view of the decoder's memory, valid only until the next zstd call on this
 * thread (a caller that copies it out right away saves a copy and an allocation).
 */
export function zstdDecompress(data: Uint8Array, maxOutput: number, view = false): Uint8Array {
  const info = scanFrameInto(data, frameInfo);
  const contentSize = info.contentSize; // (info is reused by the next frame)
  if (info.frameLength !== data.length) throw zerr('data after the end of the zstd frame');
  if (contentSize !== undefined && contentSize > maxOutput) {
    throw zerr(`zstd frame declares ${contentSize} bytes, more than the ${maxOutput} expected`);
  }
  const limit = Math.min(maxOutput, info.maxOutput);
  const path = decoderPath(info, limit);
  let out: Uint8Array;
  if (path === 'kept-native') {
    out = nativeKeptDecode(nativeKeptDecoder()!, data, limit, view);
  } else if (path === 'wasm') {
    if (!oneShot)
      throw new SluiceError('UNSUPPORTED_COMPRESSION', 'zstd decoder not loaded (call prepareZstd first)');
    out = kept ? wasmKept(kept, data, limit, view) : wasmOneShot(data, limit);
  } else if (path === 'native') {
    try {
      out = nativeZstd()!.zstdDecompressSync(data, { maxOutputLength: Math.max(1, limit) });
    } catch (e) {
      throw zerr((e as Error).message);
    }
  } else {
    const big = path === 'codec-big-heap';
    const box = big ? bigCodec : frameCodec;
    if (!box)
      throw new SluiceError('UNSUPPORTED_COMPRESSION', 'zstd decoder not loaded (call prepareZstd first)');
    try {
      out = streamFrame(box.codec, data, limit);
    } catch (e) {
      if (e instanceof SluiceError) throw e;
      // An Emscripten abort (sizes are checked above, it should not happen) leaves the instance
      // unusable: drop it so the next frame loads a fresh one, and report this frame.
      if (big) [bigCodec, bigCodecLoading] = [undefined, undefined];
      else [frameCodec, frameCodecLoading] = [undefined, undefined];
      throw zerr(`zstd decoder failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  if (contentSize !== undefined && out.length !== contentSize) {
    throw zerr(`zstd frame produced ${out.length} bytes, declared ${contentSize}`);
  }
  if (out.length > limit) throw zerr(`zstd frame decompresses to more than ${limit} bytes`);
  return out;
}

function streamFrame(codec: CodecInstance, data: Uint8Array, limit: number): Uint8Array {
  const stream = new codec.ZstdDecompressStreamBinding();
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

// --- zstd-codec streams (bundles and wire replies on a Node without zlib zstd) ----------------
//
// The wasm module has a fixed 16 MiB heap and dies for good on an allocation failure (emscripten
// abort("OOM"), e.g. a hostile frame asking for a huge window, or contexts leaked by streams
// nobody finished). So every stream gets an instance of its own: taken from a small pool of
// instances whose previous stream ended cleanly (its context freed), or created (~5 ms once the
// module is compiled). An instance whose stream failed or was abandoned is never reused; the
// garbage collector reclaims it with its heap.

const POOL_MAX = 4;
const CODEC_DECOMPRESS_PIECE = 1024;
const idleInstances: CodecBox[] = [];

/** Never return the instance itself from an async function (see CodecBox). */
function acquireCodec(): Promise<CodecBox> {
  const idle = idleInstances.pop();
  return idle ? Promise.resolve(idle) : newCodec(CODEC_WASM);
}

/**
 * One zstd-codec stream: the binding works synchronously through a callback, so each input
 * chunk yields the outputs it produced. Output arrays are fresh copies out of the wasm heap.
 * Errors are SluiceError('COMPRESSION').
 */
export async function* zstdCodecStream(
  mode: 'compress' | 'decompress',
  src: AsyncIterable<Uint8Array>,
): AsyncGenerator<Uint8Array> {
  let box: CodecBox;
  try {
    box = await acquireCodec();
  } catch (e) {
    throw new SluiceError('UNSUPPORTED_COMPRESSION', `zstd is not available: ${(e as Error).message}`);
  }
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
