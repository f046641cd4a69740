// Reading revisions out of a revlog (revlog.py `_rawtext`, `_chunks`, `_deltachain`, `checkhash`).
//
// A Revlog holds the parsed index and reads chunks through a window over the data file (NAME.d, or
// NAME.i when inline), like hg's randomaccessfile; files up to 4 MiB are read whole, larger ones
// one dense span of a delta chain at a time (hg's slicechunk sparse read). A text is rebuilt from
// the nearest text already at hand (the last one built, or one in a small LRU of texts that later
// revisions delta against): its chain's deltas are folded into one patch and the text is built
// once (hg's mpatch_fold), into a reused buffer that also holds the sorted parents in front of
// the text, so the node check is one SHA-1 call over one buffer. Reading revisions in order
// (verify, export) costs one decompress + one patch + one hash per revision.
import { TextCache } from './text-cache';
import { createHash, hash } from 'node:crypto';
import { SluiceError } from '../errors';
import { chunkKind, chunkNeedsPreparation, decompressChunk } from './chunk';
import { decompressStream } from '../codec/compression';
import {
  MAX_TEXT_SIZE,
  NULL_NODE,
  NULL_REV,
  REVIDX_ELLIPSIS,
  REVIDX_EXTSTORED,
  REVIDX_ISCENSORED,
  REVIDX_KNOWN_FLAGS,
} from './constants';
import { parseRevlogIndex, readRevlogIndex, revisionNode, type RevlogIndex } from './index';
import {
  applyDeltaInto,
  applyFolded,
  foldDeltas,
  FoldedStream,
  patchedSize,
  type FoldedPatch,
} from './mpatch';
import { openForRead, readUpTo, type OpenedFile, type RevlogIoMode } from './file-io';
import { revlogError } from './revlog-error';
import { parseFilelogMeta } from './texts';

export interface RevlogOpenOptions {
  /** hg's display_id (the radix: `00changelog`, `data/foo.txt`); default: indexPath minus `.i` */
  name?: string;
  /** default: indexPath with `.i` replaced by `.d` */
  dataPath?: string;
  /** NAME.i up to this size is read whole (and serves inline chunks from memory); default 4 MiB */
  wholeFileLimit?: number;
  /** read size when streaming a larger NAME.i (default 64 KiB) */
  readSize?: number;
  /** data read window (default 256 KiB) */
  windowSize?: number;
  /** budget of the reconstructed-text cache (default 32 MiB) */
  cacheBytes?: number;
  /** 'sync' for page-cache-hot small files (see file-io.ts); default 'async' */
  io?: RevlogIoMode;
  /** current sizes already known from a store listing (saves an fstat each) */
  indexSize?: number;
  dataSize?: number;
  signal?: AbortSignal;
}

export interface RevisionOptions {
  /** check the node id (default true) */
  check?: boolean;
}

/** Random access to a file's bytes with a read window (or straight from memory). */
interface ByteSource {
  size(): Promise<number | undefined>;
  read(pos: number, len: number): Promise<Uint8Array>;
  /** read() without a promise when [pos, pos + len) is in memory already; undefined otherwise. */
  readNow(pos: number, len: number): Uint8Array | undefined;
  /** Makes the following reads inside [pos, pos + len) memory hits (one large read). */
  prefetch(pos: number, len: number): Promise<void>;
  /** Drops the read window (the next read reads the file again). */
  release(): void;
  close(): Promise<void>;
}

class MemorySource implements ByteSource {
  /** data null: the file does not exist */
  constructor(
    private readonly data: Uint8Array | null,
    private readonly label: string,
  ) {}
  async size(): Promise<number | undefined> {
    return this.data?.length;
  }
  async read(pos: number, len: number): Promise<Uint8Array> {
    const data = this.data;
    if (!data) {
      if (len === 0) return new Uint8Array(0);
      throw revlogError(this.label, 'missing-data-file', `revlog data file ${this.label} is missing`);
    }
    if (pos + len > data.length) throw partialRead(this.label, pos, len, Math.max(0, data.length - pos));
    return data.subarray(pos, pos + len);
  }
  readNow(pos: number, len: number): Uint8Array | undefined {
    const data = this.data;
    return data && pos + len <= data.length ? data.subarray(pos, pos + len) : undefined;
  }
  async prefetch(): Promise<void> {}
  release(): void {}
  async close(): Promise<void> {}
}

class FileSource implements ByteSource {
  private file: OpenedFile | null | undefined;
  private opening: Promise<OpenedFile | null> | undefined;
  private fileSize: number | undefined;
  private winPos = 0;
  private win: Uint8Array = new Uint8Array(0);

  constructor(
    private readonly path: string,
    private readonly label: string,
    private readonly windowSize: number,
    private readonly io: RevlogIoMode,
    private readonly sizeHint: number | undefined,
    /** a file up to this size is read whole on the first miss */
    private readonly wholeLimit: number,
  ) {}

  private handle(): Promise<OpenedFile | null> {
    this.opening ??= (async () => {
      const f = await openForRead(this.path, this.io);
      this.file = f;
      if (f) this.fileSize = this.sizeHint ?? (await f.size());
      return f;
    })();
    return this.opening;
  }

