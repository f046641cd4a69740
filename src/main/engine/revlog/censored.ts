// Censored file revisions (hgext/censor): the text is replaced by a tombstone
// (`\1\ncensored: REASON\n\1\n`) stored as a full snapshot and flagged REVIDX_ISCENSORED; the node
// no longer matches. Changegroups carry a tombstone as a delta replacing its base whole (cg2 has
// no flags: the receiver recognizes it by its first bytes, storageutil.deltaiscensored).

import { REVIDX_ISCENSORED } from './constants';
import { namedRevlogError, shortNode } from './revlog-error';
import type { IncomingRevision } from './writer-options';

const HUNK = 12;
const TOMBSTONE_START = Buffer.from('\x01\ncensored:', 'latin1');

/** Only filelogs can be censored (filelog's revlog is `censorable`; manifests and the changelog are not). */
export function isCensorable(radix: string): boolean {
  return radix.startsWith('data/');
}

/** mdiff.replacediffheader: the 12 bytes of a delta replacing a base of `baseSize` bytes with `size` bytes. */
export function replaceHeader(baseSize: number, size: number): Buffer {
  const b = Buffer.allocUnsafe(HUNK);
  b.writeInt32BE(0, 0);
  b.writeInt32BE(baseSize, 4);
  b.writeInt32BE(size, 8);
  return b;
}

/** Whether `delta` is one hunk replacing the whole base of `baseSize` bytes (hg's rule against a censored base). */
export function replacesWholeBase(delta: Uint8Array, baseSize: number): boolean {
  if (delta.length < HUNK) return false;
  const v = new DataView(delta.buffer, delta.byteOffset, HUNK);
  return v.getInt32(0) === 0 && v.getInt32(4) === baseSize && v.getInt32(8) === delta.length - HUNK;
}

/** storageutil.deltaiscensored: a whole-base replacement whose new text is a tombstone. */
export function deltaIsCensored(delta: Uint8Array, baseSize: number): boolean {
  return (
    delta.length > HUNK &&
    replacesWholeBase(delta, baseSize) &&
    Buffer.compare(delta.subarray(HUNK, HUNK + TOMBSTONE_START.length), TOMBSTONE_START) === 0
  );
}

/**
 * revlog.addgroup's censorship rules for a revision received against a base of
 * `baseSize` bytes (filelogs only): a delta against a censored base must replace it whole (CensoredBaseError
 * otherwise), and a revision flagged censored (cg3) or whose delta replaces its base with a
 * tombstone (cg2) is censored: stored flagged, its node not checked.
 */
export function receivedCensored(
  radix: string,
  r: IncomingRevision,
  baseCensored: boolean,
  baseSize: number,
): boolean {
  if (!isCensorable(radix)) return false;
  if (baseCensored && !replacesWholeBase(r.delta, baseSize))
    throw namedRevlogError(
      radix,
      'bad-delta',
      `delta for ${shortNode(r.node)} is against censored revision ${shortNode(r.deltaBase)}`,
    );
  return r.flags === REVIDX_ISCENSORED || deltaIsCensored(r.delta, baseSize);
}
