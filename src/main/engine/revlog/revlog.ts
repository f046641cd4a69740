// Reading revisions out of a revlog (revlog.py `_rawtext`, `_chunks`, `_deltachain`, `checkhash`).
//
// A Revlog holds the parsed index and reads chunks through a window over the data file (NAME.d, or
// NAME.i when inline), like hg's randomaccessfile. Texts are rebuilt along the delta chain, which
// stops early at any text already in a small LRU cache: reading revisions in order (verify, export)
// then costs one decompress + one patch per revision, and sparse-revlog snapshots that many later
// revisions delta against stay warm.
import { SluiceError } from '../errors';
import { chunkNeedsPreparation, decompressChunk } from './chunk';
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
import { applyDelta } from './mpatch';
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

  async read(pos: number, len: number): Promise<Uint8Array> {
    if (pos >= this.winPos && pos + len <= this.winPos + this.win.length) {
      return this.win.subarray(pos - this.winPos, pos - this.winPos + len);
    }
    const f = await this.handle();
    if (!f) {
      if (len === 0) return new Uint8Array(0);
      throw revlogError(this.label, 'missing-data-file', `revlog data file ${this.label} is missing`, {
        path: this.path,
        // what hg's open() raises, word for word
        reason: `[Errno 2] No such file or directory: ${pythonBytesRepr(this.path)}`,
      });
    }
    const size = this.fileSize!;
    if (pos + len > size) throw partialRead(this.label, pos, len, Math.max(0, size - pos));
    const want = Math.min(Math.max(len, this.windowSize), size - pos);
    const buf = Buffer.allocUnsafe(want);
    let got = 0;
    while (got < want) {
      const n = await f.read(buf, got, want - got, pos + got);
      if (n === 0) break;
      got += n;
    }
    if (got < len) throw partialRead(this.label, pos, len, got);
    this.win = buf.subarray(0, got);
    this.winPos = pos;
    return this.win.subarray(0, len);
  }

  async close(): Promise<void> {
    const f = this.file;
    this.file = undefined;
    this.opening = undefined;
    this.win = new Uint8Array(0);
    if (f) await f.close();
  }
}

