// Appending revisions to a revlog v1, as hg 6.3.2 writes them (revlog.py `addgroup`,
// `_addrevision`, `_writeentry`, `_enforceinlinesize`, `compress`; revlogutils/deltas.py
// `isgooddeltainfo`; changelog.py `delayupdate`/`_finalize`).
//
// Every revision received is rebuilt (base text + delta), checked against its node id, and then
// stored: the changegroup's own delta when its base is stored and the chain stays within hg's
// limits, else a delta against p1 (prev without generaldelta) when that one is good, else a full
// snapshot. Inline revlogs move to `.i` + `.d` past 128 KiB of data, as hg does. Every file is
// recorded in the transaction before its first byte is written; the changelog's index entries
// (and inline data) stay in memory until the transaction closes, so a reader never sees a
// changeset whose manifest or files are missing.

import { TextBufferPool, TextCache } from './text-cache';
import {
  closeSync,
  lstatSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  unlinkSync,
  writeSync,
  writevSync,
  constants as fsConstants,
} from 'node:fs';
import * as zlib from 'node:zlib';
import { SluiceError, toSluiceError } from '../errors';
import { limitError, maxRevisionSize } from '../format/limits';
import {
  ZSTD_WASM_COMPRESS_MAX,
  nativeZstd,
  prepareZstd,
  zstdCompressChunk,
  zstdCompressReady,
} from '../codec/zstd';
import type { Transaction } from '../repo/transaction';
import { vfsPath } from '../repo/transaction';
import { openForUpdate, openReplacing, writeReplacing } from '../repo/vfs';
import { chunkNeedsPreparation, decompressChunk } from './chunk';
import {
  ENTRY_SIZE,
  FLAG_GENERALDELTA,
  FLAG_INLINE_DATA,
  MAX_TEXT_SIZE,
  NODE_SIZE,
  NULL_REV,
  REVLOGV1,
} from './constants';
import { isNullNode, parseRevlogIndex, type RevlogIndex } from './index';
import { applyDeltaInto, applyDeltas, onLineBoundaries, patchedSize, trivialDeltaText } from './mpatch';
import { checkNow, checkParts, type NodeChecks } from './node-checks';

/** revlog._maxinline: an inline revlog is split once its data reaches this size. */
export const MAX_INLINE = 131072;
/** revlogutils/constants SPARSE_REVLOG_MAX_CHAIN_LENGTH (format.maxchainlen's sparse-revlog default). */
export const SPARSE_MAX_CHAIN_LENGTH = 1000;
/** Room in front of a text for its sorted parents (the node hashes both). */
const PARENTS = 2 * NODE_SIZE;
/** Texts from this size up are built into recycled buffers (textBuffer). */
const RECYCLE_MIN = 256 << 10;
/** Texts from this size up to RECYCLE_MIN are built into buffers of the text pool; smaller ones come from Buffer's own pool. */
const POOL_MIN = 4 << 10;
const MAX_SPARE = 2;
/** Appended bytes are written once this many are queued (and at close, before reads, at a split). */
const WRITE_BATCH = 1 << 20;
/** A delta chain's chunks are read in one piece up to this span (chainChunks). */
const SPAN_READ_MAX = 8 << 20;
/**
 * Texts kept for later deltas besides the last one. A changegroup's deltas are mostly against the
 * revision just added (the last text, kept whatever its size); the cache serves the others
 * (snapshots, p2). Apply of the medium corpus's none-v2 bundle (loaded machine, Node 20): peak RSS
 * 159-171 MB with 16 MiB, 158-162 with 8, 141-150 with 4, CPU the same; the history corpus (deep
 * chains) 205-243 -> 186-206 MB, CPU 13.1-17.0 s against 12.1-17.4 s.
 */
const CACHE_BYTES = 4 << 20;
/**
 * Delayed changelog entries held in memory; past this they go to NAME.i.a (hg's _divert file for
 * a new changelog), so a changegroup of millions of changesets, or one that never ends, costs
 * disk (watched by the free space guard), not memory.
 */
const DELAY_MEMORY = 32 << 20;
/** deltas.LIMIT_DELTA2TEXT: a chain may read at most this many times the text size. */
const LIMIT_DELTA2TEXT = 2;

export interface RevlogFormat {
  generalDelta: boolean;
  sparse: boolean;
  compression: 'zlib' | 'zstd';
}

/** The format new revisions get in a repository with these requirements (localrepo.resolverevlogstorevfsoptions). */
export function revlogFormatFor(requirements: ReadonlySet<string>): RevlogFormat {
  const sparse = requirements.has('sparserevlog');
  return {
    generalDelta: sparse || requirements.has('generaldelta'),
    sparse,
    compression: requirements.has('revlog-compression-zstd') ? 'zstd' : 'zlib',
  };
}

/** One revision as a changegroup carries it. */
export interface IncomingRevision {
  node: Uint8Array;
  p1: Uint8Array;
  p2: Uint8Array;
  /** the node the delta applies to (null node: the delta is the full text) */
  deltaBase: Uint8Array;
  delta: Uint8Array;
  linkRev: number;
  flags: number;
}

export interface RevlogWriterOptions {
  /** hg's radix: `00changelog`, `00manifest`, `data/foo.txt`, `meta/dir/00manifest` */
  radix: string;
  tx: Transaction;
  format: RevlogFormat;
  /** the changelog: entries delayed until finalize(), never a delta chain (changelog._storedeltachains) */
  changelog?: boolean;
  /** told about each store file this writer creates (fncache) */
  onNewFile?: (storePath: string) => void;
  /** budget of texts kept for later deltas besides the last one (default CACHE_BYTES) */
  cacheBytes?: number;
  /** called by close() (the session forgets the writer) */
  onClose?: (w: RevlogWriter) => void;
  /** largest text add() accepts (default maxRevisionSize(); a session reads it once for all its writers) */
  maxText?: number;
  /** the caller knows NAME.i does not exist (its directory is being created): not looked up */
  absent?: boolean;
  /** NAME.i most likely exists (a pull into a repository with history): opened without asking first */
  likelyExists?: boolean;
  checks?: NodeChecks;
  /** the changelog: delayed bytes held in memory before they go to NAME.i.a (default DELAY_MEMORY) */
  delayMemory?: number;
  /** told the bytes of each revision before it is queued (may throw: the free space guard) */
  onWrite?: (bytes: number) => void;
  /** buffers of mid-sized texts shared with the session's other writers (default: this writer's own, keeping none) */
  textPool?: TextBufferPool;
}

