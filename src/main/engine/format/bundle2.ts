// The bundle2 container, `HG20` (bundle2.py unbundle20 / unbundlepart / decodepayloadchunks /
// interrupthandler for reading, bundle20 / bundlepart.getchunks for writing):
//
//   "HG20" | i32 params size | params "Name=value name2" (URL-quoted) | core, compressed as a
//   whole when `Compression` is set: parts, then i32 0.
//   part = i32 header size | header | payload chunks (i32 size + bytes)*, i32 0
//   header = u8 type length, type, u32 id, u8 mandatory count, u8 advisory count,
//            (u8 key length, u8 value length) per param, then keys and values.
//   payload chunk size -1 = interrupt: an out-of-band part follows (normally error:abort).
//
// Reading is a pull API: nextPart() returns the parts the consumer knows (declared up front with
// the mandatory params it understands); unknown advisory parts are skipped, unknown mandatory
// ones are UNKNOWN_PART, error:* parts are REMOTE_ABORT. A part's payload is a ByteSource; asking
// for the next part skips whatever is left of the current one.

import { SluiceError } from '../errors';
import { ByteSource } from './byte-source';
import { compressStream, decompressStream } from '../codec/compression';
import {
  MAX_INTERRUPT_DEPTH,
  MAX_PARTS,
  MAX_PART_HEADER,
  MAX_STREAM_PARAMS,
  MAX_STREAM_PARAMS_SIZE,
  limitError,
} from './limits';
import { latin1, latin1Bytes, malformed, type CompressionKey } from './stream-reader';

export const BUNDLE2_MAGIC = 'HG20';
/** bundle2.py preferedchunksize; hg before ~4.5 used 4096. */
export const DEFAULT_CHUNK_SIZE = 32768;

export type Param = readonly [key: string, value: string];

export interface Bundle2Part {
  /** lower case, as hg matches it */
  readonly type: string;
  readonly id: number;
  /** any upper-case letter in the type as written */
  readonly mandatory: boolean;
  readonly mandatoryParams: readonly Param[];
  readonly advisoryParams: readonly Param[];
  /** all params, mandatory first (later duplicates win, like hg's sortdict) */
  readonly params: ReadonlyMap<string, string>;
  /** the de-chunked payload; skipped by the next nextPart() call */
  readonly payload: ByteSource;
}

export interface Bundle2ReaderOptions {
  /**
   * Part types the consumer handles (lower case) → the mandatory params it understands.
   * A known part carrying another mandatory param is UNKNOWN_PARAM (bundle2.py _gethandler).
   */
  knownParts: Readonly<Record<string, readonly string[]>>;
}

const STREAM_PARAM_COMPRESSION = new Set<CompressionKey>(['UN', 'GZ', 'BZ', 'ZS']);

export class Bundle2Reader {
  /** payload chunks of the part handed out last, skipped by the next nextPart() */
  private current: AsyncGenerator<Uint8Array> | null = null;
  private ended = false;
  private partCount = 0;

  private constructor(
    private readonly src: ByteSource,
    private readonly core: ByteSource,
    /** stream-level params in order, values URL-unquoted (null when written without `=`) */
    readonly params: ReadonlyMap<string, string | null>,
    readonly compression: CompressionKey,
    private readonly options: Bundle2ReaderOptions,
  ) {}

  /** Reads `HG20` and the stream params, and sets up decompression of the core. */
  static async open(src: ByteSource, options: Bundle2ReaderOptions): Promise<Bundle2Reader> {
    const magic = latin1(await src.readExact(4));
    if (magic !== BUNDLE2_MAGIC) {
      throw new SluiceError('BAD_MAGIC', `not a bundle2 stream (magic ${JSON.stringify(magic)})`);
    }
    const size = await readInt32(src);
    if (size < 0) throw malformed(`negative bundle param size: ${size}`);
    if (size > MAX_STREAM_PARAMS_SIZE)
      throw limitError('bundle2 stream parameters size', size, MAX_STREAM_PARAMS_SIZE);
    const params = size
      ? parseStreamParams(latin1(await src.readExact(size)))
      : new Map<string, string | null>();
    let compression: CompressionKey = 'UN';
    for (const [name, value] of params) {
      // b2streamparamsmap is keyed by the lower-cased name; `compression` is the only entry
      if (name.toLowerCase() === 'compression') {
        if (value === null || !STREAM_PARAM_COMPRESSION.has(value as CompressionKey)) {
          throw new SluiceError(
            'UNSUPPORTED_COMPRESSION',
            `unsupported bundle2 compression ${JSON.stringify(value)}`,
            {
              compression: value,
            },
          );
        }
        compression = value as CompressionKey;
      } else if (name[0] !== name[0]!.toLowerCase()) {
        throw new SluiceError(
          'UNKNOWN_PARAM',
          `unsupported mandatory bundle2 stream parameter ${JSON.stringify(name)}`,
          {
            param: name,
          },
        );
      }
      // unknown advisory (lower-case first letter) parameters are ignored, as in hg
    }
    const core =
      compression === 'UN' ? src : new ByteSource(decompressStream(compression, remainingBytes(src)));
    return new Bundle2Reader(src, core, params, compression, options);
  }