  async size(): Promise<number | undefined> {
    await this.handle();
    return this.fileSize;
  }

  readNow(pos: number, len: number): Uint8Array | undefined {
    if (pos >= this.winPos && pos + len <= this.winPos + this.win.length) {
      return this.win.subarray(pos - this.winPos, pos - this.winPos + len);
    }
    return undefined;
  }

  async read(pos: number, len: number): Promise<Uint8Array> {
    if (pos >= this.winPos && pos + len <= this.winPos + this.win.length) {
      return this.win.subarray(pos - this.winPos, pos - this.winPos + len);
    }
    await this.fill(pos, len);
    return this.win.subarray(pos - this.winPos, pos - this.winPos + len);
  }

  async prefetch(pos: number, len: number): Promise<void> {
    if (len <= 0 || (pos >= this.winPos && pos + len <= this.winPos + this.win.length)) return;
    const size = await this.size();
    if (size === undefined || pos + len > size) return; // read() reports it
    await this.fill(pos, len);
  }

  /** Replaces the window with one read covering [pos, pos + len) (the whole file when small). */
  private async fill(pos: number, len: number): Promise<void> {
    const f = await this.handle();
    if (!f) {
      if (len === 0) {
        this.win = new Uint8Array(0);
        this.winPos = pos;
        return;
      }
      throw revlogError(this.label, 'missing-data-file', `revlog data file ${this.label} is missing`, {
        path: this.path,
        // what hg's open() raises, word for word
        reason: `[Errno 2] No such file or directory: ${pythonBytesRepr(this.path)}`,
      });
    }
    const size = this.fileSize!;
    if (pos + len > size) throw partialRead(this.label, pos, len, Math.max(0, size - pos));
    const from = size <= this.wholeLimit ? 0 : pos;
    const want = size <= this.wholeLimit ? size : Math.min(Math.max(len, this.windowSize), size - pos);
    // a fresh buffer per window: views handed out of the previous one stay valid
    const buf = Buffer.allocUnsafe(want);
    let got = 0;
    while (got < want) {
      const n = await f.read(buf, got, want - got, from + got);
      if (n === 0) break;
      got += n;
    }
    if (from + got < pos + len) throw partialRead(this.label, pos, len, Math.max(0, from + got - pos));
    this.win = buf.subarray(0, got);
    this.winPos = from;
  }

  release(): void {
    this.win = new Uint8Array(0);
    this.winPos = 0;
  }

  async close(): Promise<void> {
    const f = this.file;
    this.file = undefined;
    this.opening = undefined;
    this.release();
    if (f) await f.close();
  }
}

/** Python's repr() of a bytes value (as in hg's IOError messages): a path's UTF-8, or latin1 bytes. */
export function pythonBytesRepr(path: string, encoding: 'utf8' | 'latin1' = 'utf8'): string {
  const bytes = Buffer.from(path, encoding);
  const quote = bytes.includes(0x27) && !bytes.includes(0x22) ? '"' : "'";
  let out = '';
  for (const b of bytes) {
    if (b === 0x5c) out += '\\\\';
    else if (b === quote.charCodeAt(0)) out += '\\' + quote;
    else if (b === 0x09) out += '\\t';
    else if (b === 0x0a) out += '\\n';
    else if (b === 0x0d) out += '\\r';
    else if (b < 0x20 || b >= 0x7f) out += '\\x' + b.toString(16).padStart(2, '0');
    else out += String.fromCharCode(b);
  }
  return `b${quote}${out}${quote}`;
}

function partialRead(label: string, pos: number, len: number, got: number): SluiceError {
  return revlogError(
    label,
    'partial-read',
    `partial read of revlog ${label}; expected ${len} bytes from offset ${pos}, got ${got}`,
    {
      offset: pos,
      expected: len,
      got,
    },
  );
}

/** How build() reaches rev: the chain of revisions to decode, on top of a text at hand if any. */
interface BuildPlan {
  chain: number[];
  /** the text the chain's first delta applies to (undefined: chain[0] is a full text) */
  base: Uint8Array | undefined;
  /** which build buffer holds base (-1: neither) */
  baseIn: number;
}

/** Bytes in front of a text in the build buffers: the sorted parents, hashed with the text in one call. */
const PARENTS = 40;
/** streamRevision gathers slices smaller than a quarter of this into one write of up to this size */
const STREAM_PIECE = 1 << 20;
/** streamRevision reads a full snapshot's stored chunk this much at a time */
const SNAPSHOT_READ = 1 << 20;
/** A chain's chunks are read as one span while the gap between two is at most this (hg: 256 KiB). */
const SPARSE_GAP = 256 << 10;
/** ... and the span at most this long. */
const SPAN_MAX = 8 << 20;

const DEFAULT_WHOLE_FILE = 4 << 20;
/** see Revlog.chunk */
const CHUNK_SLACK = 1 << 20;

