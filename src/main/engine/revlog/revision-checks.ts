// What a Revlog checks about a revision before and after reading it (revlog.py `checkhash`,
// flagutil, storageutil), as functions of the revlog's name and index.
import { SluiceError } from '../errors';
import {
  MAX_TEXT_SIZE,
  NULL_NODE,
  NULL_REV,
  REVIDX_ELLIPSIS,
  REVIDX_EXTSTORED,
  REVIDX_KNOWN_FLAGS,
} from './constants';
import type { RevlogIndex } from './index';
import { revlogError } from './revlog-error';
import { parseFilelogMeta } from './texts';

/** see decodedBound */
const CHUNK_SLACK = 1 << 20;

/**
 * The decoded size rev's chunk may reach. The bound comes from the index: a full text is rawSize
 * bytes, a delta at most 12 bytes per hunk plus what it inserts. 1 MiB of slack lets a slightly
 * wrong size field still decompress (verify then reports hg's "unpacked size is X, Y expected"),
 * while a lying size or a zlib/zstd bomb stops there instead of allocating what it expands to.
 */
export function decodedBound(index: RevlogIndex, rev: number): number {
  const rawSize = Math.max(0, index.rawSize(rev));
  const dp = index.deltaParent(rev);
  const baseSize = dp >= 0 && dp < index.length ? Math.max(0, index.rawSize(dp)) : 0;
  const sizeBound = dp === NULL_REV ? rawSize : 13 * (baseSize + rawSize + 1);
  return Math.min(MAX_TEXT_SIZE, Math.max(sizeBound, CHUNK_SLACK));
}

/**
 * What rev's chunk of `stored` bytes likely decodes to: a full text's recorded size, else a
 * guess for a delta (compressed deltas of real histories decode to 1-3x their size, rarely 4x).
 * Sizes decode buffers only; decodedBound is the limit.
 */
export function likelyDecodedSize(index: RevlogIndex, rev: number, stored: number): number {
  const rawSize = index.rawSize(rev);
  if (index.deltaParent(rev) === NULL_REV && rawSize >= 0) return rawSize;
  return 4 * stored + 64;
}

/** The index entry's own checks and its flags, before any of rev's data is read. */
export function checkReadable(name: string, index: RevlogIndex, rev: number): void {
  const problem = index.checkEntry(rev);
  if (problem) {
    throw revlogError(name, problem.problem, `${name}: rev ${rev}: ${problem.message}`, {
      rev,
      reason: problem.message,
    });
  }
  checkRevisionFlags(name, rev, index.revFlags(rev));
}

export function checkParentRange(name: string, index: RevlogIndex, rev: number): void {
  const p1 = index.p1(rev);
  const p2 = index.p2(rev);
  const n = index.length;
  if (p1 < NULL_REV || p1 >= n || p2 < NULL_REV || p2 >= n) {
    throw revlogError(name, 'parent-out-of-range', `${name}: rev ${rev}: parent out of range`, { rev });
  }
}

/** rev's parent nodes in the order revlog.hash feeds them to SHA-1 (the smaller first). */
export function sortedParents(name: string, index: RevlogIndex, rev: number): [Uint8Array, Uint8Array] {
  checkParentRange(name, index, rev);
  const p1 = index.p1(rev);
  const p2 = index.p2(rev);
  const p1n = p1 === NULL_REV ? NULL_NODE : index.node(p1);
  const p2n = p2 === NULL_REV ? NULL_NODE : index.node(p2);
  return Buffer.compare(p1n, p2n) <= 0 ? [p1n, p2n] : [p2n, p1n];
}

export function nodeMismatch(name: string, index: RevlogIndex, rev: number, computed: Buffer): Error {
  return revlogError(name, 'node-mismatch', `integrity check failed on ${name}:${rev}`, {
    rev,
    expected: index.nodeHex(rev),
    actual: computed.toString('hex'),
  });
}

/** A revlog error raised without the revlog's name (decoders, mpatch) given its name and rev. */
export function atRevision(name: string, e: unknown, rev: number): unknown {
  if (e instanceof SluiceError && e.code === 'REVLOG') {
    const d = (e.details ?? {}) as Record<string, unknown>;
    if (d.revlog === undefined) {
      const err = revlogError(
        name,
        (d.problem as never) ?? 'decompress',
        `${name}: rev ${rev}: ${e.message}`,
        {
          ...d,
          rev,
        },
      );
      (err.details as Record<string, unknown>).reason = e.message;
      return err;
    }
  }
  return e;
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
