// hg's binary delta ("bdiff") format and its application (mpatch.c, pure/mpatch.py, mdiff.py).
// A delta is a run of hunks `>lll start end length` + `length` bytes: replace [start, end) of the base
// text with the bytes. Hunks are ascending and never overlap (mpatch.c rejects anything else with
// "invalid patch"), positions refer to the base text.
import { SluiceError } from '../errors';
import { MAX_TEXT_SIZE } from './constants';

function badDelta(message: string): SluiceError {
  return new SluiceError('REVLOG', message, { problem: 'bad-delta' });
}

/** The big-endian int32 at pos (no DataView per delta: readers patch one per revision). */
function int32At(b: Uint8Array, pos: number): number {
  return (b[pos]! << 24) | (b[pos + 1]! << 16) | (b[pos + 2]! << 8) | b[pos + 3]!;
}

const bufferCopy = Buffer.prototype.copy;

/**
 * Copies src[start, end) into out at `at` without a view of src: `out.set(src.subarray(...))`
 * builds a FastBuffer per call when src is a Buffer (a JS constructor, slow until compiled; a
 * manifest fold's 24k copies cold: 15-24 -> 6-12 ms, Node 24).
 */
function copyRange(src: Uint8Array, start: number, end: number, out: Uint8Array, at: number): void {
  bufferCopy.call(src, out, at, start, end);
}

/** Size of base patched with delta, validating every hunk (mpatch.c `mpatch_decode` + `apply` checks). */
export function patchedSize(baseLength: number, delta: Uint8Array): number {
  const len = delta.length;
  let pos = 0;
  let last = 0;
  let out = 0;
  while (pos < len) {
    if (len - pos < 12) throw badDelta('patch cannot be decoded: truncated hunk header');
    const start = int32At(delta, pos);
    const end = int32At(delta, pos + 4);
    const n = int32At(delta, pos + 8);
    pos += 12;
    if (start < last || end < start || end > baseLength || n < 0) throw badDelta('invalid patch');
    if (n > len - pos) throw badDelta('patch cannot be decoded: hunk data beyond the delta');
    out += start - last + n;
    pos += n;
    last = end;
  }
  out += baseLength - last;
  if (out > MAX_TEXT_SIZE)
    throw new SluiceError('REVLOG', `patched text of ${out} bytes is too large`, { problem: 'limit' });
  return out;
}

/**
 * The text a delta against the empty text inserts whole (one hunk 0..0, as a changegroup sends a
 * full text: mdiff.trivialdiffheader), as a view of the delta; undefined for any other delta.
 */
export function trivialDeltaText(delta: Uint8Array): Uint8Array | undefined {
  if (delta.length < 12) return undefined;
  if (int32At(delta, 0) !== 0 || int32At(delta, 4) !== 0 || int32At(delta, 8) !== delta.length - 12)
    return undefined;
  return delta.subarray(12);
}

/** Applies one delta to base (mdiff.patch). */
export function applyDelta(base: Uint8Array, delta: Uint8Array): Buffer {
  const size = patchedSize(base.length, delta);
  const out = Buffer.allocUnsafe(size);
  applyDeltaInto(base, delta, out, 0);
  return out;
}

/**
 * Writes base patched with delta into out at outOffset (room for patchedSize() bytes, which must
 * have validated the delta); returns the size written. Readers use it to build into reused buffers.
 */
export function applyDeltaInto(
  base: Uint8Array,
  delta: Uint8Array,
  out: Uint8Array,
  outOffset: number,
): number {
  let pos = 0;
  let last = 0;
  let o = outOffset;
  while (pos < delta.length) {
    const start = int32At(delta, pos);
    const end = int32At(delta, pos + 4);
    const n = int32At(delta, pos + 8);
    pos += 12;
    if (start > last) {
      copyRange(base, last, start, out, o);
      o += start - last;
    }
    if (n > 0) {
      copyRange(delta, pos, pos + n, out, o);
      o += n;
    }
    pos += n;
    last = end;
  }
  if (last < base.length) {
    copyRange(base, last, base.length, out, o);
    o += base.length - last;
  }
  return o - outOffset;
}

/** Applies deltas oldest first (mdiff.patches): folded into one patch, the text built once. */
export function applyDeltas(base: Uint8Array, deltas: readonly Uint8Array[]): Uint8Array {
  if (deltas.length === 0) return base;
  if (deltas.length === 1) return applyDelta(base, deltas[0]!);
  const folded = foldDeltas(base.length, deltas);
  const out = Buffer.allocUnsafe(folded.size);
  applyFolded(base, folded, out, 0);
  return out;
}

