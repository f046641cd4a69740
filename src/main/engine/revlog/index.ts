// Revlog v1 index: the 64-byte entries of NAME.i (hg 6.3.2 revlog.py `_loadindex`, pure/parsers.py
// `IndexObject`/`InlinedIndexObject`, hg-stream-formats.md §8.1).
//
// The parser is incremental: bytes arrive in pieces of any size (hg's test-parseindex.t reads with
// 1-byte reads; inline entries sit at arbitrary offsets, so an entry straddles any read buffer) and
// each piece is consumed with carry-over. Entries are kept as their raw 64 bytes in one buffer, fields
// are decoded on access: an index costs 64 bytes per revision, like hg's C index.
import { openRevlogFile } from './file-io';
import { createHash } from 'node:crypto';
import {
  ENTRY_SIZE,
  FLAG_GENERALDELTA,
  FLAG_INLINE_DATA,
  NODE_SIZE,
  NULL_REV,
  REVLOGV1,
  REVLOGV1_FLAGS,
  REVLOGV0,
  REVLOGV2,
  CHANGELOGV2,
} from './constants';
import { revlogError, type RevlogProblemKind } from './revlog-error';
import { NodeMap } from './node-map';
import { SluiceError } from '../errors';

/** One decoded index entry (for tests, debug output and fuzzing; hot paths use the accessors). */
export interface RevlogEntry {
  rev: number;
  offset: number;
  flags: number;
  compressedLength: number;
  rawSize: number;
  base: number;
  link: number;
  p1: number;
  p2: number;
  node: string; // hex
}

/** A structural problem of one entry, as `hg verify` would find it; `validate()` throws the first. */
export interface RevlogIndexProblem {
  rev: number;
  problem: RevlogProblemKind;
  message: string;
}

/** A RevlogIndex as structured-clonable data (RevlogIndex.toData / fromData). */
export interface RevlogIndexData {
  name: string;
  header: number;
  entries: Uint8Array;
  length: number;
  inlineDataPos: Float64Array | null;
  indexFileSize: number;
}

/**
 * rev() answers this many lookups of an index by scanning its nodes (scanRev) before it builds the
 * node map: one lookup (update's working parent, the manifest of a revision) then compares bytes
 * instead of filling the node map for every revision (history corpus, 9,977 manifests: ~1 ms
 * against 12-14 ms with a string-keyed map, Node 24); a caller that looks up many nodes pays a few
 * scans once.
 */
const SCANNED_LOOKUPS = 4;
/** scanRev compares entry by entry up to this many entries, and searches natively above */
const LOOP_SCAN_MAX = 32;
/** where an entry's node starts in its 64 bytes */
const NODE_FIELD = 32;

export class RevlogIndex {
  /** u32 header: flags << 16 | version (0 for an empty revlog's defaults, see `empty`). */
  readonly header: number;
  readonly length: number;
  private nodemap: NodeMap | undefined;
  /** rev() lookups answered by a scan so far (the map is built past SCANNED_LOOKUPS) */
  private scannedLookups = 0;
  /** the entries as a Buffer, for node strings without a view object per call */
  private asBuffer: Buffer | undefined;

  /**
   * @param entries exactly `length * 64` bytes (fields are read from its bytes: no DataView per
   *   index, which was one more object per filelog read)
   * @param inlineDataPos for inline revlogs, the position in NAME.i where each chunk starts; null:
   *   worked out from the chunk lengths when asked (see inlineChunkPos)
   */
  constructor(
    readonly name: string,
    header: number,
    private readonly entries: Uint8Array,
    length: number,
    private inlineDataPos: Float64Array | null,
    /** bytes of NAME.i consumed by the parser (the whole file) */
    readonly indexFileSize: number,
  ) {
    this.header = header;
    this.length = length;
    if (entries.length < length * ENTRY_SIZE)
      throw new RangeError(`${name}: index entries shorter than ${length} entries`);
  }

