// A revlog v1 index entry as the writer builds it (revlog.py's INDEX_ENTRY_V1 struct, 64 bytes),
// and the byte layout of an inline revlog split into NAME.i and NAME.d (_enforceinlinesize).

import { ENTRY_SIZE, NODE_SIZE } from './constants';

/** A revision the writer has appended, not yet in the index it read. */
export interface PendingEntry {
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

/** The entry's 64 bytes; revision 0's first 4 bytes carry the revlog's header instead of its offset. */
export function packIndexEntry(rev: number, e: PendingEntry, header: number): Buffer {
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
  if (rev === 0) b.writeUInt32BE(header >>> 0, 0);
  return b;
}

/**
 * An inline revlog's bytes (`whole`: each entry followed by its chunk) as a bare index and a data
 * file, with `header` (its inline flag already cleared) in the index's first entry. `trindex` is
 * the first revision at or past the transaction's offset into the inline file: the truncation
 * points of both new files start there.
 */
export function splitInlineBytes(
  whole: Buffer,
  revs: number,
  dataEnd: number,
  entry: (rev: number) => { offset: number; clen: number },
  header: number,
  transactionOffset: number,
): { index: Buffer; data: Buffer; trindex: number } {
  const data = Buffer.allocUnsafe(dataEnd);
  const index = Buffer.allocUnsafe(revs * ENTRY_SIZE);
  let trindex: number | undefined;
  for (let r = 0; r < revs; r++) {
    const e = entry(r);
    const at = e.offset + r * ENTRY_SIZE;
    whole.copy(index, r * ENTRY_SIZE, at, at + ENTRY_SIZE);
    whole.copy(data, e.offset, at + ENTRY_SIZE, at + ENTRY_SIZE + e.clen);
    if (trindex === undefined && transactionOffset <= at) trindex = r;
  }
  index.writeUInt32BE(header >>> 0, 0);
  return { index, data, trindex: trindex ?? 0 };
}