interface PendingEntry {
  offset: number;
  flags: number;
  clen: number;
  rawSize: number;
  base: number;
  link: number;
  p1: number;
  p2: number;
  node: Buffer;
}

/** hg's _chaininfo: deltas to apply and compressed bytes to read to rebuild a rev. */
interface ChainInfo {
  chainLen: number;
  chainSize: number;
  chainBase: number;
}

function revlogError(radix: string, problem: string, message: string, extra: Record<string, unknown> = {}) {
  return new SluiceError('REVLOG', `${radix}: ${message}`, {
    revlog: radix,
    problem,
    reason: message,
    ...extra,
  });
}

function short(node: Uint8Array): string {
  return Buffer.from(node).toString('hex').slice(0, 12);
}

export class RevlogWriter {
  readonly radix: string;
  /** largest text add() accepts (format/limits.ts maxRevisionSize) */
  private readonly maxText: number;
  private readonly tx: Transaction;
  private readonly format: RevlogFormat;
  private readonly delayed: boolean;
  private readonly indexPath: string;
  /** NAME.d's path, encoded when first needed (most filelogs stay inline) */
  private get dataPath(): string {
    return vfsPath(this.tx.vfs, this.radix + '.d');
  }
  private readonly onNewFile: ((p: string) => void) | undefined;
  private readonly onClose: ((w: RevlogWriter) => void) | undefined;
  private old: RevlogIndex;
  private readonly origLength: number;
  private header: number;
  private inline: boolean;
  private readonly generalDelta: boolean;
  /** a manifest revlog: stored deltas cut at line boundaries (hg reads them as manifest lines) */
  private readonly lineDeltas: boolean;
  private readonly pending: PendingEntry[] = [];
  private readonly newNodes = new Map<string, number>();
  /** logical sizes of NAME.i and NAME.d (what the index accounts for) */
  private iSize: number;
  private dSize: number;
  private dataEnd: number;
  private ifd = -1;
  private dfd = -1;
  /** appended bytes not yet written to NAME.i / NAME.d (they follow what is on disk) */
  private unwritten = { i: new WriteQueue(), d: new WriteQueue() };
  /** delayed changelog: entries (+ inline data) not yet in NAME.i */
  private delayBuf: Buffer[] = [];
  /** where each delayed piece in memory starts (offsets in the delayed bytes) */
  private delayStarts: number[] = [];
  private delayLen = 0;
  /** the first `spilled` delayed bytes are in NAME.i.a (spillFd), the rest in delayBuf */
  private spilled = 0;
  private spillFd = -1;
  private readonly delayMemory: number;
  private readonly origIndexSize: number;
  /** the original NAME.i bytes (inline revlogs: their data lives there) */
  private oldBytes: Uint8Array;
  private readonly cache: TextCache;
  private readonly pool: TextBufferPool;
  /** buffers of large texts this writer allocated, and the evicted ones ready for reuse */
  private readonly owned = new WeakSet<ArrayBufferLike>();
  private readonly spare: Uint8Array[] = [];
  /** the last text added or rebuilt, kept whatever its size (the next revision's usual base) */
  private last: { rev: number; text: Uint8Array; borrowed: boolean } | undefined;
  /** revlog._chaininfocache */
  private readonly chainInfos = new Map<number, ChainInfo>();
  private journaled = false;
  private readonly existedIndex: boolean;
  private readonly checks: NodeChecks | undefined;
  private readonly onWrite: ((bytes: number) => void) | undefined;

  private constructor(opts: RevlogWriterOptions, indexBytes: Uint8Array | null) {
    this.maxText = opts.maxText ?? maxRevisionSize();
    this.radix = opts.radix;
    this.tx = opts.tx;
    this.format = opts.format;
    this.delayed = opts.changelog === true;
    this.onNewFile = opts.onNewFile;
    this.onClose = opts.onClose;
    this.checks = opts.checks;
    this.onWrite = opts.onWrite;
    this.delayMemory = opts.delayMemory ?? DELAY_MEMORY;
    this.indexPath = vfsPath(opts.tx.vfs, opts.radix + '.i');
    this.existedIndex = indexBytes !== null;
    this.oldBytes = indexBytes ?? new Uint8Array(0);
    // most writers of a clone start a new filelog: they share one empty index (never mutated)
    this.old = indexBytes === null ? emptyIndex() : parseRevlogIndex(opts.radix, this.oldBytes);
    this.origLength = this.old.length;
    if (this.old.length === 0) {
      // a new (or empty) revlog: v1, inline, generaldelta per the repository (never for the changelog)
      this.header =
        REVLOGV1 | FLAG_INLINE_DATA | (opts.format.generalDelta && !this.delayed ? FLAG_GENERALDELTA : 0);
    } else {
      this.header = this.old.header;
    }
    this.inline = (this.header & FLAG_INLINE_DATA) !== 0;
    this.generalDelta = (this.header & FLAG_GENERALDELTA) !== 0;
    this.lineDeltas = /(^|\/)00manifest$/.test(opts.radix);
    const n = this.old.length;
    this.dataEnd = n ? this.old.end(n - 1) : 0;
    this.iSize = this.inline ? n * ENTRY_SIZE + this.dataEnd : n * ENTRY_SIZE;
    this.dSize = this.inline ? 0 : this.dataEnd;
    this.origIndexSize = this.iSize;
    if (this.iSize > this.oldBytes.length) {
      throw revlogError(
        opts.radix,
        'truncated',
        `index is shorter than its entries (${this.oldBytes.length} < ${this.iSize})`,
      );
    }
    this.cache = new TextCache(opts.cacheBytes ?? CACHE_BYTES, 2, (t) => this.recycle(t));
    this.pool = opts.textPool ?? new TextBufferPool(0);
  }