/**
 * Build buffers of Revlogs closed (or cleared) on this thread, for the next ones to reuse: verify
 * and checkout read thousands of revlogs one after another: fresh buffers for each were ~1 GB of
 * allocations on the history corpus (reusing them saves the allocations, not peak RSS). SPARE_COUNT
 * slots, largest first, free ones last: a fixed array (a push and a truncation per revlog re-grew
 * its backing store every time).
 */
const SPARE_COUNT = 2;
const spare: (Buffer | undefined)[] = [undefined, undefined];
/** larger buffers are not kept: holding two multi-MiB buffers per thread cost ~4 MB of peak RSS */
const SPARE_MAX_BYTES = 1 << 20;

function takeSpare(min: number): Buffer | undefined {
  // smallest first: the largest stays for the texts that need it
  for (let i = SPARE_COUNT - 1; i >= 0; i--) {
    const b = spare[i];
    if (b === undefined || b.length < min) continue;
    for (let j = i; j < SPARE_COUNT - 1; j++) spare[j] = spare[j + 1];
    spare[SPARE_COUNT - 1] = undefined;
    return b;
  }
  return undefined;
}

function giveSpare(b: Buffer): void {
  if (b.length > SPARE_MAX_BYTES) return;
  // its place in the order (after those as large); the smallest falls off the end
  let i = 0;
  while (i < SPARE_COUNT && spare[i] !== undefined && spare[i]!.length >= b.length) i++;
  if (i === SPARE_COUNT) return;
  for (let j = SPARE_COUNT - 1; j > i; j--) spare[j] = spare[j - 1];
  spare[i] = b;
}

/** A budget of 0 keeps no text: one empty cache for every such Revlog (filelogs read for one text). */
const NO_TEXTS = new TextCache(0, 4);

/** buildNow's plan and chunks, reused: it runs to its end without yielding (no arrays per file). */
const nowPlan: BuildPlan = { chain: [], base: undefined, baseIn: -1 };
const nowChunks: Uint8Array[] = [];
const NO_BYTES = new Uint8Array(0);

export class Revlog {
  private readonly cache: TextCache;
  /** the last text built into a reused buffer (revisionView) or returned by revision() */
  private lastRev = NULL_REV;
  private lastText: Uint8Array | undefined;
  /** which build buffer (0: buf0, 1: buf1) holds lastText (-1: neither) */
  private lastIn = -1;
  /** the two build buffers (fields, not an array: one object less per revlog read) */
  private buf0: Buffer | undefined;
  private buf1: Buffer | undefined;
  /** per rev, how many revisions delta against it (computed on first use) */
  private baseRefs: Uint32Array | undefined;

  private constructor(
    readonly name: string,
    readonly index: RevlogIndex,
    private readonly data: ByteSource,
    /** undefined for a revlog held in memory (fromBytes): its names are made when asked */
    private readonly files: { index: string; data: string } | undefined,
    cacheBytes: number,
  ) {
    this.cache = cacheBytes > 0 ? new TextCache(cacheBytes, 4) : NO_TEXTS;
  }

  get length(): number {
    return this.index.length;
  }

  /** NAME.i's path (`${name}.i` for a revlog held in memory) */
  get indexPath(): string {
    return this.files?.index ?? this.name + '.i';
  }

  /** NAME.d's path (`${name}.d` for a revlog held in memory) */
  get dataPath(): string {
    return this.files?.data ?? this.name + '.d';
  }

  static async open(indexPath: string, opts: RevlogOpenOptions = {}): Promise<Revlog> {
    const name = opts.name ?? indexPath.replace(/\.i$/, '');
    const dataPath = opts.dataPath ?? indexPath.replace(/\.i$/, '') + '.d';
    const wholeLimit = opts.wholeFileLimit ?? DEFAULT_WHOLE_FILE;
    const windowSize = opts.windowSize ?? 256 << 10;
    const io = opts.io ?? 'async';
    let index: RevlogIndex | undefined;
    let whole: Uint8Array | undefined;
    const f = await openForRead(indexPath, io);
    if (!f) {
      index = parseRevlogIndex(name, new Uint8Array(0)); // missing NAME.i: an empty revlog
    } else {
      try {
        const size = opts.indexSize ?? (await f.size());
        if (size <= wholeLimit) {
          whole = await readUpTo(f, size);
          index = parseRevlogIndex(name, whole);
        }
      } finally {
        await f.close();
      }
      index ??= await readRevlogIndex(indexPath, name, { readSize: opts.readSize, signal: opts.signal });
    }
    let data: ByteSource;
    if (index.inline)
      data = whole
        ? new MemorySource(whole, name)
        : new FileSource(indexPath, name, windowSize, io, undefined, 0);
    else data = new FileSource(dataPath, name + '.d', windowSize, io, opts.dataSize, wholeLimit);
    return new Revlog(name, index, data, { index: indexPath, data: dataPath }, opts.cacheBytes ?? 32 << 20);
  }

  /**
   * A revlog held in memory (tests, fuzzing, data received over the wire). dataBytes: NAME.d's
   * content, omitted when the file does not exist (or the revlog is inline).
   */
  static fromBytes(
    name: string,
    indexBytes: Uint8Array,
    dataBytes?: Uint8Array,
    opts: { cacheBytes?: number } = {},
  ): Revlog {
    const index = parseRevlogIndex(name, indexBytes);
    const data = index.inline
      ? new MemorySource(indexBytes, name)
      : new MemorySource(dataBytes ?? null, name + '.d');
    return new Revlog(name, index, data, undefined, opts.cacheBytes ?? 32 << 20);
  }