/** Python's repr() of a bytes path (as in hg's IOError messages). */
function pythonBytesRepr(path: string): string {
  const bytes = Buffer.from(path, 'utf8');
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

/** LRU of reconstructed texts keyed by rev, bounded in bytes. */
class TextCache {
  private readonly map = new Map<number, Uint8Array>();
  private bytes = 0;
  constructor(private readonly budget: number) {}
  get(rev: number): Uint8Array | undefined {
    const t = this.map.get(rev);
    if (t !== undefined) {
      this.map.delete(rev);
      this.map.set(rev, t);
    }
    return t;
  }
  set(rev: number, text: Uint8Array): void {
    if (text.length > this.budget / 4 || this.map.has(rev)) return;
    this.map.set(rev, text);
    this.bytes += text.length;
    for (const [r, t] of this.map) {
      if (this.bytes <= this.budget) break;
      this.map.delete(r);
      this.bytes -= t.length;
    }
  }
  clear(): void {
    this.map.clear();
    this.bytes = 0;
  }
}

const DEFAULT_WHOLE_FILE = 4 << 20;
/** see Revlog.chunk */
const CHUNK_SLACK = 1 << 20;

export class Revlog {
  private readonly cache: TextCache;

  private constructor(
    readonly name: string,
    readonly index: RevlogIndex,
    private readonly data: ByteSource,
    readonly indexPath: string,
    readonly dataPath: string,
    cacheBytes: number,
  ) {
    this.cache = new TextCache(cacheBytes);
  }

  get length(): number {
    return this.index.length;
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
        : new FileSource(indexPath, name, windowSize, io, undefined);
    else data = new FileSource(dataPath, name + '.d', windowSize, io, opts.dataSize);
    return new Revlog(name, index, data, indexPath, dataPath, opts.cacheBytes ?? 32 << 20);
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
    return new Revlog(name, index, data, name + '.i', name + '.d', opts.cacheBytes ?? 32 << 20);
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
    const raw = await this.rawChunk(rev);
    const prep = chunkNeedsPreparation(raw);
    if (prep) await prep;
    const index = this.index;
    const rawSize = Math.max(0, index.rawSize(rev));
    const dp = index.deltaParent(rev);
    const baseSize = dp >= 0 && dp < index.length ? Math.max(0, index.rawSize(dp)) : 0;
    const sizeBound = dp === NULL_REV ? rawSize : 13 * (baseSize + rawSize + 1);
    try {
      return decompressChunk(raw, Math.min(MAX_TEXT_SIZE, Math.max(sizeBound, CHUNK_SLACK)));
    } catch (e) {
      throw this.wrap(e, rev);
    }
  }

  /** Revisions whose chunks rebuild rev, oldest first (hg _deltachain), stopping at a cached text. */
  deltaChain(rev: number, stopAtCached = false): { chain: number[]; cachedBase: number } {
    const index = this.index;
    const chain: number[] = [];
    let r = rev;
    for (;;) {
      if (stopAtCached && r !== rev && this.cache.get(r) !== undefined) {
        chain.reverse();
        return { chain, cachedBase: r };
      }
      chain.push(r);
      const base = index.base(r);
      if (base === r) break;
      if (base > r || base < 0) {
        throw revlogError(
          this.name,
          'base-out-of-range',
          `${this.name}: corrupted revlog, revision base above revision: ${r}, ${base}`,
          {
            rev: r,
          },
        );
      }
      r = index.generalDelta ? base : r - 1;
      if (r < 0) {
        throw revlogError(
          this.name,
          'base-out-of-range',
          `${this.name}: rev ${rev}: delta chain runs past revision 0`,
          { rev },
        );
      }
    }
    chain.reverse();
    return { chain, cachedBase: NULL_REV };
  }

  /** Raw text of rev (hg rawdata()), node id checked unless check: false. */
  async revision(rev: number, opts: RevisionOptions = {}): Promise<Uint8Array> {
    const index = this.index;
    index.checkRev(rev);
    const cached = this.cache.get(rev);
    if (cached !== undefined) return cached;
    const problem = index.checkEntry(rev);
    if (problem) {
      throw revlogError(this.name, problem.problem, `${this.name}: rev ${rev}: ${problem.message}`, {
        rev,
        reason: problem.message,
      });
    }
    checkRevisionFlags(this.name, rev, index.revFlags(rev));
    const { chain, cachedBase } = this.deltaChain(rev, true);
    let text: Uint8Array | undefined = cachedBase === NULL_REV ? undefined : this.cache.get(cachedBase);
    for (const r of chain) {
      const c = await this.chunk(r);
      if (text === undefined) {
        text = c;
        continue;
      }
      try {
        text = applyDelta(text, c);
      } catch (e) {
        throw this.wrap(e, r);
      }
    }
    text ??= new Uint8Array(0);
    if (opts.check !== false) {
      this.checkNode(rev, text);
      this.cache.set(rev, text);
    }
    return text;
  }

  /** hg checkhash(): throws 'node-mismatch' unless the text hashes to rev's node ('censored' for tombstones). */
  checkNode(rev: number, text: Uint8Array): void {
    const index = this.index;
    const p1 = index.p1(rev);
    const p2 = index.p2(rev);
    const n = index.length;
    if (p1 < NULL_REV || p1 >= n || p2 < NULL_REV || p2 >= n) {
      throw revlogError(this.name, 'parent-out-of-range', `${this.name}: rev ${rev}: parent out of range`, {
        rev,
      });
    }
    const p1n = p1 === NULL_REV ? NULL_NODE : index.node(p1);
    const p2n = p2 === NULL_REV ? NULL_NODE : index.node(p2);
    const computed = revisionNode(text, p1n, p2n);
    if (Buffer.compare(computed, index.node(rev)) === 0) return;
    if (index.revFlags(rev) & REVIDX_ISCENSORED && isCensoredText(text)) {
      // revlog.checkhash raises CensoredNodeError here; verify reports "censored file data"
      throw revlogError(this.name, 'censored', `${this.name}:${index.nodeHex(rev).slice(0, 12)}`, { rev });
    }
    throw revlogError(this.name, 'node-mismatch', `integrity check failed on ${this.name}:${rev}`, {
      rev,
      expected: index.nodeHex(rev),
      actual: computed.toString('hex'),
    });
  }

  clearCache(): void {
    this.cache.clear();
  }

  async close(): Promise<void> {
    this.cache.clear();
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
