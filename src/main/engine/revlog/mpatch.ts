// hg's binary delta ("bdiff") format and its application (mpatch.c, pure/mpatch.py, mdiff.py).
// A delta is a run of hunks `>lll start end length` + `length` bytes: replace [start, end) of the base
// text with the bytes. Hunks are ascending and never overlap (mpatch.c rejects anything else with
// "invalid patch"), positions refer to the base text.
import { SluiceError } from '../errors';
import { MAX_TEXT_SIZE } from './constants';

function badDelta(message: string): SluiceError {
  return new SluiceError('REVLOG', message, { problem: 'bad-delta' });
}

/** Size of base patched with delta, validating every hunk (mpatch.c `mpatch_decode` + `apply` checks). */
export function patchedSize(baseLength: number, delta: Uint8Array): number {
  const len = delta.length;
  const dv = new DataView(delta.buffer, delta.byteOffset, len);
  let pos = 0;
  let last = 0;
  let out = 0;
  while (pos < len) {
    if (len - pos < 12) throw badDelta('patch cannot be decoded: truncated hunk header');
    const start = dv.getInt32(pos);
    const end = dv.getInt32(pos + 4);
    const n = dv.getInt32(pos + 8);
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

/** Applies one delta to base (mdiff.patch). */
export function applyDelta(base: Uint8Array, delta: Uint8Array): Buffer {
  const size = patchedSize(base.length, delta);
  const out = Buffer.allocUnsafe(size);
  const dv = new DataView(delta.buffer, delta.byteOffset, delta.length);
  let pos = 0;
  let last = 0;
  let o = 0;
  while (pos < delta.length) {
    const start = dv.getInt32(pos);
    const end = dv.getInt32(pos + 4);
    const n = dv.getInt32(pos + 8);
    pos += 12;
    if (start > last) {
      out.set(base.subarray(last, start), o);
      o += start - last;
    }
    if (n > 0) {
      out.set(delta.subarray(pos, pos + n), o);
      o += n;
    }
    pos += n;
    last = end;
  }
  if (last < base.length) out.set(base.subarray(last), o);
  return out;
}

/** Applies deltas oldest first (mdiff.patches). */
export function applyDeltas(base: Uint8Array, deltas: readonly Uint8Array[]): Uint8Array {
  let text = base;
  for (const d of deltas) text = applyDelta(text, d);
  return text;
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