  // the header's parts read when asked: three fields less per index (one per filelog read)
  get version(): number {
    return this.header & 0xffff;
  }
  get inline(): boolean {
    return (this.header & FLAG_INLINE_DATA) !== 0;
  }
  get generalDelta(): boolean {
    return (this.header & FLAG_GENERALDELTA) !== 0;
  }

  /** 48-bit data offset; rev 0's bytes hold the header, its offset is 0 by definition. */
  offset(rev: number): number {
    if (rev === 0) return 0;
    const e = this.entries;
    const b = rev * ENTRY_SIZE;
    return readU32(e, b) * 0x10000 + ((e[b + 4]! << 8) | e[b + 5]!);
  }
  revFlags(rev: number): number {
    const e = this.entries;
    const b = rev * ENTRY_SIZE + 6;
    return (e[b]! << 8) | e[b + 1]!;
  }
  compressedLength(rev: number): number {
    return readI32(this.entries, rev * ENTRY_SIZE + 8);
  }
  /** Length of the full revision text (negative = unknown, tolerated like hg's rawsize()). */
  rawSize(rev: number): number {
    return readI32(this.entries, rev * ENTRY_SIZE + 12);
  }
  base(rev: number): number {
    return readI32(this.entries, rev * ENTRY_SIZE + 16);
  }
  link(rev: number): number {
    return readI32(this.entries, rev * ENTRY_SIZE + 20);
  }
  p1(rev: number): number {
    return readI32(this.entries, rev * ENTRY_SIZE + 24);
  }
  p2(rev: number): number {
    return readI32(this.entries, rev * ENTRY_SIZE + 28);
  }
  /** A view into the index buffer: copy it if you keep it past the index. */
  node(rev: number): Uint8Array {
    const b = rev * ENTRY_SIZE + 32;
    return this.entries.subarray(b, b + NODE_SIZE);
  }
  nodeHex(rev: number): string {
    const b = rev * ENTRY_SIZE + 32;
    return this.bytes().toString('hex', b, b + NODE_SIZE);
  }
  /** rev's node as a 20-character latin1 string (a Map key; nodeKey() of the node's bytes). */
  nodeKey(rev: number): string {
    const b = rev * ENTRY_SIZE + 32;
    return this.bytes().toString('latin1', b, b + NODE_SIZE);
  }
  /** Whether rev's node equals the 20 bytes of `node` at `at` (no view of rev's node). */
  nodeEquals(rev: number, node: Uint8Array, at = 0): boolean {
    const b = rev * ENTRY_SIZE + 32;
    const e = this.entries;
    for (let k = 0; k < NODE_SIZE; k++) if (e[b + k] !== node[at + k]) return false;
    return true;
  }
  /** nodeEquals for a node given as a 20-char latin1 string (a digest from hash(..., 'binary')). */
  nodeEqualsLatin1(rev: number, node: string): boolean {
    const b = rev * ENTRY_SIZE + 32;
    const e = this.entries;
    if (node.length !== NODE_SIZE) return false;
    for (let k = 0; k < NODE_SIZE; k++) if (e[b + k] !== node.charCodeAt(k)) return false;
    return true;
  }
  /**
   * Writes the sorted parent nodes of rev (the smaller first; the null node for NULL_REV) into
   * `out` at 0 and 20: what revlog.hash feeds SHA-1 before the text. Parents must be in range.
   * Byte loops over the entries: no closure or Buffer view per call (one call per file checked out).
   */
  writeSortedParents(rev: number, out: Uint8Array): void {
    const p1 = this.p1(rev);
    const p2 = this.p2(rev);
    let lo = p1;
    let hi = p2;
    // the null node sorts first; else the smaller node
    if (p2 === NULL_REV || (p1 !== NULL_REV && this.compareNodes(p1, p2) > 0)) {
      lo = p2;
      hi = p1;
    }
    this.copyNode(lo, out, 0);
    this.copyNode(hi, out, NODE_SIZE);
  }
  /** memcmp of the nodes of revs a and b */
  private compareNodes(a: number, b: number): number {
    const e = this.entries;
    const x = a * ENTRY_SIZE + 32;
    const y = b * ENTRY_SIZE + 32;
    for (let k = 0; k < NODE_SIZE; k++) if (e[x + k] !== e[y + k]) return e[x + k]! - e[y + k]!;
    return 0;
  }
  /** rev's node (zeros for NULL_REV) into out at `at` */
  copyNode(rev: number, out: Uint8Array, at: number): void {
    const e = this.entries;
    const b = rev * ENTRY_SIZE + 32;
    // a loop for the zeros too: Buffer.fill with a range allocates
    for (let k = 0; k < NODE_SIZE; k++) out[at + k] = rev === NULL_REV ? 0 : e[b + k]!;
  }
  /** Whether rev's node is the null node (all zeros), without a view of it. */
  isNullAt(rev: number): boolean {
    const e = this.entries;
    const b = rev * ENTRY_SIZE + 32;
    for (let k = 0; k < NODE_SIZE; k++) if (e[b + k] !== 0) return false;
    return true;
  }
  private bytes(): Buffer {
    return (this.asBuffer ??= Buffer.from(
      this.entries.buffer,
      this.entries.byteOffset,
      this.length * ENTRY_SIZE,
    ));
  }
  /** Position of rev's chunk in the data file (NAME.d, or NAME.i when inline). */
  chunkStart(rev: number): number {
    if (this.inline) return this.offset(rev) + (rev + 1) * ENTRY_SIZE;
    return this.offset(rev);
  }
  /** hg's end(rev): logical end of rev's chunk. */
  end(rev: number): number {
    return this.offset(rev) + this.compressedLength(rev);
  }
  /** Where the parser actually found rev's chunk inside an inline NAME.i. */
  inlineChunkPos(rev: number): number | undefined {
    return this.inline ? this.inlinePositions()[rev] : undefined;
  }
  /**
   * Every chunk's position in an inline NAME.i: after its entry and all the chunks before (the
   * lengths the parser skipped, checked non-negative there), worked out on first use instead of
   * an array per parse (nothing reads them on the hot paths).
   */
  private inlinePositions(): Float64Array {
    if (this.inlineDataPos) return this.inlineDataPos;
    const pos = new Float64Array(this.length);
    for (let r = 0, at = 0; r < this.length; r++) {
      at += ENTRY_SIZE;
      pos[r] = at;
      at += this.compressedLength(r);
    }
    return (this.inlineDataPos = pos);
  }