  /** Size of NAME.d (undefined when missing, or for an inline revlog). */
  async dataFileSize(): Promise<number | undefined> {
    if (this.index.inline) return undefined;
    return this.data.size();
  }

  /** The stored (compressed) chunk of rev. */
  async rawChunk(rev: number): Promise<Uint8Array> {
    this.index.checkRev(rev);
    const len = this.index.compressedLength(rev);
    if (len < 0)
      throw revlogError(this.name, 'bad-length', `${this.name}: rev ${rev}: negative compressed length`, {
        rev,
      });
    return this.data.read(this.index.chunkStart(rev), len);
  }

  /**
   * rev's chunk decompressed (a full text, or a delta against deltaParent(rev)). The output bound
   * comes from the index: a full text is rawSize bytes, a delta at most 12 bytes per hunk plus
   * what it inserts. 1 MiB of slack lets a slightly wrong size field still decompress (verify then
   * reports hg's "unpacked size is X, Y expected"), while a lying size or a zlib/zstd bomb stops
   * there instead of allocating what the bomb expands to.
   */
  async chunk(rev: number): Promise<Uint8Array> {
    return this.decodeChunk(rev, await this.rawChunk(rev));
  }

  /**
   * rev's chunk decoded: synchronously when its decoder is loaded (the common case: no promise
   * per chunk), else once the decoder is.
   */
  private decodeChunk(rev: number, raw: Uint8Array): Uint8Array | Promise<Uint8Array> {
    const bound = this.chunkBound(rev);
    const prep = chunkNeedsPreparation(raw);
    if (prep)
      return prep.then(
        () => this.decodeNow(rev, raw, bound),
        (e: unknown) => {
          throw this.wrap(e, rev);
        },
      );
    return this.decodeNow(rev, raw, bound);
  }

  /** The decoded size rev's chunk may reach (see chunk()). */
  private chunkBound(rev: number): number {
    const index = this.index;
    const rawSize = Math.max(0, index.rawSize(rev));
    const dp = index.deltaParent(rev);
    const baseSize = dp >= 0 && dp < index.length ? Math.max(0, index.rawSize(dp)) : 0;
    const sizeBound = dp === NULL_REV ? rawSize : 13 * (baseSize + rawSize + 1);
    return Math.min(MAX_TEXT_SIZE, Math.max(sizeBound, CHUNK_SLACK));
  }

  private decodeNow(rev: number, raw: Uint8Array, bound: number): Uint8Array {
    try {
      return decompressChunk(raw, bound);
    } catch (e) {
      throw this.wrap(e, rev);
    }
  }

  /**
   * The decoded chunks of chain (ascending revs), read like hg's _chunks with sparse-read: one
   * read per dense span of the data file instead of one per chunk. Chunks already in memory (a
   * file read whole, the read window) are taken and decoded without awaiting anything.
   */
  private async chainChunks(chain: readonly number[]): Promise<Uint8Array[]> {
    const index = this.index;
    const out: Uint8Array[] = new Array(chain.length);
    let i = 0;
    while (i < chain.length) {
      const first = chain[i]!;
      const spanStart = index.chunkStart(first);
      let spanEnd = spanStart + Math.max(0, index.compressedLength(first));
      let j = i + 1;
      for (; j < chain.length; j++) {
        const s = index.chunkStart(chain[j]!);
        const e = s + Math.max(0, index.compressedLength(chain[j]!));
        if (s < spanEnd || s - spanEnd > SPARSE_GAP || e - spanStart > SPAN_MAX) break;
        spanEnd = e;
      }
      if (this.data.readNow(spanStart, spanEnd - spanStart) === undefined)
        await this.data.prefetch(spanStart, spanEnd - spanStart);
      for (let k = i; k < j; k++) {
        const rev = chain[k]!;
        const len = index.compressedLength(rev);
        const raw =
          (len >= 0 ? this.data.readNow(index.chunkStart(rev), len) : undefined) ??
          (await this.rawChunk(rev));
        const decoded = this.decodeChunk(rev, raw);
        out[k] = decoded instanceof Promise ? await decoded : decoded;
      }
      i = j;
    }
    return out;
  }

  /** Revisions whose chunks rebuild rev, oldest first (hg _deltachain), stopping at a cached text. */
  deltaChain(rev: number, stopAtCached = false): { chain: number[]; cachedBase: number } {
    const chain: number[] = [];
    for (let r = rev; ;) {
      if (stopAtCached && r !== rev && this.cache.peek(r) !== undefined) {
        chain.reverse();
        return { chain, cachedBase: r };
      }
      chain.push(r);
      r = this.chainStep(rev, r);
      if (r === NULL_REV) break;
    }
    chain.reverse();
    return { chain, cachedBase: NULL_REV };
  }