  /**
   * The next part the consumer knows, or null at the end-of-bundle marker (a missing marker is
   * TRUNCATED). Skips the rest of the previous part's payload first.
   */
  async nextPart(): Promise<Bundle2Part | null> {
    for (;;) {
      if (this.current) {
        const rest = this.current;
        this.current = null;
        await skipRest(rest);
      }
      if (this.ended) return null;
      const header = await readPartHeaderBlock(this.core);
      if (header === null) {
        this.ended = true;
        return null;
      }
      if (++this.partCount > MAX_PARTS) throw limitError('bundle2 part count', this.partCount, MAX_PARTS);
      const { part, chunks } = makePart(header, this.core, 0);
      this.current = chunks;
      throwIfErrorPart(part);
      // own properties only: a part named `constructor` or `__proto__` is just unknown
      const known = this.options.knownParts;
      const knownParams = Object.hasOwn(known, part.type) ? known[part.type] : undefined;
      if (!knownParams) {
        if (part.mandatory) throw unknownPart(part.type);
        continue; // advisory and unknown: skipped by the drain above
      }
      const unknown = part.mandatoryParams.map(([k]) => k).filter((k) => !knownParams.includes(k));
      if (unknown.length) {
        throw new SluiceError(
          'UNKNOWN_PARAM',
          `unsupported mandatory parameters of part ${part.type}: ${unknown.join(', ')}`,
          {
            part: part.type,
            params: unknown,
          },
        );
      }
      return part;
    }
  }

  /** True once the end-of-bundle marker was read. */
  get atEnd(): boolean {
    return this.ended;
  }

  /**
   * At the end-of-bundle marker, refuses any byte after it (of the core, decompressed). hg stops
   * reading at the marker and never looks further (unbundle20.iterparts); where the input has an
   * end of its own (an HTTP body, a bundle file), a reply that goes on past its marker is not one hg
   * wrote, so Sluice refuses it rather than apply a prefix of it. Over ssh the pipe carries the
   * next reply, so callers do not ask there.
   */
  async expectEnd(): Promise<void> {
    if (!this.ended) throw malformed('bundle2 stream read before its end-of-bundle marker');
    if (!(await this.core.atEof())) throw malformed('data after the end of the bundle2 stream');
  }

  async close(): Promise<void> {
    await this.core.close();
    if (this.core !== this.src) await this.src.close();
  }
}

// --- reading helpers -------------------------------------------------------------------------

async function readInt32(src: ByteSource): Promise<number> {
  const b = src.tryReadExact(4) ?? (await src.readExact(4));
  return (b[0]! << 24) | (b[1]! << 16) | (b[2]! << 8) | b[3]! | 0;
}

/** Everything after the current position, as zero-copy views (fed to a decompressor). */
async function* remainingBytes(src: ByteSource): AsyncGenerator<Uint8Array> {
  for (;;) {
    const piece = await src.readSome(1 << 20);
    if (!piece) return;
    yield piece;
  }
}

/** bundle20._processallparams: space-separated `name` / `name=value`, each side unquoted. */
export function parseStreamParams(block: string): Map<string, string | null> {
  const params = new Map<string, string | null>();
  const tokens = block.split(' ');
  if (tokens.length > MAX_STREAM_PARAMS)
    throw limitError('bundle2 stream parameter count', tokens.length, MAX_STREAM_PARAMS);
  for (const token of tokens) {
    const eq = token.indexOf('=');
    const name = unquote(eq < 0 ? token : token.slice(0, eq));
    const value = eq < 0 ? null : unquote(token.slice(eq + 1));
    if (!name) throw malformed('empty bundle2 stream parameter name');
    if (!/^[A-Za-z]/.test(name))
      throw malformed(`bundle2 stream parameter with a non-letter first character: ${JSON.stringify(name)}`);
    params.set(name, value);
  }
  return params;
}