  /** Opens NAME.i (reading it whole: index entries, and inline data) for appending. */
  static open(opts: RevlogWriterOptions): RevlogWriter {
    if (opts.absent) return new RevlogWriter(opts, null);
    let bytes: Buffer | null = null;
    const path = vfsPath(opts.tx.vfs, opts.radix + '.i');
    // most filelogs of a clone are new: asking first costs no exception (a failed open throws
    // one: ~40 µs more, per file); a pull's filelogs mostly exist: the open alone is cheaper
    if (!opts.likelyExists) {
      let exists: boolean;
      try {
        exists = lstatSync(path, { throwIfNoEntry: false }) !== undefined;
      } catch (e) {
        throw toSluiceError(e);
      }
      if (!exists) return new RevlogWriter(opts, null);
    }
    try {
      const fd = openSync(path, fsConstants.O_RDONLY | (fsConstants.O_NOFOLLOW ?? 0));
      try {
        bytes = readFileSync(fd);
      } finally {
        closeSync(fd);
      }
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw toSluiceError(e);
    }
    return new RevlogWriter(opts, bytes);
  }

  get length(): number {
    return this.origLength + this.pending.length;
  }

  get addedCount(): number {
    return this.pending.length;
  }

  rev(node: Uint8Array): number | undefined {
    if (isNullNode(node)) return NULL_REV;
    const r = this.old.rev(node);
    if (r !== undefined) return r;
    return this.newNodes.get(nodeKey(node));
  }

  /** [p1, p2] revs of rev. */
  parents(rev: number): [number, number] {
    const e = this.entry(rev);
    return [e.p1, e.p2];
  }

  node(rev: number): Uint8Array {
    return rev < this.origLength ? this.old.node(rev) : this.pending[rev - this.origLength]!.node;
  }

  private entry(rev: number): {
    offset: number;
    clen: number;
    rawSize: number;
    base: number;
    p1: number;
    p2: number;
  } {
    if (rev < this.origLength) {
      const o = this.old;
      return {
        offset: o.offset(rev),
        clen: o.compressedLength(rev),
        rawSize: o.rawSize(rev),
        base: o.base(rev),
        p1: o.p1(rev),
        p2: o.p2(rev),
      };
    }
    return this.pending[rev - this.origLength]!;
  }

  private deltaParent(rev: number): number {
    const base = this.entry(rev).base;
    if (base === rev) return NULL_REV;
    return this.generalDelta ? base : rev - 1;
  }

  /** hg's _chaininfo: (number of deltas, compressed bytes read) to rebuild rev. */
  private chainInfo(rev: number): ChainInfo {
    const known = this.chainInfos.get(rev);
    if (known) return known;
    // walk down to a rev whose chain is known (or the chain's base), then memoize on the way up
    const walk: number[] = [];
    let below: ChainInfo | undefined;
    for (let r = rev; ;) {
      const e = this.entry(r);
      walk.push(r);
      if (e.base === r) break;
      const next = this.generalDelta ? e.base : r - 1;
      if (next < 0 || next >= r)
        throw revlogError(this.radix, 'base-out-of-range', `rev ${r}: bad delta base ${e.base}`);
      below = this.chainInfos.get(next);
      if (below) break;
      r = next;
    }
    let info = below;
    for (let i = walk.length - 1; i >= 0; i--) {
      const r = walk[i]!;
      const clen = this.entry(r).clen;
      info = info
        ? { chainLen: info.chainLen + 1, chainSize: info.chainSize + clen, chainBase: info.chainBase }
        : { chainLen: 0, chainSize: clen, chainBase: r };
      this.chainInfos.set(r, info);
    }
    return info!;
  }

  /** revlog.issnapshot for sparse revlogs. */
  private isSnapshot(rev: number): boolean {
    for (let r = rev; ;) {
      if (r === NULL_REV) return true;
      const e = this.entry(r);
      if (e.base === r || e.base === NULL_REV) return true;
      if (e.base === e.p1 || e.base === e.p2) return false;
      r = e.base;
    }
  }

  /** The stored chunk of rev (from the files, or the delayed buffer). */
  private chunkBytes(rev: number): Uint8Array {
    const e = this.entry(rev);
    if (e.clen === 0) return new Uint8Array(0);
    if (rev >= this.origLength) this.flush();
    if (this.inline) {
      const pos = e.offset + (rev + 1) * ENTRY_SIZE;
      if (pos + e.clen <= this.oldBytes.length && rev < this.origLength)
        return this.oldBytes.subarray(pos, pos + e.clen);
      if (this.delayed && pos >= this.origIndexSize)
        return this.readDelayed(pos - this.origIndexSize, e.clen);
      return readAt(this.indexFd(), pos, e.clen, this.radix);
    }
    return readAt(this.dataFd(), e.offset, e.clen, this.radix + '.d');
  }