  /**
   * Raw text of rev (hg rawdata()), node id checked unless check: false. The text is the caller's
   * (the reader keeps it only in its cache and never writes to it).
   */
  async revision(rev: number, opts: RevisionOptions = {}): Promise<Uint8Array> {
    this.index.checkRev(rev);
    const cached = this.cache.get(rev);
    if (cached !== undefined) return cached;
    if (rev === this.lastRev && this.lastIn < 0) return this.lastText!;
    return this.build(rev, false, opts.check !== false);
  }

  /**
   * Like revision(), but the text may live in a buffer the reader reuses: it is valid until the
   * next call on this Revlog, its clearCache() or close(). For readers that look at each text once (verify, hashing, writing
   * it out): no allocation per revision.
   */
  async revisionView(rev: number, opts: RevisionOptions = {}): Promise<Uint8Array> {
    this.index.checkRev(rev);
    if (rev === this.lastRev) return this.lastText!;
    const cached = this.cache.get(rev);
    if (cached !== undefined) return cached;
    return this.build(rev, true, opts.check !== false);
  }

  /**
   * revisionView() without a promise when the text can be built from memory right away (the
   * revlog read whole, the zstd decoder loaded: the common case when reading in order); undefined
   * when it cannot (call revisionView then). Throws what revisionView would reject with.
   */
  revisionViewNow(rev: number, opts: RevisionOptions = {}): Uint8Array | undefined {
    this.index.checkRev(rev);
    if (rev === this.lastRev) return this.lastText!;
    const cached = this.cache.get(rev);
    if (cached !== undefined) return cached;
    return this.buildNow(rev, true, opts.check !== false);
  }

  /**
   * rev's raw text handed to `sink` in order, in pieces, without ever building it whole (a large
   * file's checkout). See streamRevisions; resolves with the text's size.
   */
  async streamRevision(rev: number, sink: (piece: Uint8Array) => void): Promise<number> {
    return (await this.streamRevisions([rev], [sink]))[0]!;
  }

  /**
   * The raw texts of revs, whose delta chains all start at the same full snapshot, each handed to
   * its sink in order and in pieces, in one pass over that snapshot, without building any text
   * (large files: checkout, verify). The snapshot's stored chunk is read SNAPSHOT_READ at a time
   * and decompressed as a stream (zlib, zstd; stored chunks copied through); each revision's
   * chain of deltas is folded into one patch (mpatch_fold) whose fragments are ascending in the
   * snapshot, so its text is the snapshot's pieces copied or skipped between the deltas' bytes
   * (FoldedStream). Memory: SNAPSHOT_READ of input, the decoder's window, the decoded deltas (each
   * once), one `gather` buffer per revision, whatever the texts' sizes. Pieces smaller than a
   * quarter of `gather` bytes are gathered into one sink call (0: every slice as it comes). Each
   * node is hashed on the way (sha1 of the sorted parents, then the text: revlog.hash) and checked
   * after the last piece: on a mismatch this throws once the sink has seen every byte, so the
   * caller must discard what it made of them. Throws on the first problem of any revision.
   * Resolves with the texts' sizes.
   */
  async streamRevisions(
    revs: readonly number[],
    sinks: readonly ((piece: Uint8Array) => void)[],
    gather = STREAM_PIECE,
  ): Promise<number[]> {
    const index = this.index;
    const chains = revs.map((rev) => {
      index.checkRev(rev);
      this.checkReadable(rev);
      return this.deltaChain(rev).chain;
    });
    const base = chains[0]![0]!;
    if (chains.some((c) => c[0] !== base))
      throw new Error('streamRevisions: chains from different snapshots');
    const outs = revs.map((rev, k) => this.streamOutput(rev, sinks[k]!, gather));
    // every delta of the chains decoded once (chains of one file share most of theirs)
    const deltaRevs = [...new Set(chains.flatMap((c) => c.slice(1)))].sort((a, b) => a - b);
    const decoded = new Map<number, Uint8Array>();
    const chunks = deltaRevs.length ? await this.chainChunks(deltaRevs) : [];
    deltaRevs.forEach((r, k) => decoded.set(r, chunks[k]!));
    // a snapshot whose size the index does not give (negative: tolerated, as hg's rawsize()) is
    // decoded whole first: the folded patches are checked against its length
    const unsized = index.rawSize(base) < 0 ? (await this.chainChunks([base]))[0]! : undefined;
    const baseLength = unsized?.length ?? index.rawSize(base);
    const patches = chains.map((chain, k) => {
      if (chain.length === 1) return undefined; // the snapshot itself
      const deltas = chain.slice(1).map((r) => decoded.get(r)!);
      let size = baseLength;
      for (let j = 0; j < deltas.length; j++) {
        try {
          size = patchedSize(size, deltas[j]!);
        } catch (e) {
          throw this.wrap(e, chain[j + 1]!);
        }
      }
      try {
        return new FoldedStream(foldDeltas(baseLength, deltas), baseLength, outs[k]!.take);
      } catch (e) {
        throw this.wrap(e, revs[k]!);
      }
    });
    const feed = (piece: Uint8Array): void => {
      for (let k = 0; k < revs.length; k++) {
        const p = patches[k];
        if (!p) outs[k]!.take(piece);
        else {
          try {
            p.push(piece);
          } catch (e) {
            throw this.wrap(e, revs[k]!);
          }
        }
      }
    };
    if (unsized) feed(unsized);
    else await this.streamSnapshot(base, feed);
    return revs.map((rev, k) => {
      try {
        patches[k]?.end();
      } catch (e) {
        throw this.wrap(e, rev);
      }
      return outs[k]!.finish();
    });
  }

