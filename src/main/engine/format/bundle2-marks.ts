// Payloads of the bundle2 parts that carry bookmarks and phases (bookmarks.binarydecode,
// phases.binarydecode), shared by clone, pull and bundle apply.
import { SluiceError } from '../errors';

/** bookmarks.binarydecode: `node(20) u16 length name` records; [name, hex node] pairs. */
export function decodeBinaryBookmarks(data: Buffer): [string, string][] {
  const out: [string, string][] = [];
  let off = 0;
  while (off < data.length) {
    if (off + 22 > data.length) throw new SluiceError('MALFORMED', 'bad bookmarks part: truncated entry');
    const node = data.subarray(off, off + 20).toString('hex');
    const len = data.readUInt16BE(off + 20);
    off += 22;
    if (off + len > data.length) throw new SluiceError('MALFORMED', 'bad bookmarks part: truncated name');
    out.push([data.toString('latin1', off, off + len), node]);
    off += len;
  }
  return out;
}

/** phases.binarydecode: `i32 phase, node(20)` records; [phase, hex node] pairs. */
export function decodePhaseHeads(data: Buffer): [number, string][] {
  if (data.length % 24) throw new SluiceError('MALFORMED', 'bad phase-heads stream');
  const out: [number, string][] = [];
  for (let off = 0; off < data.length; off += 24)
    out.push([data.readInt32BE(off), data.subarray(off + 4, off + 24).toString('hex')]);
  return out;
}