/** The part header block, or null for the end-of-bundle marker (size 0). */
async function readPartHeaderBlock(core: ByteSource): Promise<Uint8Array | null> {
  const size = await readInt32(core);
  if (size < 0) throw malformed(`negative part header size: ${size}`);
  if (size === 0) return null;
  if (size > MAX_PART_HEADER) throw limitError('bundle2 part header size', size, MAX_PART_HEADER);
  // copied: the view would be invalidated by the payload reads that follow
  return (await core.readExact(size)).slice();
}

interface PartHeader {
  type: string;
  id: number;
  mandatory: boolean;
  mandatoryParams: Param[];
  advisoryParams: Param[];
}

/** unbundlepart._readheader, bounds-checked (hg slices silently past the end). */
export function parsePartHeader(block: Uint8Array): PartHeader {
  let at = 0;
  const need = (n: number): number => {
    if (at + n > block.length) throw malformed(`bundle2 part header too short (${block.length} bytes)`);
    const start = at;
    at += n;
    return start;
  };
  const typeLength = block[need(1)]!;
  const rawType = latin1(block.subarray(need(typeLength), at));
  if (!/^[a-zA-Z0-9_:-]+$/.test(rawType))
    throw malformed(`invalid bundle2 part type ${JSON.stringify(rawType)}`);
  const idAt = need(4);
  const id =
    ((block[idAt]! << 24) | (block[idAt + 1]! << 16) | (block[idAt + 2]! << 8) | block[idAt + 3]!) >>> 0;
  const mandatoryCount = block[need(1)]!;
  const advisoryCount = block[need(1)]!;
  const sizesAt = need(2 * (mandatoryCount + advisoryCount));
  const params: Param[] = [];
  for (let i = 0; i < mandatoryCount + advisoryCount; i++) {
    const keyLength = block[sizesAt + 2 * i]!;
    const valueLength = block[sizesAt + 2 * i + 1]!;
    const key = latin1(block.subarray(need(keyLength), at));
    const value = latin1(block.subarray(need(valueLength), at));
    params.push([key, value]);
  }
  if (at !== block.length)
    throw malformed(`bundle2 part header has ${block.length - at} unexpected trailing bytes`);
  return {
    type: rawType.toLowerCase(),
    id,
    mandatory: rawType !== rawType.toLowerCase(),
    mandatoryParams: params.slice(0, mandatoryCount),
    advisoryParams: params.slice(mandatoryCount),
  };
}

interface PartWithChunks {
  part: Bundle2Part;
  /** the payload's chunk generator itself, to skip what the consumer left unread */
  chunks: AsyncGenerator<Uint8Array>;
}

function makePart(block: Uint8Array, core: ByteSource, depth: number): PartWithChunks {
  const h = parsePartHeader(block);
  const chunks = payloadChunks(core, depth);
  // Closing the payload source (a consumer done with it) must not end the chunk generator: the
  // rest of the payload still has to be skipped to find the next part.
  const shielded: AsyncIterable<Uint8Array> = {
    [Symbol.asyncIterator]: () => ({
      next: () => chunks.next(),
      return: () => Promise.resolve({ done: true as const, value: undefined }),
    }),
  };
  return {
    part: {
      ...h,
      params: new Map([...h.mandatoryParams, ...h.advisoryParams]),
      payload: new ByteSource(shielded),
    },
    chunks,
  };
}

/** Reads and discards what is left of a payload (unbundlepart.consume). */
async function skipRest(chunks: AsyncGenerator<Uint8Array>): Promise<void> {
  while (!(await chunks.next()).done) {
    // discard
  }
}

/**
 * decodepayloadchunks: the payload's chunks as views of the core's input (no copy). An interrupt
 * (-1) runs the out-of-band part in between, like interrupthandler.
 */
async function* payloadChunks(core: ByteSource, depth: number): AsyncGenerator<Uint8Array> {
  for (;;) {
    const size = await readInt32(core);
    if (size === 0) return;
    if (size > 0) {
      let left = size;
      while (left > 0) {
        const piece = await core.readSome(left);
        if (!piece) {
          throw new SluiceError(
            'TRUNCATED',
            `stream ended unexpectedly inside a bundle2 payload chunk (${left} of ${size} bytes missing)`,
          );
        }
        left -= piece.length;
        yield piece;
      }
    } else if (size === -1) {
      await runInterrupt(core, depth + 1);
    } else {
      throw malformed(`negative payload chunk size: ${size}`);
    }
  }
}