  /**
   * Where streamRevisions hands rev's pieces: through a `gather` buffer to the sink and into
   * rev's hash; finish() flushes, checks the node and returns the size.
   */
  private streamOutput(
    rev: number,
    sink: (piece: Uint8Array) => void,
    gather: number,
  ): { take: (piece: Uint8Array) => void; finish: () => number } {
    const [lo, hi] = this.sortedParents(rev);
    const sha = createHash('sha1').update(lo).update(hi);
    const buf = Buffer.allocUnsafe(Math.min(gather, Math.max(1, this.index.rawSize(rev))));
    let used = 0;
    let size = 0;
    const flush = (): void => {
      if (used === 0) return;
      sink(buf.subarray(0, used));
      used = 0;
    };
    return {
      take: (piece) => {
        sha.update(piece);
        size += piece.length;
        if (piece.length >= buf.length >> 2) {
          flush();
          sink(piece);
          return;
        }
        if (used + piece.length > buf.length) flush();
        buf.set(piece, used);
        used += piece.length;
      },
      finish: () => {
        flush();
        const computed = sha.digest();
        if (Buffer.compare(computed, this.index.node(rev)) !== 0) throw this.nodeMismatch(rev, computed);
        return size;
      },
    };
  }

  /**
   * A full snapshot's text handed to `take` as its stored chunk is read (SNAPSHOT_READ at a time)
   * and decoded by a streaming decoder; at most chunkBound(rev) bytes (a lying size or a bomb
   * stops there). Resolves with the text's size.
   */
  private async streamSnapshot(rev: number, take: (piece: Uint8Array) => void): Promise<number> {
    const index = this.index;
    const start = index.chunkStart(rev);
    const len = index.compressedLength(rev);
    const bound = this.chunkBound(rev);
    let size = 0;
    try {
      if (len === 0) return 0;
      const head = this.data.readNow(start, 1) ?? (await this.data.read(start, 1));
      const kind = chunkKind(head);
      const stored = (skip: number): AsyncGenerator<Uint8Array> => this.chunkPieces(start + skip, len - skip);
      const pieces =
        kind === 'zlib' || kind === 'zstd'
          ? decompressStream(kind === 'zlib' ? 'GZ' : 'ZS', stored(0))
          : stored(kind === 'stored' ? 1 : 0);
      for await (const piece of pieces) {
        size += piece.length;
        if (size > bound)
          throw new SluiceError('REVLOG', `revlog decompress error: more than ${bound} bytes`, {
            problem: 'decompress',
          });
        take(piece);
      }
    } catch (e) {
      if (e instanceof SluiceError && e.code === 'COMPRESSION')
        throw this.wrap(
          new SluiceError('REVLOG', `revlog decompress error: ${e.message}`, { problem: 'decompress' }),
          rev,
        );
      throw this.wrap(e, rev);
    }
    return size;
  }

  /** `len` bytes of the data file from `pos`, read SNAPSHOT_READ at a time as they are consumed. */
  private async *chunkPieces(pos: number, len: number): AsyncGenerator<Uint8Array> {
    for (let off = 0; off < len; off += SNAPSHOT_READ) {
      const n = Math.min(SNAPSHOT_READ, len - off);
      yield this.data.readNow(pos + off, n) ?? (await this.data.read(pos + off, n));
    }
  }

  /** The index entry's own checks and its flags, before any of rev's data is read. */
  private checkReadable(rev: number): void {
    const problem = this.index.checkEntry(rev);
    if (problem) {
      throw revlogError(this.name, problem.problem, `${this.name}: rev ${rev}: ${problem.message}`, {
        rev,
        reason: problem.message,
      });
    }
    checkRevisionFlags(this.name, rev, this.index.revFlags(rev));
  }

  /**
   * The chain back to a full text, or to a text at hand (the last one, a cached one), into `plan`
   * (buildNow's reused one, or a fresh one).
   */
  private planBuild(rev: number, plan: BuildPlan = { chain: [], base: undefined, baseIn: -1 }): BuildPlan {
    const chain = plan.chain;
    // rev, then down to a full text or a text at hand (not `length = 0` then push: V8 drops an
    // emptied array's backing store, and the push allocates it again)
    chain[0] = rev;
    chain.length = 1;
    let base: Uint8Array | undefined;
    let baseIn = -1;
    for (let r = this.chainStep(rev, rev); r !== NULL_REV; r = this.chainStep(rev, r)) {
      if (r === this.lastRev) {
        base = this.lastText;
        baseIn = this.lastIn;
        break;
      }
      base = this.cache.get(r);
      if (base !== undefined) break;
      chain.push(r);
    }
    chain.reverse();
    plan.base = base;
    plan.baseIn = baseIn;
    return plan;
  }