  /** hg's deltaparent(): the rev the chunk is a delta against, NULL_REV for a full text. */
  deltaParent(rev: number): number {
    const base = this.base(rev);
    if (base === rev) return NULL_REV;
    return this.generalDelta ? base : rev - 1;
  }

  /** Revision of a 20-byte node id; NULL_REV for the null node; undefined when absent. */
  rev(node: Uint8Array): number | undefined {
    if (node.length !== NODE_SIZE) return undefined;
    if (isNullNode(node)) return NULL_REV;
    // a command that looks up a node or two (update's working parent, a bookmark) scans the
    // entries' bytes instead of making a map slot for every revision
    if (!this.nodemap && this.scannedLookups < SCANNED_LOOKUPS) {
      this.scannedLookups++;
      return this.scanRev(node);
    }
    if (!this.nodemap) {
      const map = new NodeMap(this.length);
      // first occurrence wins, as a duplicated node resolves to its first rev in hg's radix tree
      for (let r = this.length - 1; r >= 0; r--) map.set(this.entries, r, r * ENTRY_SIZE + NODE_FIELD);
      this.nodemap = map;
    }
    return this.nodemap.get(node);
  }

  /**
   * rev() by a search of the entries' bytes for the 20 bytes of `node` at `at` (a duplicated node:
   * its first rev). A long index is searched by Buffer.indexOf (native; only a match at an
   * entry's node field counts), a short one (a filelog, once per file of a checkout) by a loop
   * that allocates nothing.
   */
  scanRev(node: Uint8Array, at = 0): number | undefined {
    if (node.length < at + NODE_SIZE) return undefined;
    if (this.length <= LOOP_SCAN_MAX) {
      for (let r = 0; r < this.length; r++) if (this.nodeEquals(r, node, at)) return r;
      return undefined;
    }
    const entries = this.bytes();
    const needle = node.subarray(at, at + NODE_SIZE);
    for (let o = entries.indexOf(needle, NODE_FIELD); o >= 0; o = entries.indexOf(needle, o + 1))
      if (o % ENTRY_SIZE === NODE_FIELD) return (o - NODE_FIELD) / ENTRY_SIZE;
    return undefined;
  }