// --- folding a delta chain (mpatch.c mpatch_fold / combine / gather / discard) -------------------
//
// Applying a chain of N deltas one by one copies the whole text N times; hg folds the deltas into
// one list of fragments (each: replace [start, end) of the base with `len` bytes of some delta)
// by combining halves recursively, then builds the text once. Fragments live in Int32Arrays,
// FRAG ints each; a fragment's bytes are `len` bytes at `off` in sources[src].

const FRAG = 5; // start, end, len, src, off

/** A chain of deltas folded into one patch of the base text (see applyFolded). */
export interface FoldedPatch {
  /** size of the text the patch produces */
  size: number;
  frags: Int32Array;
  count: number;
  sources: readonly Uint8Array[];
}

interface FragList {
  f: Int32Array;
  head: number; // index of the first live fragment
  tail: number; // one past the last
}

/**
 * Folds deltas (oldest first) that turn a base of baseLength bytes into one patch. Every delta is
 * validated against the text it applies to, exactly as applying them one by one would
 * (patchedSize's checks), so a chain is accepted or refused the same either way.
 */
export function foldDeltas(baseLength: number, deltas: readonly Uint8Array[]): FoldedPatch {
  const lists: FragList[] = new Array(deltas.length);
  let len = baseLength;
  for (let i = 0; i < deltas.length; i++) {
    const d = deltas[i]!;
    const next = patchedSize(len, d);
    lists[i] = decodeFrags(d, i);
    len = next;
  }
  const folded = foldRange(lists, 0, lists.length);
  return {
    size: len,
    frags: folded.f.subarray(folded.head * FRAG, folded.tail * FRAG),
    count: folded.tail - folded.head,
    sources: deltas,
  };
}

/** Builds the folded text into out at outOffset (room for patch.size bytes); returns patch.size. */
export function applyFolded(
  base: Uint8Array,
  patch: FoldedPatch,
  out: Uint8Array,
  outOffset: number,
): number {
  const f = patch.frags;
  const sources = patch.sources;
  let last = 0;
  let o = outOffset;
  for (let i = 0; i < patch.count * FRAG; i += FRAG) {
    const start = f[i]!;
    const n = f[i + 2]!;
    // mpatch_apply's checks: fragments ascending and within the base
    if (start < last || f[i + 1]! > base.length) throw badDelta('invalid patch');
    if (start > last) {
      copyRange(base, last, start, out, o);
      o += start - last;
    }
    if (n > 0) {
      const off = f[i + 4]!;
      copyRange(sources[f[i + 3]!]!, off, off + n, out, o);
      o += n;
    }
    last = f[i + 1]!;
  }
  if (last < base.length) {
    copyRange(base, last, base.length, out, o);
    o += base.length - last;
  }
  if (o - outOffset !== patch.size) throw badDelta('invalid patch');
  return patch.size;
}

/**
 * A folded patch applied to its base text while the base arrives in order, in pieces of any size
 * (a large snapshot decompressed as a stream): after mpatch_fold the fragments are ascending in
 * the base, so each base piece is either copied (the ranges between fragments) or skipped (what
 * fragments replace), and each fragment's bytes are emitted once the base before it is through.
 * Holds nothing of the base: memory is the deltas (the patch's sources) whatever the text's size.
 * emit() gets views of the base pieces and of the deltas, valid during the call. Same checks as
 * applyFolded; end() throws when the base was not exactly baseLength bytes or the output not
 * patch.size (the consumer discards what it was given).
 */
export class FoldedStream {
  /** the base offset of the next base byte to arrive */
  private pos = 0;
  /** the next fragment (index into frags, in ints) */
  private fi = 0;
  /** the end of the last fragment applied: the base is copied from there (from `pos` once past it) */
  private last = 0;
  private out = 0;

  constructor(
    private readonly patch: FoldedPatch,
    private readonly baseLength: number,
    private readonly emit: (piece: Uint8Array) => void,
  ) {}

  /** The next piece of the base text. */
  push(piece: Uint8Array): void {
    const pos = this.pos;
    const pEnd = pos + piece.length;
    if (pEnd > this.baseLength) throw badDelta('invalid patch: the base is longer than its index says');
    this.advance(piece, pos, pEnd);
    this.pos = pEnd;
  }