  /**
   * chainChunks without a promise, into `out`: true when every chunk is in memory (a file read
   * whole, the read window) and its decoder loaded; false otherwise (nothing decoded then).
   */
  private chainChunksNow(chain: readonly number[], out: Uint8Array[]): boolean {
    const index = this.index;
    out.length = chain.length;
    for (let k = 0; k < chain.length; k++) {
      const rev = chain[k]!;
      const len = index.compressedLength(rev);
      const raw = len >= 0 ? this.data.readNow(index.chunkStart(rev), len) : undefined;
      if (raw === undefined || chunkNeedsPreparation(raw)) return false;
      out[k] = raw;
    }
    for (let k = 0; k < chain.length; k++)
      out[k] = this.decodeNow(chain[k]!, out[k]!, this.chunkBound(chain[k]!));
    return true;
  }

  /** build() without a promise, when everything it needs is in memory; undefined otherwise. */
  private buildNow(rev: number, reuse: boolean, check: boolean): Uint8Array | undefined {
    this.checkReadable(rev);
    const plan = this.planBuild(rev, nowPlan);
    try {
      return this.chainChunksNow(plan.chain, nowChunks)
        ? this.assemble(rev, reuse, check, plan, nowChunks)
        : undefined;
    } finally {
      // the reused plan and chunks hold no text past the build
      plan.base = undefined;
      nowChunks.fill(NO_BYTES);
    }
  }

  private async build(rev: number, reuse: boolean, check: boolean): Promise<Uint8Array> {
    const now = this.buildNow(rev, reuse, check);
    if (now !== undefined) return now;
    const plan = this.planBuild(rev);
    return this.assemble(rev, reuse, check, plan, await this.chainChunks(plan.chain));
  }

  /** Builds rev's text from its chain's decoded chunks (on the plan's base when it has one). */
  private assemble(
    rev: number,
    reuse: boolean,
    check: boolean,
    plan: BuildPlan,
    chunks: Uint8Array[],
  ): Uint8Array {
    const { chain, baseIn } = plan;
    let base = plan.base;
    let first = 0;
    if (base === undefined) {
      base = chunks[0]!;
      first = 1;
    }
    const ndeltas = chunks.length - first;
    let size = base.length;
    for (let k = first; k < chunks.length; k++) {
      try {
        size = patchedSize(size, chunks[k]!);
      } catch (e) {
        throw this.wrap(e, chain[k]!);
      }
    }
    const folded: FoldedPatch | undefined =
      ndeltas > 1 ? foldDeltas(base.length, chunks.slice(first)) : undefined;

    // build: into the reused buffer that does not hold the base, or a fresh one
    let buf: Buffer;
    let into = -1;
    if (reuse) {
      into = baseIn === 0 ? 1 : 0;
      let b = into === 0 ? this.buf0 : this.buf1;
      if (b === undefined || b.length < PARENTS + size) {
        b = takeSpare(PARENTS + size) ?? Buffer.allocUnsafe(Math.max(PARENTS + size + (size >> 3), 4096));
        if (into === 0) this.buf0 = b;
        else this.buf1 = b;
      }
      buf = b;
    } else buf = Buffer.allocUnsafe(PARENTS + size);
    try {
      if (folded) applyFolded(base, folded, buf, PARENTS);
      else if (ndeltas === 1) applyDeltaInto(base, chunks[first]!, buf, PARENTS);
      else buf.set(base, PARENTS);
    } catch (e) {
      throw this.wrap(e, rev);
    }
    const text = buf.subarray(PARENTS, PARENTS + size);

    if (check) this.checkNodePrefixed(rev, buf, text);
    if (reuse) {
      this.lastRev = rev;
      this.lastText = text;
      this.lastIn = into;
      if (check && this.cache.keeps(size) && this.isSharedBase(rev)) this.cache.set(rev, Buffer.from(text));
    } else {
      this.lastRev = rev;
      this.lastText = text;
      this.lastIn = -1;
      if (check) this.cache.set(rev, text);
    }
    return text;
  }

  /** One step down rev's delta chain from r (NULL_REV at a full text); throws on a broken base. */
  private chainStep(rev: number, r: number): number {
    const base = this.index.base(r);
    if (base === r) return NULL_REV;
    if (base > r || base < 0) {
      throw revlogError(
        this.name,
        'base-out-of-range',
        `${this.name}: corrupted revlog, revision base above revision: ${r}, ${base}`,
        { rev: r },
      );
    }
    const next = this.index.generalDelta ? base : r - 1;
    if (next < 0) {
      throw revlogError(
        this.name,
        'base-out-of-range',
        `${this.name}: rev ${rev}: delta chain runs past revision 0`,
        {
          rev,
        },
      );
    }
    return next;
  }

  /** Whether a revision other than the next one deltas against rev (its text is worth caching). */
  private isSharedBase(rev: number): boolean {
    const index = this.index;
    if (!this.baseRefs) {
      const refs = new Uint32Array(index.length);
      for (let r = 0; r < index.length; r++) {
        const dp = index.deltaParent(r);
        if (dp >= 0 && dp < r) refs[dp]!++;
      }
      this.baseRefs = refs;
    }
    const next = rev + 1 < index.length && index.deltaParent(rev + 1) === rev ? 1 : 0;
    return this.baseRefs[rev]! > next;
  }