/** interrupthandler.__call__: one out-of-band part, processed without repository access. */
async function runInterrupt(core: ByteSource, depth: number): Promise<void> {
  if (depth > MAX_INTERRUPT_DEPTH) throw limitError('nested bundle2 interrupts', depth, MAX_INTERRUPT_DEPTH);
  const block = await readPartHeaderBlock(core);
  if (block === null) return; // "no part found during interruption"
  const { part, chunks } = makePart(block, core, depth);
  throwIfErrorPart(part);
  if (part.mandatory) throw unknownPart(part.type);
  await skipRest(chunks); // advisory (e.g. output): nothing to do with it here
}

/** error:abort and friends (bundle2.py handleerror*): the peer failed. */
function throwIfErrorPart(part: Bundle2Part): void {
  if (!part.type.startsWith('error:')) return;
  const message = part.params.get('message');
  const hint = part.params.get('hint');
  if (part.type === 'error:abort') {
    throw new SluiceError('REMOTE_ABORT', message ?? 'remote aborted (no message)', { message, hint });
  }
  const params = Object.fromEntries(part.params);
  const detail = Object.entries(params)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
  throw new SluiceError('REMOTE_ABORT', `remote error (${part.type})${detail ? ': ' + detail : ''}`, {
    part: part.type,
    params,
  });
}

function unknownPart(type: string): SluiceError {
  return new SluiceError(
    'UNKNOWN_PART',
    `missing support for mandatory bundle2 part ${JSON.stringify(type)}`,
    { part: type },
  );
}

// --- URL quoting (urllib.parse.quote_from_bytes with safe='/', unquote_to_bytes) ---------------

const UNRESERVED = /[A-Za-z0-9_.\-~/]/;

/** urlreq.quote on a latin1 byte string. */
export function quote(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    out += UNRESERVED.test(c) ? c : '%' + s.charCodeAt(i).toString(16).toUpperCase().padStart(2, '0');
  }
  return out;
}