  /** After the last piece: emits fragments at the base's end, checks the sizes; returns the output size. */
  end(): number {
    if (this.pos !== this.baseLength)
      throw badDelta('invalid patch: the base is shorter than its index says');
    this.advance(EMPTY, this.pos, this.pos);
    if (this.fi < this.patch.count * FRAG || this.out !== this.patch.size) throw badDelta('invalid patch');
    return this.out;
  }

  /** Emits everything [pos, pEnd) of the base completes (piece holds those base bytes). */
  private advance(piece: Uint8Array, pos: number, pEnd: number): void {
    const f = this.patch.frags;
    const fEnd = this.patch.count * FRAG;
    for (;;) {
      const more = this.fi < fEnd;
      // the base range to copy before the next fragment (or up to the base's end)
      const copyEnd = more ? f[this.fi]! : this.baseLength;
      if (copyEnd < this.last) throw badDelta('invalid patch'); // fragments ascending (mpatch_apply)
      if (this.last < copyEnd) {
        const a = this.last > pos ? this.last : pos;
        const b = copyEnd < pEnd ? copyEnd : pEnd;
        if (a < b) {
          this.emit(piece.subarray(a - pos, b - pos));
          this.out += b - a;
        }
        if (copyEnd > pEnd) return; // the rest of this copy is in later pieces
        this.last = copyEnd;
      }
      if (!more) return;
      const i = this.fi;
      const fragEnd = f[i + 1]!;
      if (fragEnd > this.baseLength || fragEnd < copyEnd) throw badDelta('invalid patch');
      const n = f[i + 2]!;
      if (n > 0) {
        const off = f[i + 4]!;
        this.emit(this.patch.sources[f[i + 3]!]!.subarray(off, off + n));
        this.out += n;
      }
      this.last = fragEnd;
      this.fi = i + FRAG;
    }
  }
}

const EMPTY = new Uint8Array(0);

/** mpatch_decode of an already validated delta. */
function decodeFrags(delta: Uint8Array, src: number): FragList {
  let n = 0;
  for (let pos = 0; pos < delta.length; n++) pos += 12 + int32At(delta, pos + 8);
  const f = new Int32Array(n * FRAG);
  let pos = 0;
  for (let i = 0; i < n * FRAG; i += FRAG) {
    const len = int32At(delta, pos + 8);
    f[i] = int32At(delta, pos);
    f[i + 1] = int32At(delta, pos + 4);
    f[i + 2] = len;
    f[i + 3] = src;
    f[i + 4] = pos + 12;
    pos += 12 + len;
  }
  return { f, head: 0, tail: n };
}

function foldRange(lists: FragList[], start: number, end: number): FragList {
  if (start + 1 === end) return lists[start]!;
  const half = (end - start) >> 1;
  return combine(foldRange(lists, start, start + half), foldRange(lists, start + half, end));
}

/** Moves a's fragments that lie before `cut` (in b's coordinates) to c, splitting the last one. */
function gather(c: FragList, a: FragList, cut: number, offset: number): number {
  const s = a.f;
  const d = c.f;
  let si = a.head;
  let di = c.tail;
  while (si < a.tail) {
    const b = si * FRAG;
    const sStart = s[b]!;
    const sLen = s[b + 2]!;
    if (sStart + offset >= cut) break; // gone far enough
    if (offset + sStart + sLen <= cut) {
      // the whole hunk comes before the cut
      offset += sStart - s[b + 1]! + sLen;
      // field by field: a subarray per fragment was most of a cold manifest fold's garbage
      const o = di * FRAG;
      d[o] = sStart;
      d[o + 1] = s[b + 1]!;
      d[o + 2] = sLen;
      d[o + 3] = s[b + 3]!;
      d[o + 4] = s[b + 4]!;
      di++;
      si++;
    } else {
      // break up this hunk
      let cc = cut - offset;
      if (s[b + 1]! < cc) cc = s[b + 1]!;
      let l = cut - offset - sStart;
      if (sLen < l) l = sLen;
      offset += sStart + l - cc;
      const o = di * FRAG;
      d[o] = sStart;
      d[o + 1] = cc;
      d[o + 2] = l;
      d[o + 3] = s[b + 3]!;
      d[o + 4] = s[b + 4]!;
      di++;
      s[b] = cc;
      s[b + 2] = sLen - l;
      s[b + 4] = s[b + 4]! + l;
      break;
    }
  }
  c.tail = di;
  a.head = si;
  return offset;
}