  entry(rev: number): RevlogEntry {
    this.checkRev(rev);
    return {
      rev,
      offset: this.offset(rev),
      flags: this.revFlags(rev),
      compressedLength: this.compressedLength(rev),
      rawSize: this.rawSize(rev),
      base: this.base(rev),
      link: this.link(rev),
      p1: this.p1(rev),
      p2: this.p2(rev),
      node: this.nodeHex(rev),
    };
  }

  checkRev(rev: number): void {
    if (!Number.isInteger(rev) || rev < 0 || rev >= this.length) {
      throw revlogError(this.name, 'rev-out-of-range', `revlog index out of range: ${rev} in ${this.name}`, {
        rev,
      });
    }
  }

  /**
   * Structural checks of one entry, the ones hg's C index and readers rely on: parents within the
   * index (test-parseindex.t: p1 = 2 on a 2-revision log, 65536, -2), the delta base not after the
   * revision, a non-negative compressed length, a linkrev that can name a changeset.
   */
  checkEntry(rev: number, linkLimit?: number): RevlogIndexProblem | null {
    const n = this.length;
    const clen = this.compressedLength(rev);
    if (clen < 0) return { rev, problem: 'bad-length', message: `negative compressed length ${clen}` };
    const base = this.base(rev);
    if (base > rev) {
      return {
        rev,
        problem: 'base-out-of-range',
        message: `corrupted revlog, revision base above revision: ${rev}, ${base}`,
      };
    }
    if (base < 0) return { rev, problem: 'base-out-of-range', message: `delta base ${base} out of range` };
    // both parents, without an array per call (readers check every revision they build)
    for (let which = 1; which <= 2; which++) {
      const p = which === 1 ? this.p1(rev) : this.p2(rev);
      if (p < NULL_REV || p >= n) {
        return { rev, problem: 'parent-out-of-range', message: `parent ${which} out of range: ${p}` };
      }
    }
    // linkrevs only matter to the changelog they point into (verify reports them); readers ignore them
    const link = this.link(rev);
    if (linkLimit !== undefined && (link < 0 || link >= linkLimit)) {
      return { rev, problem: 'link-out-of-range', message: `linkrev ${link} out of range` };
    }
    return null;
  }

  problems(linkLimit?: number): RevlogIndexProblem[] {
    const out: RevlogIndexProblem[] = [];
    for (let r = 0; r < this.length; r++) {
      const p = this.checkEntry(r, linkLimit);
      if (p) out.push(p);
    }
    return out;
  }

  /**
   * The index as plain data (entries copied compactly) for postMessage to another thread, where
   * RevlogIndex.fromData rebuilds it; pass `entries.buffer` in the transfer list.
   */
  toData(): RevlogIndexData {
    return {
      name: this.name,
      header: this.header,
      entries: this.entries.slice(0, this.length * ENTRY_SIZE),
      length: this.length,
      inlineDataPos: this.inline ? this.inlinePositions().slice(0, this.length) : null,
      indexFileSize: this.indexFileSize,
    };
  }