  /** checkNode() for a text built at PARENTS in buf: the parents go in front, one hash call. */
  private checkNodePrefixed(rev: number, buf: Buffer, text: Uint8Array): void {
    this.checkParentRange(rev);
    this.index.writeSortedParents(rev, buf); // no views of the parents' nodes per revision
    // a latin1 ('binary') string, not 'buffer': node:crypto's hash() takes 'buffer' through
    // normalizeEncoding's slow path (lower-casing the name twice per call: ~1-3 us, ~2% of a
    // checkout's CPU profile on Node 24); hex and binary are its fast cases
    const computed = hash('sha1', buf.subarray(0, PARENTS + text.length), 'binary');
    if (!this.index.nodeEqualsLatin1(rev, computed)) this.checkNode(rev, text);
  }

  private checkParentRange(rev: number): void {
    const index = this.index;
    const p1 = index.p1(rev);
    const p2 = index.p2(rev);
    const n = index.length;
    if (p1 < NULL_REV || p1 >= n || p2 < NULL_REV || p2 >= n) {
      throw revlogError(this.name, 'parent-out-of-range', `${this.name}: rev ${rev}: parent out of range`, {
        rev,
      });
    }
  }

  /** rev's parent nodes in the order revlog.hash feeds them to SHA-1 (the smaller first). */
  private sortedParents(rev: number): [Uint8Array, Uint8Array] {
    const index = this.index;
    this.checkParentRange(rev);
    const p1 = index.p1(rev);
    const p2 = index.p2(rev);
    const p1n = p1 === NULL_REV ? NULL_NODE : index.node(p1);
    const p2n = p2 === NULL_REV ? NULL_NODE : index.node(p2);
    return Buffer.compare(p1n, p2n) <= 0 ? [p1n, p2n] : [p2n, p1n];
  }

  private nodeMismatch(rev: number, computed: Buffer): Error {
    return revlogError(this.name, 'node-mismatch', `integrity check failed on ${this.name}:${rev}`, {
      rev,
      expected: this.index.nodeHex(rev),
      actual: computed.toString('hex'),
    });
  }

  /** hg checkhash(): throws 'node-mismatch' unless the text hashes to rev's node ('censored' for tombstones). */
  checkNode(rev: number, text: Uint8Array): void {
    const index = this.index;
    const [lo, hi] = this.sortedParents(rev);
    const computed = revisionNode(text, lo, hi);
    if (Buffer.compare(computed, index.node(rev)) === 0) return;
    if (index.revFlags(rev) & REVIDX_ISCENSORED && isCensoredText(text)) {
      // revlog.checkhash raises CensoredNodeError here; verify reports "censored file data"
      throw revlogError(this.name, 'censored', `${this.name}:${index.nodeHex(rev).slice(0, 12)}`, { rev });
    }
    throw this.nodeMismatch(rev, computed);
  }

  /** Drops cached texts, build buffers and the read window (a later read reads the file again). */
  clearCache(): void {
    this.data.release();
    this.cache.clear();
    this.lastRev = NULL_REV;
    this.lastText = undefined;
    this.lastIn = -1;
    if (this.buf0) giveSpare(this.buf0);
    if (this.buf1) giveSpare(this.buf1);
    this.buf0 = this.buf1 = undefined;
  }

  async close(): Promise<void> {
    this.clearCache();
    await this.data.close();
  }

  private wrap(e: unknown, rev: number): unknown {
    if (e instanceof SluiceError && e.code === 'REVLOG') {
      const d = (e.details ?? {}) as Record<string, unknown>;
      if (d.revlog === undefined) {
        const err = revlogError(
          this.name,
          (d.problem as never) ?? 'decompress',
          `${this.name}: rev ${rev}: ${e.message}`,
          { ...d, rev },
        );
        (err.details as Record<string, unknown>).reason = e.message;
        return err;
      }
    }
    return e;
  }
}

/** flagutil._processflagsfunc with no extension loaded: which revision flags can be read. */
export function checkRevisionFlags(name: string, rev: number, flags: number): void {
  if (flags === 0) return;
  if (flags & ~REVIDX_KNOWN_FLAGS) {
    const bad = '0x' + (flags & ~REVIDX_KNOWN_FLAGS).toString(16);
    throw revlogError(name, 'revision-flags', `incompatible revision flag '${bad}'`, { rev, flags });
  }
  for (const f of [REVIDX_ELLIPSIS, REVIDX_EXTSTORED]) {
    if (flags & f)
      throw revlogError(name, 'revision-flags', `missing processor for flag '0x${f.toString(16)}'`, {
        rev,
        flags,
      });
  }
}

/** storageutil.iscensoredtext: a filelog text whose metadata has a `censored` key. */
export function isCensoredText(text: Uint8Array): boolean {
  try {
    const meta = parseFilelogMeta(text);
    return meta !== null && meta.fields.has('censored');
  } catch {
    return false;
  }
}