  /**
   * Bytes of the delayed entries: a view of the piece holding them (each piece is a whole entry
   * and its chunk). Joining all the pieces per read made a changegroup whose deltas name old
   * changesets as bases copy the whole delayed changelog once per changeset.
   */
  private readDelayed(pos: number, len: number): Uint8Array {
    // pieces are spilled whole, so an entry is either in the file or in memory
    if (pos < this.spilled) return readAt(this.spillFd, pos, len, this.radix + '.i.a');
    const starts = this.delayStarts;
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (starts[mid]! <= pos) lo = mid;
      else hi = mid - 1;
    }
    const piece = this.delayBuf[lo]!;
    const at = pos - starts[lo]!;
    if (at + len <= piece.length) return piece.subarray(at, at + len);
    // across pieces (not written so): the pieces it spans, joined
    let end = lo;
    while (end < starts.length && starts[end]! < pos + len) end++;
    const joined = Buffer.concat(this.delayBuf.slice(lo, end));
    return joined.subarray(at, at + len);
  }

  /**
   * The stored chunks of revs (a delta chain): from NAME.d in one read when they lie close
   * together (hg's sparse read, `_chunks`), else one by one.
   */
  private chainChunks(revs: readonly number[]): Uint8Array[] {
    if (this.inline || revs.length < 2) return revs.map((r) => this.chunkBytes(r));
    let start = Infinity;
    let end = 0;
    let total = 0;
    for (const r of revs) {
      const e = this.entry(r);
      start = Math.min(start, e.offset);
      end = Math.max(end, e.offset + e.clen);
      total += e.clen;
    }
    if (revs.some((r) => r >= this.origLength)) this.flush();
    const span = end - start;
    if (span > SPAN_READ_MAX || span > 4 * total + (64 << 10)) return revs.map((r) => this.chunkBytes(r));
    const all = readAt(this.dataFd(), start, span, this.radix + '.d');
    return revs.map((r) => {
      const e = this.entry(r);
      return all.subarray(e.offset - start, e.offset - start + e.clen);
    });
  }

  private async decompressed(rev: number, raw = this.chunkBytes(rev)): Promise<Uint8Array> {
    const prep = chunkNeedsPreparation(raw);
    if (prep) await prep;
    try {
      return decompressChunk(raw, MAX_TEXT_SIZE);
    } catch (e) {
      throw revlogError(this.radix, 'decompress', `rev ${rev}: ${(e as Error).message}`);
    }
  }

  private cached(rev: number): Uint8Array | undefined {
    return this.last?.rev === rev ? this.last.text : this.cache.get(rev);
  }

  /**
   * rev's text becomes the last one; the one before goes to the cache, or back to the spare
   * buffers. A borrowed text (a view of a received chunk) is copied before the cache keeps it:
   * a view would hold the whole upstream chunk.
   */
  private keep(rev: number, text: Uint8Array, borrowed = false): void {
    const prev = this.last;
    this.last = { rev, text, borrowed };
    if (!prev || prev.rev === rev) return;
    // new Uint8Array(view) copies (Buffer's slice() would be another view)
    const keptText =
      prev.borrowed && this.cache.keeps(prev.text.length) ? this.copyText(prev.text) : prev.text;
    if (!this.cache.set(prev.rev, keptText)) this.recycle(prev.text);
  }

  /**
   * The text of stored revision `node`, built by someone else (a pull rebuilds its local tip's
   * manifest while it waits for the server): kept as text() would keep it. Not checked here: a
   * wrong text fails the node check of the revision whose delta applies to it. False when `node`
   * is not a stored revision.
   */
  seed(node: Uint8Array, text: Uint8Array): boolean {
    const rev = this.old.rev(node);
    if (rev === undefined || rev < 0) return false;
    if (!this.cached(rev)) this.keep(rev, text);
    return true;
  }

  /**
   * Lets go of the texts kept for later deltas (the last one, the cache, the spare buffers): the
   * caller adds nothing more to this revlog for a while. A changegroup's manifest group is over
   * while its files arrive, yet its writer stays open until the transaction closes: holding its
   * texts held three to four manifests (30 MB for the large corpus's 99k files) through the whole
   * file group, where a pull or apply peaks. A later text() rebuilds from the stored chunks.
   */
  releaseTexts(): void {
    this.cache.forEach((t) => this.recycle(t));
    if (this.last && !this.last.borrowed) this.recycle(this.last.text);
    this.last = undefined;
    this.cache.clear();
    this.spare.length = 0;
  }

  /**
   * Full text of a stored revision, along its delta chain, stopping at a cached text. Valid until
   * the next add() (its buffer may be reused).
   */
  async text(rev: number): Promise<Uint8Array> {
    if (rev === NULL_REV) return new Uint8Array(0);
    const hit = this.cached(rev);
    if (hit) return hit;
    const chain: number[] = [];
    let base: Uint8Array | undefined;
    for (let r = rev; ;) {
      const c = this.cached(r);
      if (c && r !== rev) {
        base = c;
        break;
      }
      chain.push(r);
      const dp = this.deltaParent(r);
      if (dp === NULL_REV) break;
      if (dp >= r) throw revlogError(this.radix, 'base-out-of-range', `rev ${r}: delta parent ${dp}`);
      r = dp;
    }
    // the chain folded into one patch and the text built once (mpatch_fold), as the reader does
    const raws = this.chainChunks(chain);
    let i = chain.length - 1;
    base ??= await this.decompressed(chain[i]!, raws[i--]);
    const deltas: Uint8Array[] = [];
    for (; i >= 0; i--) deltas.push(await this.decompressed(chain[i]!, raws[i]));
    const out = applyDeltas(base, deltas);
    this.keep(rev, out);
    return out;
  }

  /**
   * revlog.addgroup for one revision: checks parents and delta base are known and the rebuilt
   * text hashes to the node, then stores it. Returns the rev and whether it was new.
   */
  async add(r: IncomingRevision): Promise<{ rev: number; added: boolean }> {
    const failed = this.checks?.failed();
    if (failed) throw failed;
    const existing = this.rev(r.node);
    if (existing !== undefined && existing !== NULL_REV) return { rev: existing, added: false };
    if (r.node.length !== NODE_SIZE || isNullNode(r.node))
      throw revlogError(this.radix, 'bad-node', 'null or malformed node id');
    const p1 = this.rev(r.p1);
    const p2 = this.rev(r.p2);
    if (p1 === undefined)
      throw revlogError(this.radix, 'unknown-parent', `unknown parent ${short(r.p1)} of ${short(r.node)}`);
    if (p2 === undefined)
      throw revlogError(this.radix, 'unknown-parent', `unknown parent ${short(r.p2)} of ${short(r.node)}`);
    const baseRev = this.rev(r.deltaBase);
    if (baseRev === undefined)
      throw revlogError(
        this.radix,
        'unknown-delta-base',
        `unknown delta base ${short(r.deltaBase)} of ${short(r.node)}`,
      );
    if (r.flags !== 0)
      throw revlogError(
        this.radix,
        'revision-flags',
        `unsupported revision flags 0x${r.flags.toString(16)} on ${short(r.node)}`,
      );
    if (!Number.isInteger(r.linkRev) || r.linkRev < 0)
      throw revlogError(this.radix, 'link-out-of-range', `bad linkrev ${r.linkRev}`);
    const mismatch = (computed: Uint8Array): SluiceError =>
      revlogError(
        this.radix,
        'node-mismatch',
        `integrity check failed on ${short(r.node)}: content hashes to ${short(computed)}`,
      );
    // storageutil.hashrevisionsha1: sha1(min(p1, p2) + max(p1, p2) + text)
    const swap = Buffer.compare(r.p1, r.p2) > 0;
    const lo = swap ? r.p2 : r.p1;
    const hi = swap ? r.p1 : r.p2;
    // a full text (most file revisions of a clone: their first) is the delta's own bytes: hashed
    // and stored from there, not copied into a text buffer of its own
    const trivial = baseRev === NULL_REV ? trivialDeltaText(r.delta) : undefined;
    let text: Uint8Array;
    if (trivial) {
      if (trivial.length > this.maxText)
        throw limitError(`${this.radix}: revision ${short(r.node)} of`, trivial.length, this.maxText);
      const bad = checkParts(lo, hi, trivial, r.node, mismatch);
      if (bad) throw bad;
      text = trivial;
    } else {
      const baseText = await this.text(baseRev);
      const badDelta = (e: unknown): SluiceError =>
        revlogError(
          this.radix,
          'bad-delta',
          `delta for ${short(r.node)} does not apply: ${(e as Error).message}`,
        );
      let size: number;
      try {
        size = patchedSize(baseText.length, r.delta);
      } catch (e) {
        throw badDelta(e);
      }
      // a small delta on a large base can still make a text past the bound (format/limits.ts)
      if (size > this.maxText)
        throw limitError(`${this.radix}: revision ${short(r.node)} of`, size, this.maxText);
      let whole: Uint8Array;
      try {
        whole = this.textBuffer(size);
        applyDeltaInto(baseText, r.delta, whole, PARENTS);
      } catch (e) {
        throw badDelta(e);
      }
      // the parents in front of the text: one SHA-1 call over the whole
      whole.set(lo, 0);
      whole.set(hi, NODE_SIZE);
      text = whole.subarray(PARENTS);
      const checked = this.checks
        ? this.checks.check(whole, r.node, mismatch)
        : checkNow(whole, r.node, mismatch);
      if (checked instanceof SluiceError) throw checked;
      if (checked) await checked; // room in the checks' ring; whole is copied there before this resolves
    }
    const rev = this.length;
    const stored = await this.chooseStorage(rev, text, p1, p2, baseRev, r.delta);
    this.append(
      {
        offset: this.dataEnd,
        flags: 0,
        clen: stored.chunk.length,
        rawSize: text.length,
        base: stored.base,
        link: r.linkRev,
        p1,
        p2,
        node: Buffer.from(r.node),
      },
      stored.chunk,
    );
    this.newNodes.set(nodeKey(r.node), rev);
    this.keep(rev, text, trivial !== undefined);
    return { rev, added: true };
  }

  /**
   * A buffer for a text of `size` bytes behind PARENTS bytes for its sorted parents (one SHA-1
   * call per node, as the reader does). Large texts (manifests) are built into buffers the text
   * cache let go of: a fresh megabyte-sized allocation per revision costs page faults and garbage
   * collection (measured: 6 ms per 1.6 MB manifest, against 0.5 ms into a reused buffer).
   */
  private textBuffer(size: number): Uint8Array {
    const want = PARENTS + size;
    if (want < POOL_MIN) return Buffer.allocUnsafe(want);
    if (size < RECYCLE_MIN) return this.pool.take(want);
    for (let i = 0; i < this.spare.length; i++) {
      const b = this.spare[i]!;
      if (b.length >= want) {
        this.spare.splice(i, 1);
        return b.subarray(0, want);
      }
    }
    // room for the next revision, usually a little larger
    const whole = new Uint8Array(want + (size >> 3));
    this.owned.add(whole.buffer);
    return whole.subarray(0, want);
  }

  /** A copy of a borrowed text (a view of a received chunk) for the cache, in a pool buffer when mid-sized. */
  private copyText(text: Uint8Array): Uint8Array {
    if (text.length < POOL_MIN || text.length >= RECYCLE_MIN) return new Uint8Array(text);
    const copy = this.pool.take(text.length);
    copy.set(text);
    return copy;
  }

  /** A text the cache evicted: its buffer is reused when this writer allocated it (no one else holds it). */
  private recycle(text: Uint8Array): void {
    const ab = text.buffer;
    if (!this.owned.has(ab)) return this.pool.give(text);
    if (this.spare.length >= MAX_SPARE) this.owned.delete(this.spare.shift()!.buffer);
    this.spare.push(new Uint8Array(ab));
  }

  /** deltacomputer.finddeltainfo, reduced to the candidates Sluice has: the received delta, a p1/prev delta, a snapshot. */
  private async chooseStorage(
    rev: number,
    text: Uint8Array,
    p1: number,
    p2: number,
    receivedBase: number,
    receivedDelta: Uint8Array,
  ): Promise<{ chunk: Uint8Array; base: number }> {
    // a text stored as it is (NUL-led, incompressible) is copied: its buffer goes back to a pool
    // while the chunk may still wait to be written (a new filelog's bytes wait for their batch)
    const full = async () => {
      const chunk = await this.compress(text);
      return { chunk: chunk === text ? Buffer.from(text) : chunk, base: rev };
    };
    if (this.delayed || rev === 0) return full(); // changelog: _storedeltachains = False
    const textLen = text.length;
    const candidates: { base: number; delta: () => Promise<Uint8Array> }[] = [];
    const computed = (base: number) => async () => this.simpleDelta(await this.text(base), text);
    // a received manifest delta cut mid-line (valid, but not hg's) is not stored as is
    if (
      this.lineDeltas &&
      receivedBase !== NULL_REV &&
      !onLineBoundaries(await this.text(receivedBase), receivedDelta)
    )
      receivedDelta = await computed(receivedBase)();
    if (this.generalDelta) {
      if (receivedBase !== NULL_REV)
        candidates.push({ base: receivedBase, delta: async () => receivedDelta });
      for (const p of [p1, p2]) {
        if (p !== NULL_REV && p !== receivedBase) candidates.push({ base: p, delta: computed(p) });
      }
    } else {
      const prev = rev - 1;
      if (receivedBase === prev) candidates.push({ base: prev, delta: async () => receivedDelta });
      else candidates.push({ base: prev, delta: computed(prev) });
    }
    for (const c of candidates) {
      if (this.generalDelta && this.entry(c.base).clen === 0 && this.deltaParent(c.base) !== NULL_REV)
        continue;
      const info = this.chainInfo(c.base);
      if (this.format.sparse && info.chainLen + 1 > SPARSE_MAX_CHAIN_LENGTH) continue;
      if (textLen * LIMIT_DELTA2TEXT < info.chainSize) continue;
      const delta = await c.delta();
      const chunk = await this.compress(delta);
      if (this.isGoodDelta(c.base, chunk.length, info, textLen, p1, p2)) {
        return { chunk, base: this.generalDelta ? c.base : info.chainBase };
      }
    }
    return full();
  }

  /** deltas.isgooddeltainfo. */
  private isGoodDelta(
    base: number,
    deltaLen: number,
    info: { chainLen: number; chainSize: number; chainBase: number },
    textLen: number,
    p1: number,
    p2: number,
  ): boolean {
    const chainStart = this.entry(info.chainBase).offset;
    const distance = this.dataEnd + deltaLen - chainStart;
    if (!this.format.sparse && Math.max(textLen * 4, 0) < distance) return false;
    if (textLen < deltaLen) return false;
    if (textLen * LIMIT_DELTA2TEXT < info.chainSize + deltaLen) return false;
    const maxChain = this.format.sparse ? SPARSE_MAX_CHAIN_LENGTH : 0;
    if (maxChain && maxChain < info.chainLen + 1) return false;
    let snapshotDepth: number | undefined;
    if (this.format.sparse && base !== p1 && base !== p2 && this.isSnapshot(base)) {
      snapshotDepth = info.chainLen + 1;
    }
    if (snapshotDepth !== undefined && textLen >> snapshotDepth < deltaLen) return false;
    if (snapshotDepth && this.entry(base).clen < deltaLen) return false;
    return true;
  }

  /** A one-hunk delta from base to text: common prefix and suffix kept, the middle replaced. */
  private simpleDelta(base: Uint8Array, text: Uint8Array): Uint8Array {
    let start = 0;
    const max = Math.min(base.length, text.length);
    while (start < max && base[start] === text[start]) start++;
    // hg's bdiff works on lines: cut at a line start so deltas look like hg's
    while (start > 0 && base[start - 1] !== 0x0a) start--;
    let endB = base.length;
    let endT = text.length;
    while (endB > start && endT > start && base[endB - 1] === text[endT - 1]) {
      endB--;
      endT--;
    }
    // a manifest's delta ends at a line end too (hg reads the inserted bytes as lines)
    while (
      this.lineDeltas &&
      endB < base.length &&
      !((endB === 0 || base[endB - 1] === 0x0a) && (endT === start || text[endT - 1] === 0x0a))
    ) {
      endB++;
      endT++;
    }
    if (start === endB && start === endT) return new Uint8Array(0);
    const out = Buffer.allocUnsafe(12 + endT - start);
    out.writeInt32BE(start, 0);
    out.writeInt32BE(endB, 4);
    out.writeInt32BE(endT - start, 8);
    out.set(text.subarray(start, endT), 12);
    // a sanity check costs little and keeps a bad delta from ever being stored
    if (patchedSize(base.length, out) !== text.length)
      throw revlogError(this.radix, 'bad-delta', 'internal delta error');
    return out;
  }

  /** revlog.compress: the engine's output when it is smaller, raw (`u`-marked unless it starts with NUL) otherwise. */
  private async compress(data: Uint8Array): Promise<Uint8Array> {
    if (data.length === 0) return data;
    let compressed: Uint8Array | null = null;
    if (this.format.compression === 'zstd') {
      if (data.length >= 50) compressed = await zstdCompress(data);
    } else if (data.length >= 44) {
      compressed = zlib.deflateSync(data);
    }
    if (compressed && compressed.length < data.length) return compressed;
    if (data[0] === 0) return data;
    const out = Buffer.allocUnsafe(data.length + 1);
    out[0] = 0x75; // 'u'
    out.set(data, 1);
    return out;
  }

  private packEntry(rev: number, e: PendingEntry): Buffer {
    // from Buffer's pool (Buffer.alloc makes one ArrayBuffer per entry); bytes 52-63 are padding
    const b = Buffer.allocUnsafe(ENTRY_SIZE).fill(0, 32 + NODE_SIZE);
    b.writeUIntBE(e.offset, 0, 6);
    b.writeUInt16BE(e.flags, 6);
    b.writeInt32BE(e.clen, 8);
    b.writeInt32BE(e.rawSize, 12);
    b.writeInt32BE(e.base, 16);
    b.writeInt32BE(e.link, 20);
    b.writeInt32BE(e.p1, 24);
    b.writeInt32BE(e.p2, 28);
    e.node.copy(b, 32);
    if (rev === 0) b.writeUInt32BE(this.header >>> 0, 0);
    return b;
  }

  private journal(): void {
    if (this.journaled) return;
    this.journaled = true;
    // written by flush(), before this writer's first byte
    this.tx.addDeferred(this.radix + '.i', this.iSize);
    if (!this.existedIndex) this.onNewFile?.(this.radix + '.i');
    if (!this.inline) {
      this.tx.addDeferred(this.radix + '.d', this.dSize);
      this.onNewFile?.(this.radix + '.d'); // fncache: a set, an entry already there changes nothing
    }
  }

  private append(e: PendingEntry, chunk: Uint8Array): void {
    this.onWrite?.(ENTRY_SIZE + chunk.length); // before anything of the revision is queued
    this.journal();
    const rev = this.length;
    this.pending.push(e);
    const entry = this.packEntry(rev, e);
    this.dataEnd += chunk.length;
    if (this.inline) {
      if (this.delayed) {
        this.delay(chunk.length ? Buffer.concat([entry, chunk], ENTRY_SIZE + chunk.length) : entry);
      } else {
        // entry and chunk go to the file side by side in one writev, not copied together
        this.unwritten.i.push(entry, this.iSize);
        if (chunk.length) this.unwritten.i.push(chunk, this.iSize + ENTRY_SIZE);
      }
      this.iSize += ENTRY_SIZE + chunk.length;
      if (!this.delayed) this.enforceInlineSize();
    } else {
      if (chunk.length) this.unwritten.d.push(chunk, this.dSize);
      this.dSize += chunk.length;
      if (this.delayed) this.delay(entry);
      else this.unwritten.i.push(entry, this.iSize);
      this.iSize += ENTRY_SIZE;
    }
    if (this.unwritten.i.bytes + this.unwritten.d.bytes >= WRITE_BATCH) this.flush();
  }

  /**
   * Writes what append() queued: one write per file per batch instead of one per revision (the
   * transaction recorded each file's length before its first byte was queued).
   */
  flush(): void {
    this.tx.flushJournal(); // the journal knows every file's length before its first byte
    if (this.unwritten.d.bytes) this.unwritten.d.writeTo(this.dataFd());
    if (this.unwritten.i.bytes) this.unwritten.i.writeTo(this.indexFd());
  }

  private delay(piece: Buffer): void {
    this.delayStarts.push(this.delayLen);
    this.delayBuf.push(piece);
    this.delayLen += piece.length;
    if (this.delayLen - this.spilled > this.delayMemory) this.spill();
  }

  /** The delayed pieces in memory go to NAME.i.a (journaled as a new file: an abort removes it). */
  private spill(): void {
    if (this.spillFd < 0) {
      this.tx.add(this.radix + '.i.a', 0);
      this.spillFd = openReplacing(this.indexPath + '.a');
    }
    writevAll(this.spillFd, this.delayBuf, this.spilled);
    this.spilled = this.delayLen;
    this.delayBuf = [];
    this.delayStarts = [];
  }

  /** changelog._finalize: the delayed entries go to NAME.i (a new changelog by rename, like _divert). */
  finalize(): void {
    this.flush();
    if (!this.delayed || this.delayLen === 0) return;
    if (this.spilled > 0) {
      this.finalizeSpilled();
      return;
    }
    const all = Buffer.concat(this.delayBuf, this.delayLen);
    this.delayBuf = [];
    this.delayStarts = [];
    this.delayLen = 0;
    if (this.origLength === 0) {
      const tmp = this.indexPath + '.a';
      writeReplacing(tmp, all);
      this.closeIndexFd();
      renameSync(tmp, this.indexPath);
    } else {
      writeAll(this.indexFd(), all, this.origIndexSize);
    }
    this.oldBytes = new Uint8Array(0);
    this.enforceInlineSize(true);
  }

  /** finalize() with the delayed bytes (partly) in NAME.i.a: renamed over a new index, else copied after it. */
  private finalizeSpilled(): void {
    this.spill();
    const fd = this.spillFd;
    const total = this.delayLen;
    this.spillFd = -1;
    this.spilled = 0;
    this.delayLen = 0;
    try {
      if (this.origLength === 0) {
        this.closeIndexFd();
        renameSync(this.indexPath + '.a', this.indexPath);
      } else {
        for (let at = 0; at < total; at += WRITE_BATCH) {
          const piece = readAt(fd, at, Math.min(WRITE_BATCH, total - at), this.radix + '.i.a');
          writeAll(this.indexFd(), piece, this.origIndexSize + at);
        }
        unlinkSync(this.indexPath + '.a');
      }
    } finally {
      closeSync(fd);
    }
    this.oldBytes = new Uint8Array(0);
    this.enforceInlineSize(true);
  }

  /** revlog._enforceinlinesize: past 128 KiB of data, NAME.d gets the data and NAME.i the bare index. */
  private enforceInlineSize(afterFinalize = false): void {
    if (!this.inline || this.dataEnd < MAX_INLINE) return;
    if (this.delayed && !afterFinalize) return;
    const iname = this.radix + '.i';
    const dname = this.radix + '.d';
    const troffset = this.tx.findOffset(iname);
    if (troffset === undefined)
      throw revlogError(this.radix, 'transaction', `${iname} not found in the transaction`);
    this.tx.add(dname, 0);
    this.onNewFile?.(dname);
    this.flush();
    const whole = readFileSync(this.indexPath);
    const n = this.length;
    const data = Buffer.allocUnsafe(this.dataEnd);
    const index = Buffer.allocUnsafe(n * ENTRY_SIZE);
    let trindex: number | undefined;
    for (let r = 0; r < n; r++) {
      const e = this.entry(r);
      const at = e.offset + r * ENTRY_SIZE;
      whole.copy(index, r * ENTRY_SIZE, at, at + ENTRY_SIZE);
      whole.copy(data, e.offset, at + ENTRY_SIZE, at + ENTRY_SIZE + e.clen);
      if (trindex === undefined && troffset <= at) trindex = r;
    }
    trindex ??= 0;
    this.header &= ~FLAG_INLINE_DATA;
    index.writeUInt32BE(this.header >>> 0, 0);
    this.closeIndexFd();
    this.closeDataFd();
    // vfs 'w' modes: a stale NAME.d (or a link planted there) is replaced, never written through
    writeReplacing(this.dataPath, data);
    const tmp = this.indexPath + '.sluice-split';
    writeReplacing(tmp, index);
    // as hg: the data file's truncation point is set before the index is replaced
    this.tx.replace(dname, this.entry(trindex).offset);
    renameSync(tmp, this.indexPath);
    this.tx.replace(iname, trindex * ENTRY_SIZE);
    this.inline = false;
    this.iSize = n * ENTRY_SIZE;
    this.dSize = this.dataEnd;
    // the old inline bytes no longer describe the files
    this.oldBytes = new Uint8Array(0);
    this.old = parseRevlogIndex(this.radix, index.subarray(0, this.origLength * ENTRY_SIZE));
  }

  private indexFd(): number {
    if (this.ifd < 0) this.ifd = openForUpdate(this.indexPath);
    return this.ifd;
  }
  private dataFd(): number {
    if (this.dfd < 0) this.dfd = openForUpdate(this.dataPath);
    return this.dfd;
  }
  private closeIndexFd(): void {
    if (this.ifd >= 0) closeSync(this.ifd);
    this.ifd = -1;
  }
  private closeDataFd(): void {
    if (this.dfd >= 0) closeSync(this.dfd);
    this.dfd = -1;
  }

  /**
   * Closes the file handles (the changelog's delayed entries stay until finalize()). A new inline
   * revlog nothing was written to yet goes whole to `handOver` when given (the session writes such
   * files in batches, behind one journal write), else it is written now.
   */
  close(handOver?: (file: NewFile) => void): void {
    this.releaseTexts(); // nothing is read after close: the buffers go back to the pool
    try {
      const q = this.unwritten.i;
      if (
        handOver &&
        this.inline &&
        !this.delayed &&
        !this.existedIndex &&
        this.ifd < 0 &&
        this.dfd < 0 &&
        this.unwritten.d.bytes === 0 &&
        q.bytes > 0 &&
        q.start === 0
      ) {
        handOver({ path: this.indexPath, pieces: q.take(), bytes: this.iSize });
      } else this.flush();
    } finally {
      this.closeAll();
    }
  }

  /** Closes the file handles, dropping what was not written yet (the transaction is rolling back). */
  abandon(): void {
    this.releaseTexts();
    this.unwritten = { i: new WriteQueue(), d: new WriteQueue() };
    this.closeAll();
  }

  private closeAll(): void {
    if (this.spillFd >= 0) closeSync(this.spillFd); // an abandoned transaction: the journal removes the file
    this.spillFd = -1;
    this.closeIndexFd();
    this.closeDataFd();
    this.onClose?.(this);
  }
}