  static fromData(d: RevlogIndexData): RevlogIndex {
    if (d.entries.length !== d.length * ENTRY_SIZE)
      throw new SluiceError(
        'MALFORMED',
        `revlog index data of ${d.name}: ${d.entries.length} bytes for ${d.length} entries`,
      );
    return new RevlogIndex(d.name, d.header, d.entries, d.length, d.inlineDataPos, d.indexFileSize);
  }

  /** Throws the first structural problem as SluiceError('REVLOG'); pass the changelog length to check linkrevs. */
  validate(linkLimit?: number): this {
    for (let r = 0; r < this.length; r++) {
      const p = this.checkEntry(r, linkLimit);
      if (p) throw revlogError(this.name, p.problem, `${this.name}: rev ${r}: ${p.message}`, { rev: r });
    }
    return this;
  }
}

export function isNullNode(node: Uint8Array): boolean {
  for (let i = 0; i < node.length; i++) if (node[i] !== 0) return false;
  return true;
}

/** A node's bytes as a latin1 string (a Map key). */
export function nodeKey(node: Uint8Array): string {
  return Buffer.from(node.buffer, node.byteOffset, node.length).toString('latin1');
}

/** Checks the u32 header like revlog._loadindex (messages as hg's). */
export function checkHeader(name: string, header: number): void {
  const version = header & 0xffff;
  const flags = header & ~0xffff;
  if (version === REVLOGV1) {
    if (flags & ~REVLOGV1_FLAGS) {
      const shown = '0x' + ((flags >>> 16) & 0xffff).toString(16).padStart(2, '0');
      throw revlogError(name, 'unknown-flags', `unknown flags (${shown}) in version 1 revlog ${name}`, {
        header,
      });
    }
    return;
  }
  if (version === REVLOGV0 || version === REVLOGV2 || version === CHANGELOGV2) {
    // Known to hg, but Sluice reads v1 only (v0 predates 2006, v2 is experimental and docket-based).
    throw revlogError(name, 'unknown-version', `unsupported revlog version (${version}) in revlog ${name}`, {
      header,
      version,
    });
  }
  throw revlogError(name, 'unknown-version', `unknown version (${version}) in revlog ${name}`, {
    header,
    version,
  });
}

const NO_ENTRIES = new Uint8Array(0);
let wholeParser: RevlogIndexParser | undefined;

export interface RevlogIndexParserOptions {
  /** Expected total size of NAME.i: lets the parser allocate once (a hint, not trusted). */
  sizeHint?: number;
  /** Expected number of entries (an inline NAME.i counted beforehand; a hint, not trusted). */
  entriesHint?: number;
}

/** Incremental NAME.i parser: push() pieces of any size, then finish(). */
export class RevlogIndexParser {
  private name = '';
  private entries: Uint8Array = NO_ENTRIES;
  private count = 0;
  private header = -1;
  private inline = false;
  /** an entry split across pushes (allocated on the first one) */
  private pending: Uint8Array | undefined;
  private pendingLen = 0;
  /** inline: bytes of the current chunk not yet passed */
  private skip = 0;
  private consumed = 0;
  private finished = false;

  constructor(name: string, opts: RevlogIndexParserOptions = {}) {
    this.start(name, opts.sizeHint, opts.entriesHint);
  }

  /** Starts on a new NAME.i (the constructor; parseRevlogIndex's reused parser). */
  private start(name: string, sizeHint: number | undefined, entriesHint: number | undefined): void {
    this.name = name;
    // An honest size hint sizes the buffer exactly for a non-inline index; it is capped so a lying
    // hint cannot allocate much, the buffer grows with the bytes that really arrive.
    // An exact count (a revlog read whole) allocates exactly: a filelog of one revision then
    // costs 64 bytes, which V8 keeps on its heap instead of a separate backing store.
    const hint = sizeHint ?? 0;
    const initial =
      entriesHint !== undefined
        ? Math.min(Math.max(1, entriesHint) * ENTRY_SIZE, 64 << 20)
        : Math.min(Math.max(ENTRY_SIZE * 16, hint - (hint % ENTRY_SIZE)), 64 << 20);
    this.entries = new Uint8Array(initial);
    this.count = 0;
    this.header = -1;
    this.inline = false;
    this.pendingLen = 0;
    this.skip = 0;
    this.consumed = 0;
    this.finished = false;
  }