/** Like gather, without output: drops a's fragments replaced by a hunk of b ending at `cut`. */
function discard(a: FragList, cut: number, offset: number): number {
  const s = a.f;
  let si = a.head;
  while (si < a.tail) {
    const b = si * FRAG;
    const sStart = s[b]!;
    const sLen = s[b + 2]!;
    if (sStart + offset >= cut) break;
    if (offset + sStart + sLen <= cut) {
      offset += sStart - s[b + 1]! + sLen;
      si++;
    } else {
      let cc = cut - offset;
      if (s[b + 1]! < cc) cc = s[b + 1]!;
      let l = cut - offset - sStart;
      if (sLen < l) l = sLen;
      offset += sStart + l - cc;
      s[b] = cc;
      s[b + 2] = sLen - l;
      s[b + 4] = s[b + 4]! + l;
      break;
    }
  }
  a.head = si;
  return offset;
}

/** Combines a then b into one list (b's positions are adjusted for a's changes in length). */
function combine(a: FragList, b: FragList): FragList {
  const c: FragList = { f: new Int32Array((a.tail - a.head + b.tail - b.head) * 2 * FRAG), head: 0, tail: 0 };
  let offset = 0;
  const bf = b.f;
  for (let bi = b.head; bi < b.tail; bi++) {
    const bb = bi * FRAG;
    // save old hunks
    offset = gather(c, a, bf[bb]!, offset);
    // discard replaced hunks
    const post = discard(a, bf[bb + 1]!, offset);
    // insert the new hunk
    const o = c.tail * FRAG;
    c.f[o] = bf[bb]! - offset;
    c.f[o + 1] = bf[bb + 1]! - post;
    c.f[o + 2] = bf[bb + 2]!;
    c.f[o + 3] = bf[bb + 3]!;
    c.f[o + 4] = bf[bb + 4]!;
    c.tail++;
    offset = post;
  }
  // hold on to the tail of a
  const rest = a.f.subarray(a.head * FRAG, a.tail * FRAG);
  c.f.set(rest, c.tail * FRAG);
  c.tail += a.tail - a.head;
  return c;
}

/**
 * Does every hunk of `delta` replace whole lines of `base` with whole lines? hg's bdiff deltas
 * always do, and hg reads a stored manifest delta as manifest lines (manifestctx.readdelta:
 * `hg verify`, changegroup generation): a manifest delta cut mid-line makes those fail.
 */
export function onLineBoundaries(base: Uint8Array, delta: Uint8Array): boolean {
  const dv = new DataView(delta.buffer, delta.byteOffset, delta.length);
  const lineStart = (at: number): boolean => at === 0 || at === base.length || base[at - 1] === 0x0a;
  for (let pos = 0; pos + 12 <= delta.length;) {
    const start = dv.getInt32(pos);
    const end = dv.getInt32(pos + 4);
    const n = dv.getInt32(pos + 8);
    if (!lineStart(start) || !lineStart(end) || n < 0 || pos + 12 + n > delta.length) return false;
    if (n > 0 && delta[pos + 12 + n - 1] !== 0x0a) return false;
    pos += 12 + n;
  }
  return true;
}

/** The bytes a delta inserts, concatenated (mdiff.patchtext; manifest readdelta). */
export function patchText(delta: Uint8Array): Buffer {
  const len = delta.length;
  const dv = new DataView(delta.buffer, delta.byteOffset, len);
  const pieces: Uint8Array[] = [];
  let pos = 0;
  while (pos < len) {
    if (len - pos < 12) throw badDelta('patch cannot be decoded: truncated hunk header');
    const n = dv.getInt32(pos + 8);
    pos += 12;
    if (n < 0 || n > len - pos) throw badDelta('patch cannot be decoded: hunk data beyond the delta');
    pieces.push(delta.subarray(pos, pos + n));
    pos += n;
  }
  return Buffer.concat(pieces);
}

/** A delta that replaces the whole of a base of baseLength bytes with text (mdiff.replacediffheader). */
export function fullReplaceDelta(baseLength: number, text: Uint8Array): Buffer {
  const head = Buffer.alloc(12);
  head.writeInt32BE(0, 0);
  head.writeInt32BE(baseLength, 4);
  head.writeInt32BE(text.length, 8);
  return Buffer.concat([head, text]);
}