let EMPTY_INDEX: RevlogIndex | undefined;
function emptyIndex(): RevlogIndex {
  return (EMPTY_INDEX ??= parseRevlogIndex('(new revlog)', new Uint8Array(0)));
}

function nodeKey(node: Uint8Array): string {
  return Buffer.from(node.buffer, node.byteOffset, node.length).toString('latin1');
}

/** A new revlog's whole content, not written yet (RevlogWriter.close's hand-over). */
export interface NewFile {
  path: string;
  pieces: Uint8Array[];
  bytes: number;
}

/**
 * Creates the files handed over by close(); the caller has flushed the transaction's journal
 * (which names every one of them) first.
 */
export function writeNewFiles(files: readonly NewFile[]): void {
  for (const f of files) {
    const fd = openForUpdate(f.path);
    try {
      writevAll(fd, f.pieces, 0);
    } finally {
      closeSync(fd);
    }
  }
}

/** Bytes appended to a file but not written yet: contiguous from `at`. */
class WriteQueue {
  private pieces: Uint8Array[] = [];
  bytes = 0;
  private at = 0;

  push(piece: Uint8Array, position: number): void {
    if (this.bytes === 0) this.at = position;
    else if (position !== this.at + this.bytes) throw new SluiceError('IO', 'revlog writes out of order');
    this.pieces.push(piece);
    this.bytes += piece.length;
  }

