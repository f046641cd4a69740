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

import { TextBufferPool, TextBuffers, TextCache } from './text-cache';
import { closeSync, lstatSync, openSync, readFileSync, renameSync, constants as fsConstants } from 'node:fs';
import { SluiceError, toSluiceError } from '../errors';
import { limitError, maxRevisionSize } from '../format/limits';
import type { Transaction } from '../repo/transaction';
import { vfsPath } from '../repo/transaction';
import { openForUpdate, writeReplacing } from '../repo/vfs';
import { chunkNeedsPreparation, compressChunk, decompressChunk } from './chunk';
import {
  ENTRY_SIZE,
  FLAG_GENERALDELTA,
  FLAG_INLINE_DATA,
  MAX_TEXT_SIZE,
  NODE_SIZE,
  NULL_REV,
  REVIDX_ISCENSORED,
  REVLOGV1,
} from './constants';
import { isNullNode, parseRevlogIndex, type RevlogIndex } from './index';
import { NodeMap } from './node-map';
import { applyDeltaInto, applyDeltas, onLineBoundaries, patchedSize, trivialDeltaText } from './mpatch';
import { checkNow, checkParts, type NodeChecks } from './node-checks';
import { DelayedIndex } from './delayed-index';
import { packIndexEntry, splitInlineBytes, type PendingEntry } from './index-entry';
import { isGoodDelta, LIMIT_DELTA2TEXT, SPARSE_MAX_CHAIN_LENGTH, type ChainInfo } from './delta-choice';
import { namedRevlogError, shortNode } from './revlog-error';
import { simpleDelta } from './simple-delta';
import { isCensorable, receivedCensored } from './censored';
import { readAt, WriteQueue, type NewFile } from './write-io';
import type { IncomingRevision, RevlogFormat, RevlogWriterOptions } from './writer-options';

/** revlog._maxinline: an inline revlog is split once its data reaches this size. */
export const MAX_INLINE = 131072;
/** Room in front of a text for its sorted parents (the node hashes both). */
const PARENTS = 2 * NODE_SIZE;
/** Appended bytes are written once this many are queued (and at close, before reads, at a split). */
const WRITE_BATCH = 1 << 20;
/** A delta chain's chunks are read in one piece up to this span (chainChunks). */
const SPAN_READ_MAX = 8 << 20;
/**
 * Texts kept for later deltas besides the last one. A changegroup's deltas are mostly against the
 * revision just added (the last text, kept whatever its size); the cache serves the others
 * (snapshots, p2). Larger budgets raised peak memory for no CPU gain (docs/benchmarks/analysis.md).
 */
