// The working copy's parents from `.hg/dirstate` (dirstate.py `_read`/`parents`): the v1 file starts
// with p1 and p2, 20 bytes each; the dirstate-v2 docket (dirstateutils/docket.py) with the marker
// `dirstate-v2\n`, then the same 40 bytes. A missing or short file is the null revision, as hg reads it.
import { SluiceError } from '../errors';

const NODE = 20;
const V2_MARKER = Buffer.from('dirstate-v2\n', 'latin1');

export interface DirstateParents {
  p1: Buffer;
  p2: Buffer;
}

/** `bytes`: the start of the file (the first 52 bytes are enough for either format). */
export function parseDirstateParents(bytes: Uint8Array, dirstateV2: boolean): DirstateParents {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  let at = 0;
  if (dirstateV2) {
    if (buf.length === 0) return { p1: Buffer.alloc(NODE), p2: Buffer.alloc(NODE) };
    if (buf.length < V2_MARKER.length || !buf.subarray(0, V2_MARKER.length).equals(V2_MARKER))
      throw new SluiceError('MALFORMED', 'dirstate: the dirstate-v2 docket does not start with its marker');
    at = V2_MARKER.length;
  }
  if (buf.length < at + 2 * NODE) {
    // dirstate.py: a file shorter than the parents is "working directory state appears damaged"
    if (buf.length === 0) return { p1: Buffer.alloc(NODE), p2: Buffer.alloc(NODE) };
    throw new SluiceError('MALFORMED', 'dirstate: working directory state appears damaged');
  }
  return {
    p1: Buffer.from(buf.subarray(at, at + NODE)),
    p2: Buffer.from(buf.subarray(at + NODE, at + 2 * NODE)),
  };
}

/** Bytes of the file to read for the parents. */
export const DIRSTATE_PARENTS_BYTES = V2_MARKER.length + 2 * NODE;