  /** where the queued bytes go in the file */
  get start(): number {
    return this.at;
  }

  /** The queued pieces, the queue left empty. */
  take(): Uint8Array[] {
    const pieces = this.pieces;
    this.pieces = [];
    this.bytes = 0;
    return pieces;
  }

  writeTo(fd: number): void {
    const pieces = this.pieces;
    const at = this.at;
    this.pieces = [];
    this.bytes = 0;
    writevAll(fd, pieces, at);
  }
}

/** At most this many buffers per writev(2) (IOV_MAX is 1024 on Linux and macOS). */
const IOV_BATCH = 1024;

/** Writes pieces contiguously from `position`, in as few writev calls as the kernel allows. */
function writevAll(fd: number, pieces: Uint8Array[], position: number): void {
  let i = 0;
  while (i < pieces.length) {
    const batch = pieces.slice(i, i + IOV_BATCH);
    let want = 0;
    for (const p of batch) want += p.length;
    const done = writevSync(fd, batch, position);
    position += done;
    if (done === want) {
      i += batch.length;
      continue;
    }
    // a short write: finish the piece it stopped in, then carry on with the next ones
    let skip = done;
    while (skip >= pieces[i]!.length) skip -= pieces[i++]!.length;
    const rest = pieces[i]!.subarray(skip);
    writeAll(fd, rest, position);
    position += rest.length;
    i++;
  }
}