  /**
   * parseRevlogIndex's parse of a whole NAME.i on a reused parser (one per thread: a parse runs
   * to its end without yielding; no parser and options objects per filelog read whole).
   */
  static parseWhole(name: string, data: Uint8Array, sizeHint?: number, entriesHint?: number): RevlogIndex {
    const p = (wholeParser ??= new RevlogIndexParser(''));
    p.start(name, sizeHint, entriesHint);
    try {
      p.push(data);
      return p.finish();
    } finally {
      p.entries = NO_ENTRIES; // the index keeps its entries, the parser does not
    }
  }

  push(chunk: Uint8Array): void {
    if (this.finished) throw new SluiceError('MALFORMED', 'revlog index parser: push after finish');
    const len = chunk.length;
    let i = 0;
    while (i < len) {
      if (this.skip > 0) {
        const n = Math.min(this.skip, len - i);
        this.skip -= n;
        i += n;
        this.consumed += n;
        continue;
      }
      if (this.pendingLen === 0 && len - i >= ENTRY_SIZE) {
        this.addEntry(chunk, i);
        i += ENTRY_SIZE;
        continue;
      }
      const n = Math.min(ENTRY_SIZE - this.pendingLen, len - i);
      this.pending ??= new Uint8Array(ENTRY_SIZE);
      this.pending.set(chunk.subarray(i, i + n), this.pendingLen);
      this.pendingLen += n;
      i += n;
      if (this.pendingLen === ENTRY_SIZE) {
        this.pendingLen = 0;
        this.addEntry(this.pending!, 0);
      }
    }
  }

  finish(): RevlogIndex {
    if (this.finished) throw new SluiceError('MALFORMED', 'revlog index parser: finish called twice');
    this.finished = true;
    const name = this.name;
    if (this.count === 0 && this.pendingLen === 0) {
      // An empty or missing NAME.i is an empty revlog (hg: _initempty); defaults: v1 inline.
      return new RevlogIndex(name, REVLOGV1 | FLAG_INLINE_DATA, new Uint8Array(0), 0, null, 0);
    }
    if (this.count === 0 && this.pendingLen >= 4) {
      checkHeader(name, readU32(this.pending!, 0));
    }
    if (this.pendingLen > 0 || this.skip > 0) {
      const rev = this.count - (this.pendingLen > 0 ? 0 : 1);
      const what =
        this.pendingLen > 0
          ? `${this.pendingLen} of ${ENTRY_SIZE} entry bytes`
          : `${this.skip} chunk bytes missing`;
      throw revlogError(
        name,
        'truncated-entry',
        `index ${name} is corrupted: truncated revision ${rev} (${what})`,
        {
          rev,
          reason: `index ${name} is corrupted`,
        },
      );
    }
    // a view only when the buffer is larger than its content (an exact hint needs none); an inline
    // index works out its chunks' positions when asked (RevlogIndex.inlineChunkPos)
    const size = this.count * ENTRY_SIZE;
    const entries = this.entries.length === size ? this.entries : this.entries.subarray(0, size);
    return new RevlogIndex(name, this.header, entries, this.count, null, this.consumed);
  }