const CACHE_BYTES = 4 << 20;

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
  private readonly newNodes = new NodeMap();
  /** logical sizes of NAME.i and NAME.d (what the index accounts for) */
  private iSize: number;
  private dSize: number;
  private dataEnd: number;
  private ifd = -1;
  private dfd = -1;
  /** appended bytes not yet written to NAME.i / NAME.d (they follow what is on disk) */
  private unwritten = { i: new WriteQueue(), d: new WriteQueue() };
  /** the changelog's entries (+ inline data) not yet in NAME.i */
  private readonly delayedIndex: DelayedIndex | undefined;
  private readonly origIndexSize: number;
  /** the original NAME.i bytes (inline revlogs: their data lives there) */
  private oldBytes: Uint8Array;
  private readonly cache: TextCache;
  private readonly buffers: TextBuffers;
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
    this.indexPath = vfsPath(opts.tx.vfs, opts.radix + '.i');
    this.delayedIndex = this.delayed
      ? new DelayedIndex(opts.tx, opts.radix, this.indexPath, opts.delayMemory)
      : undefined;
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
      throw namedRevlogError(
        opts.radix,
        'truncated',
        `index is shorter than its entries (${this.oldBytes.length} < ${this.iSize})`,
      );
    }
    this.cache = new TextCache(opts.cacheBytes ?? CACHE_BYTES, 2, (t) => this.buffers.recycle(t));
    this.buffers = new TextBuffers(opts.textPool ?? new TextBufferPool(0));
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
    return this.newNodes.get(node);
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
        throw namedRevlogError(this.radix, 'base-out-of-range', `rev ${r}: bad delta base ${e.base}`);
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
        return this.delayedIndex!.read(pos - this.origIndexSize, e.clen);
      return readAt(this.indexFd(), pos, e.clen, this.radix);
    }
    return readAt(this.dataFd(), e.offset, e.clen, this.radix + '.d');
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
      throw namedRevlogError(this.radix, 'decompress', `rev ${rev}: ${(e as Error).message}`);
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
      prev.borrowed && this.cache.keeps(prev.text.length) ? this.buffers.copy(prev.text) : prev.text;
    if (!this.cache.set(prev.rev, keptText)) this.buffers.recycle(prev.text);
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
    this.cache.forEach((t) => this.buffers.recycle(t));
    if (this.last && !this.last.borrowed) this.buffers.recycle(this.last.text);
    this.last = undefined;
    this.cache.clear();
    this.buffers.dropSpares();
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
      if (dp >= r) throw namedRevlogError(this.radix, 'base-out-of-range', `rev ${r}: delta parent ${dp}`);
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
      throw namedRevlogError(this.radix, 'bad-node', 'null or malformed node id');
    const p1 = this.rev(r.p1);
    const p2 = this.rev(r.p2);
    if (p1 === undefined)
      throw namedRevlogError(
        this.radix,
        'unknown-parent',
        `unknown parent ${shortNode(r.p1)} of ${shortNode(r.node)}`,
      );
    if (p2 === undefined)
      throw namedRevlogError(
        this.radix,
        'unknown-parent',
        `unknown parent ${shortNode(r.p2)} of ${shortNode(r.node)}`,
      );
    const baseRev = this.rev(r.deltaBase);
    if (baseRev === undefined)
      throw namedRevlogError(
        this.radix,
        'unknown-delta-base',
        `unknown delta base ${shortNode(r.deltaBase)} of ${shortNode(r.node)}`,
      );
    // a censored file revision may come flagged (cg3); any other flag needs an extension
    if (r.flags !== 0 && !(r.flags === REVIDX_ISCENSORED && isCensorable(this.radix)))
      throw namedRevlogError(
        this.radix,
        'revision-flags',
        `unsupported revision flags 0x${r.flags.toString(16)} on ${shortNode(r.node)}`,
      );
    if (!Number.isInteger(r.linkRev) || r.linkRev < 0)
      throw namedRevlogError(this.radix, 'link-out-of-range', `bad linkrev ${r.linkRev}`);
    const baseSize = baseRev === NULL_REV ? 0 : this.entry(baseRev).rawSize;
    const censored = receivedCensored(this.radix, r, this.censoredRev(baseRev), baseSize);
    const mismatch = (computed: Uint8Array): SluiceError =>
      namedRevlogError(
        this.radix,
        'node-mismatch',
        `integrity check failed on ${shortNode(r.node)}: content hashes to ${shortNode(computed)}`,
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
        throw limitError(`${this.radix}: revision ${shortNode(r.node)} of`, trivial.length, this.maxText);
      const bad = censored ? undefined : checkParts(lo, hi, trivial, r.node, mismatch);
      if (bad) throw bad;
      text = trivial;
    } else {
      const baseText = await this.text(baseRev);
      const badDelta = (e: unknown): SluiceError =>
        namedRevlogError(
          this.radix,
          'bad-delta',
          `delta for ${shortNode(r.node)} does not apply: ${(e as Error).message}`,
        );
      let size: number;
      try {
        size = patchedSize(baseText.length, r.delta);
      } catch (e) {
        throw badDelta(e);
      }
      // a small delta on a large base can still make a text past the bound (format/limits.ts)
      if (size > this.maxText)
        throw limitError(`${this.radix}: revision ${shortNode(r.node)} of`, size, this.maxText);
      let whole: Uint8Array;
      try {
        whole = this.buffers.take(PARENTS + size);
        applyDeltaInto(baseText, r.delta, whole, PARENTS);
      } catch (e) {
        throw badDelta(e);
      }
      // the parents in front of the text: one SHA-1 call over the whole
      whole.set(lo, 0);
      whole.set(hi, NODE_SIZE);
      text = whole.subarray(PARENTS);
      // a tombstone does not hash to its node (hg checks no node on addgroup at all)
      const checked = censored
        ? undefined
        : this.checks
          ? this.checks.check(whole, r.node, mismatch)
          : checkNow(whole, r.node, mismatch);
      if (checked instanceof SluiceError) throw checked;
      if (checked) await checked; // room in the checks' ring; whole is copied there before this resolves
    }
    const rev = this.length;
    const stored = censored
      ? this.fullSnapshot(rev, text)
      : await this.chooseStorage(rev, text, p1, p2, baseRev, r.delta);
    this.append(
      {
        offset: this.dataEnd,
        flags: censored ? REVIDX_ISCENSORED : 0,
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
    this.newNodes.set(r.node, rev);
    this.keep(rev, text, trivial !== undefined);
    return { rev, added: true };
  }

  /**
   * A buffer for a text of `size` bytes behind PARENTS bytes for its sorted parents (one SHA-1
   * call per node, as the reader does). Large texts (manifests) are built into buffers the text
   * cache let go of: a fresh megabyte-sized allocation per revision costs page faults and garbage
   * collection (measured: 6 ms per 1.6 MB manifest, against 0.5 ms into a reused buffer).
   */
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
    const full = async () => this.fullSnapshot(rev, text);
    if (this.delayed || rev === 0) return full(); // changelog: _storedeltachains = False
    const textLen = text.length;
    const candidates: { base: number; delta: () => Promise<Uint8Array> }[] = [];
    const computed = (base: number) => async () =>
      simpleDelta(this.radix, await this.text(base), text, this.lineDeltas);
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
      if (this.censoredRev(c.base)) continue; // a tombstone is no delta base (deltas.candelta)
      const info = this.chainInfo(c.base);
      if (this.format.sparse && info.chainLen + 1 > SPARSE_MAX_CHAIN_LENGTH) continue;
      if (textLen * LIMIT_DELTA2TEXT < info.chainSize) continue;
      const delta = await c.delta();
      const chunk = compressChunk(this.format.compression, delta);
      if (this.isGoodDelta(c.base, chunk.length, info, textLen, p1, p2)) {
        // a delta stored as it is (NUL-led: small or incompressible, most of a real history's
        // manifest and file deltas) is copied: the received one is a view of a decoded wire
        // piece, which the write queue would keep whole until its batch is written
        return {
          chunk: chunk === delta ? Buffer.from(delta) : chunk,
          base: this.generalDelta ? c.base : info.chainBase,
        };
      }
    }
    return full();
  }

  /** rev's text stored whole, compressed when that is smaller. */
  private fullSnapshot(rev: number, text: Uint8Array): { chunk: Uint8Array; base: number } {
    const chunk = compressChunk(this.format.compression, text);
    return { chunk: chunk === text ? Buffer.from(text) : chunk, base: rev };
  }

  /** revlog.iscensored */
  private censoredRev(rev: number): boolean {
    if (rev === NULL_REV) return false;
    const flags = rev < this.origLength ? this.old.revFlags(rev) : this.pending[rev - this.origLength]!.flags;
    return (flags & REVIDX_ISCENSORED) !== 0;
  }

  /** deltas.isgooddeltainfo for a delta against `base` (hg's snapshot rules under sparse-revlog). */
  private isGoodDelta(
    base: number,
    deltaLen: number,
    info: ChainInfo,
    textLen: number,
    p1: number,
    p2: number,
  ) {
    const sparse = this.format.sparse;
    const snapshot = sparse && base !== p1 && base !== p2 && this.isSnapshot(base);
    return isGoodDelta({
      deltaLen,
      textLen,
      chain: info,
      distance: this.dataEnd + deltaLen - this.entry(info.chainBase).offset,
      sparse,
      snapshotDepth: snapshot ? info.chainLen + 1 : undefined,
      baseChunkLen: this.entry(base).clen,
    });
  }

  private journal(): void {
    if (this.journaled) return;
    this.journaled = true;
    // written by flush(), before this writer's first byte
    this.tx.addDeferred(this.radix + '.i', this.iSize);
    // an empty NAME.i counts as new (fncachevfs): hg's rollback and strip truncate revlogs to
    // nothing and drop their fncache entries, and a store file missing there is never streamed
    if (!this.existedIndex || this.origIndexSize === 0) this.onNewFile?.(this.radix + '.i');
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
    const entry = packIndexEntry(rev, e, this.header);
    this.dataEnd += chunk.length;
    if (this.inline) {
      if (this.delayed) {
        this.delayedIndex!.push(
          chunk.length ? Buffer.concat([entry, chunk], ENTRY_SIZE + chunk.length) : entry,
        );
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
      if (this.delayed) this.delayedIndex!.push(entry);
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

  /** changelog._finalize: the delayed entries go to NAME.i (a new changelog by rename, like _divert). */
  finalize(): void {
    this.flush();
    if (!this.delayedIndex || this.delayedIndex.length === 0) return;
    this.delayedIndex.finalize({
      newIndex: this.origLength === 0,
      indexPath: this.indexPath,
      at: this.origIndexSize,
      indexFd: () => this.indexFd(),
      closeIndexFd: () => this.closeIndexFd(),
    });
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
      throw namedRevlogError(this.radix, 'transaction', `${iname} not found in the transaction`);
    this.tx.add(dname, 0);
    this.onNewFile?.(dname);
    this.flush();
    this.header &= ~FLAG_INLINE_DATA;
    const n = this.length;
    const { index, data, trindex } = splitInlineBytes(
      readFileSync(this.indexPath),
      n,
      this.dataEnd,
      (r) => this.entry(r),
      this.header,
      troffset,
    );
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
    this.delayedIndex?.close();
    this.closeIndexFd();
    this.closeDataFd();
    this.onClose?.(this);
  }
}

let EMPTY_INDEX: RevlogIndex | undefined;
function emptyIndex(): RevlogIndex {
  return (EMPTY_INDEX ??= parseRevlogIndex('(new revlog)', new Uint8Array(0)));
}