/** urlreq.unquote (unquote_to_bytes): `%XX` decoded, anything else, malformed `%` included, kept. */
export function unquote(s: string): string {
  if (!s.includes('%')) return s;
  return s.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

// --- writing ---------------------------------------------------------------------------------

export interface Bundle2OutPart {
  /** written upper-cased when mandatory, lower-cased otherwise (bundlepart.getchunks) */
  type: string;
  mandatory?: boolean;
  mandatoryParams?: readonly Param[];
  advisoryParams?: readonly Param[];
  /** bytes are sent as one chunk; an iterable is re-buffered into chunkSize chunks */
  data?: Uint8Array | AsyncIterable<Uint8Array>;
}

export interface Bundle2WriterOptions {
  compression?: CompressionKey;
  /** payload chunk size for iterable payloads; default 32768 */
  chunkSize?: number;
}

/** bundle20: collects parts, then produces the container as chunks. */
export class Bundle2Writer {
  private readonly parts: Bundle2OutPart[] = [];
  private readonly compression: CompressionKey;
  private readonly chunkSize: number;

  constructor(options: Bundle2WriterOptions = {}) {
    this.compression = options.compression ?? 'UN';
    this.chunkSize = options.chunkSize ?? DEFAULT_CHUNK_SIZE;
    if (!Number.isInteger(this.chunkSize) || this.chunkSize <= 0 || this.chunkSize > 0x7fffffff) {
      throw new SluiceError('USAGE', `invalid bundle2 chunk size ${this.chunkSize}`);
    }
  }

  addPart(part: Bundle2OutPart): void {
    this.parts.push(part);
  }

  /**
   * The container. If an iterable payload throws, the bundle ends like hg's: interrupt, an
   * advisory error:abort part, the closing 0 of the current part, no end marker; then the error
   * is rethrown to the consumer.
   */
  async *chunks(): AsyncGenerator<Uint8Array> {
    const params = this.compression === 'UN' ? '' : `${quote('Compression')}=${quote(this.compression)}`;
    const head = Buffer.alloc(8 + params.length);
    head.write(BUNDLE2_MAGIC, 0, 'latin1');
    head.writeInt32BE(params.length, 4);
    head.write(params, 8, 'latin1');
    yield head;
    yield* compressStream(this.compression, this.core());
  }

  private async *core(): AsyncGenerator<Uint8Array> {
    for (let id = 0; id < this.parts.length; id++) yield* partChunks(this.parts[id]!, id, this.chunkSize);
    yield int32(0);
  }
}

/** Splits a generator payload into frames: i32 size, then exactly that many bytes (the last frame shorter). */
export type PayloadFramer = (data: AsyncIterable<Uint8Array>, chunkSize: number) => AsyncIterable<Uint8Array>;

export interface PartChunksOptions {
  /** default copyFrames: few large buffers, best for files; a server may pass views through instead */
  framer?: PayloadFramer;
  /** when set, a producer failure is written as hg's interrupt, reported here, and the part returns false
   * instead of rethrowing */
  onInterrupt?: (e: unknown) => void;
}

/**
 * bundlepart.getchunks for one part with id `id`. If an iterable payload throws, this writes hg's
 * interrupt (-1, an advisory error:abort part, the 0 closing the current part) and rethrows, or with
 * onInterrupt reports it and returns false: the bundle must then end without its end marker.
 */
export async function* partChunks(
  part: Bundle2OutPart,
  id: number,
  chunkSize: number,
  options: PartChunksOptions = {},
): AsyncGenerator<Uint8Array, boolean> {
  yield encodePartHeader(part, id);
  const data = part.data;
  if (data instanceof Uint8Array) {
    if (data.length) {
      yield int32(data.length);
      yield data;
    }
  } else if (data) {
    try {
      yield* (options.framer ?? copyFrames)(data, chunkSize);
    } catch (e) {
      yield int32(-1);
      yield* partChunks(
        { type: 'error:abort', mandatory: false, mandatoryParams: [['message', interruptMessage(e)]] },
        0,
        chunkSize,
      );
      yield int32(0);
      if (!options.onInterrupt) throw e;
      options.onInterrupt(e);
      return false;
    }
  }
  yield int32(0);
  return true;
}

/** The error:abort message of an interrupt; a part parameter holds at most 255 bytes. */
function interruptMessage(e: unknown): string {
  return `unexpected error: ${e instanceof Error ? e.message : String(e)}`.slice(0, 255);
}

/** The part header with its i32 size in front. */
export function encodePartHeader(part: Bundle2OutPart, id: number): Buffer {
  const mandatory = part.mandatory ?? true;
  const type = mandatory ? part.type.toUpperCase() : part.type.toLowerCase();
  if (!/^[a-zA-Z0-9_:-]+$/.test(type) || type.length > 255)
    throw new SluiceError('USAGE', `invalid part type ${type}`);
  const params = [...(part.mandatoryParams ?? []), ...(part.advisoryParams ?? [])];
  const pieces: Buffer[] = [];
  const fixed = Buffer.alloc(1 + type.length + 4 + 2 + 2 * params.length);
  let at = fixed.writeUInt8(type.length, 0);
  at += fixed.write(type, at, 'latin1');
  at = fixed.writeUInt32BE(id, at);
  at = fixed.writeUInt8(part.mandatoryParams?.length ?? 0, at);
  at = fixed.writeUInt8(part.advisoryParams?.length ?? 0, at);
  for (const [k, v] of params) {
    if (k.length > 255 || v.length > 255)
      throw new SluiceError('USAGE', `part parameter ${k} longer than 255 bytes`);
    at = fixed.writeUInt8(k.length, at);
    at = fixed.writeUInt8(v.length, at);
  }
  pieces.push(fixed);
  for (const [k, v] of params) pieces.push(latin1Bytes(k), latin1Bytes(v));
  const body = Buffer.concat(pieces);
  return Buffer.concat([int32(body.length), body]);
}

/**
 * util.chunkbuffer(...).read(preferedchunksize) as hg frames payloads: every chunk exactly
 * chunkSize bytes except the last, each emitted with its i32 size in one buffer.
 */
/** The default framer: copies the payload into fresh frames of 4 + chunkSize bytes (one write each). */
export async function* copyFrames(
  data: AsyncIterable<Uint8Array>,
  chunkSize: number,
): AsyncGenerator<Uint8Array> {
  let frame = Buffer.allocUnsafe(4 + chunkSize);
  let fill = 0;
  for await (let piece of data) {
    while (piece.length) {
      const take = Math.min(piece.length, chunkSize - fill);
      frame.set(take === piece.length ? piece : piece.subarray(0, take), 4 + fill);
      fill += take;
      piece = piece.subarray(take);
      if (fill === chunkSize) {
        frame.writeInt32BE(chunkSize, 0);
        yield frame;
        frame = Buffer.allocUnsafe(4 + chunkSize);
        fill = 0;
      }
    }
  }
  if (fill) {
    frame.writeInt32BE(fill, 0);
    yield frame.subarray(0, 4 + fill);
  }
}

export function int32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n, 0);
  return b;
}