  private addEntry(src: Uint8Array, at: number): void {
    if (this.count === 0) {
      this.header = readU32(src, at);
      checkHeader(this.name, this.header);
      this.inline = (this.header & FLAG_INLINE_DATA) !== 0;
    }
    const need = (this.count + 1) * ENTRY_SIZE;
    if (need > this.entries.length) {
      const grown = new Uint8Array(Math.max(need, this.entries.length * 2));
      grown.set(this.entries.subarray(0, this.count * ENTRY_SIZE));
      this.entries = grown;
    }
    // a byte loop, not set(src.subarray()): no view per entry
    const e = this.entries;
    for (let k = 0, o = this.count * ENTRY_SIZE; k < ENTRY_SIZE; k++) e[o + k] = src[at + k]!;
    this.consumed += ENTRY_SIZE;
    if (this.inline) {
      const clen = readI32(src, at + 8);
      if (clen < 0) {
        throw revlogError(
          this.name,
          'bad-length',
          `index ${this.name} is corrupted: negative chunk length ${clen} at revision ${this.count}`,
          {
            rev: this.count,
            reason: `index ${this.name} is corrupted`,
          },
        );
      }
      this.skip = clen;
    }
    this.count++;
  }
}

function readU32(b: Uint8Array, at: number): number {
  return ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;
}
function readI32(b: Uint8Array, at: number): number {
  return (b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!;
}

/** Entries of an inline NAME.i held whole: a walk over the chunk lengths (the parser checks them). */
function countInlineEntries(data: Uint8Array): number {
  let n = 0;
  let pos = 0;
  while (pos + ENTRY_SIZE <= data.length) {
    n++;
    const clen = readI32(data, pos + 8);
    if (clen < 0) return n;
    pos += ENTRY_SIZE + clen;
  }
  return pos < data.length ? n + 1 : n; // a truncated entry at the end (the parser reports it)
}

/** Parses a whole NAME.i held in memory. */
export function parseRevlogIndex(name: string, data: Uint8Array): RevlogIndex {
  // an inline NAME.i is mostly chunk data: its size says nothing about the entries' (a filelog of
  // two revisions and 100 KB of text would allocate and zero 100 KB for 128 bytes of entries)
  const inline = data.length >= 4 && (readU32(data, 0) & FLAG_INLINE_DATA) !== 0;
  return inline
    ? RevlogIndexParser.parseWhole(name, data, undefined, countInlineEntries(data))
    : RevlogIndexParser.parseWhole(name, data, data.length, undefined);
}

export interface ReadIndexOptions {
  /** bytes per read() (default 64 KiB, hg's chunk cache size); tests use 1 */
  readSize?: number;
  signal?: AbortSignal;
}

/** Streams NAME.i from disk into the parser; a missing file is an empty revlog. */
export async function readRevlogIndex(
  path: string,
  name: string,
  opts: ReadIndexOptions = {},
): Promise<RevlogIndex> {
  const readSize = Math.max(1, opts.readSize ?? 65536);
  const opened = await openRevlogFile(path);
  if (!opened) return new RevlogIndexParser(name).finish();
  const { fh, size } = opened;
  try {
    const parser = new RevlogIndexParser(name, { sizeHint: size });
    const buf = new Uint8Array(Math.min(readSize, Math.max(size, 1)));
    for (;;) {
      if (opts.signal?.aborted) throw new SluiceError('CANCELLED', 'cancelled');
      const { bytesRead } = await fh.read(buf, 0, buf.length, null);
      if (bytesRead === 0) break;
      parser.push(buf.subarray(0, bytesRead));
    }
    return parser.finish();
  } finally {
    await fh.close();
  }
}

/** SHA-1 node id of a revision: sha1(min(p1, p2) + max(p1, p2) + text) (storageutil.hashrevisionsha1). */
export function revisionNode(text: Uint8Array, p1: Uint8Array, p2: Uint8Array): Buffer {
  const h = createHash('sha1');
  if (Buffer.compare(p1, p2) <= 0) {
    h.update(p1);
    h.update(p2);
  } else {
    h.update(p2);
    h.update(p1);
  }
  h.update(text);
  return h.digest();
}
