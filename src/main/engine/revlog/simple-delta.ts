// The delta the writer computes itself when a received one cannot be stored as it is: one hunk,
// the common prefix and suffix kept, cut at line starts so the deltas look like hg's bdiff's.
import { SluiceError } from '../errors';
import { patchedSize } from './mpatch';

/**
 * A one-hunk delta from base to text. lineDeltas (manifests): the hunk also ends at a line end,
 * since hg reads a stored manifest delta's inserted bytes as whole lines.
 */
export function simpleDelta(
  radix: string,
  base: Uint8Array,
  text: Uint8Array,
  lineDeltas: boolean,
): Uint8Array {
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
    lineDeltas &&
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
    throw new SluiceError('REVLOG', `${radix}: internal delta error`, { problem: 'bad-delta' });
  return out;
}