function writeAll(fd: number, data: Uint8Array, position: number): void {
  let done = 0;
  while (done < data.length) done += writeSync(fd, data, done, data.length - done, position + done);
}

function readAt(fd: number, pos: number, len: number, label: string): Uint8Array {
  const buf = Buffer.allocUnsafe(len);
  let got = 0;
  while (got < len) {
    const n = readSync(fd, buf, got, len - got, pos + got);
    if (n === 0)
      throw new SluiceError('REVLOG', `partial read of revlog ${label}`, { problem: 'partial-read' });
    got += n;
  }
  return buf;
}

// zstd for revlog chunks at level 3 (hg's revlog.zstd.level default): codec/zstd.ts's kept
// encoder (node:zlib's where it has zstd, else the wasm one); chunks beyond the wasm encoder's
// bound without node:zlib's zstd take zlib, which every revlog reads whatever its configured
// engine (revlog.decompress).
async function zstdCompress(data: Uint8Array): Promise<Uint8Array | null> {
  if (data.length <= ZSTD_WASM_COMPRESS_MAX) {
    if (!zstdCompressReady()) await prepareZstd();
    return zstdCompressChunk(data, 3);
  }
  const native = nativeZstd();
  if (!native) return zlib.deflateSync(data);
  const level = native.constants.ZSTD_c_compressionLevel!;
  return (native as unknown as { zstdCompressSync: (d: Uint8Array, o: object) => Buffer }).zstdCompressSync(
    data,
    { params: { [level]: 3 } },
  );
}
