// The changelog's tip without reading its history: a repository library re-reads many repositories
// whenever one changes, so this reads the last index entry, the entries of its delta chain and their
// chunks, nothing else (hg's `repo['tip']` through the C index does the same amount of I/O, once the
// index is mapped). A split changelog's index is an array of 64-byte entries, so entry r sits at
// r * 64; an inline changelog interleaves data and entries, but hg splits it at 128 KiB
// (revlog._maxinline), so it is read whole.
import type { FileHandle } from 'node:fs/promises';
import { openRevlogFile } from './file-io';
import { SluiceError } from '../errors';
import { chunkNeedsPreparation, decompressChunk } from './chunk';
import {
  ENTRY_SIZE,
  FLAG_GENERALDELTA,
  FLAG_INLINE_DATA,
  MAX_TEXT_SIZE,
  NODE_SIZE,
  NULL_NODE,
} from './constants';
import { checkHeader, revisionNode } from './index';
import { applyDeltas } from './mpatch';
import { Revlog } from './revlog';

/** An inline changelog larger than this is not what hg writes (it splits at 128 KiB). */
const MAX_INLINE_BYTES = 16 << 20;
/** A changelog delta chain longer than this is refused rather than read (hg stores full texts). */
const MAX_CHAIN = 10_000;
/** findRev scans at most this many entries back from the tip. */
const DEFAULT_SCAN_REVS = 50_000;

export interface RevisionHead {
  rev: number;
  /** hex */
  node: string;
  text: Uint8Array;
}

export interface ChangelogTail {
  /** revisions in the changelog (0 = empty repository) */
  length: number;
  /** null for an empty changelog */
  tip: RevisionHead | null;
  /** the rev of a node among the last `maxRevs` revisions (the working-copy parent is usually there) */
  findRev(node: Uint8Array, maxRevs?: number): Promise<number | undefined>;
  close(): Promise<void>;
}

interface Entry {
  offset: number;
  compressedLength: number;
  rawSize: number;
  base: number;
  p1: number;
  p2: number;
  node: Uint8Array;
}

function decodeEntry(b: Uint8Array, rev: number): Entry {
  const v = new DataView(b.buffer, b.byteOffset, ENTRY_SIZE);
  return {
    offset: rev === 0 ? 0 : v.getUint32(0) * 0x10000 + v.getUint16(4),
    compressedLength: v.getInt32(8),
    rawSize: v.getInt32(12),
    base: v.getInt32(16),
    p1: v.getInt32(24),
    p2: v.getInt32(28),
    node: b.slice(32, 32 + NODE_SIZE),
  };
}

function malformed(message: string): SluiceError {
  return new SluiceError('MALFORMED', `00changelog: ${message}`);
}

async function readExactly(
  fh: FileHandle,
  length: number,
  position: number,
  what: string,
): Promise<Uint8Array> {
  const buf = new Uint8Array(length);
  let got = 0;
  while (got < length) {
    const { bytesRead } = await fh.read(buf, got, length - got, position + got);
    if (bytesRead === 0)
      throw malformed(`${what}: ${length} bytes expected at ${position}, the file ends after ${got}`);
    got += bytesRead;
  }
  return buf;
}

/** Opens `storeDir/00changelog.i` for tip reads; a missing file is an empty changelog. */
export async function openChangelogTail(storeDir: string): Promise<ChangelogTail> {
  const indexPath = `${storeDir}/00changelog.i`;
  const opened = await openRevlogFile(indexPath);
  if (!opened) return emptyTail();
  const { fh, size } = opened;
  try {
    if (size < 4) {
      await fh.close();
      return emptyTail();
    }
    const header = new DataView((await readExactly(fh, 4, 0, 'header')).buffer).getUint32(0);
    checkHeader('00changelog', header);
    if (header & FLAG_INLINE_DATA) {
      if (size > MAX_INLINE_BYTES)
        throw malformed(`inline changelog of ${size} bytes (hg splits at 128 KiB)`);
      const whole = await readExactly(fh, size, 0, 'inline index');
      await fh.close();
      return inlineTail(Revlog.fromBytes('00changelog', whole));
    }
    return splitTail(
      fh,
      `${storeDir}/00changelog.d`,
      Math.floor(size / ENTRY_SIZE),
      (header & FLAG_GENERALDELTA) !== 0,
    );
  } catch (e) {
    await fh.close().catch(() => {});
    throw e;
  }
}

function emptyTail(): ChangelogTail {
  return { length: 0, tip: null, findRev: async () => undefined, close: async () => {} };
}

async function inlineTail(revlog: Revlog): Promise<ChangelogTail> {
  const length = revlog.length;
  const tip =
    length === 0
      ? null
      : { rev: length - 1, node: revlog.index.nodeHex(length - 1), text: await revlog.revision(length - 1) };
  return { length, tip, findRev: async (node) => revlog.index.rev(node), close: async () => {} };
}

/**
 * A split changelog: `length` whole entries (a trailing partial entry is an append in progress:
 * hg writes the data file first, then the index entry, so the entries before it are complete).
 */
async function splitTail(
  fh: FileHandle,
  dataPath: string,
  length: number,
  generalDelta: boolean,
): Promise<ChangelogTail> {
  const entry = async (rev: number) =>
    decodeEntry(await readExactly(fh, ENTRY_SIZE, rev * ENTRY_SIZE, `entry ${rev}`), rev);
  const nodeOf = async (rev: number) => (rev < 0 ? NULL_NODE : (await entry(rev)).node);
  let tip: RevisionHead | null = null;
  if (length > 0) {
    const rev = length - 1;
    const head = await entry(rev);
    const text = await revisionText(rev, head, entry, dataPath, generalDelta);
    const expected = revisionNode(text, await nodeOf(head.p1), await nodeOf(head.p2));
    if (!expected.equals(head.node)) throw malformed(`integrity check failed on rev ${rev}`);
    tip = { rev, node: Buffer.from(head.node).toString('hex'), text };
  }
  const findRev = async (node: Uint8Array, maxRevs = DEFAULT_SCAN_REVS): Promise<number | undefined> => {
    const block = 1024;
    const stop = Math.max(0, length - maxRevs);
    for (let end = length; end > stop; end -= block) {
      const start = Math.max(stop, end - block);
      const bytes = await readExactly(fh, (end - start) * ENTRY_SIZE, start * ENTRY_SIZE, 'index');
      for (let r = end - 1; r >= start; r--) {
        const at = (r - start) * ENTRY_SIZE + 32;
        if (Buffer.compare(bytes.subarray(at, at + NODE_SIZE), node) === 0) return r;
      }
    }
    return undefined;
  };
  return { length, tip, findRev, close: () => fh.close() };
}

/** hg's _deltachain + _chunks + mdiff.patches for one revision, reading each chunk from NAME.d. */
async function revisionText(
  rev: number,
  head: Entry,
  entry: (rev: number) => Promise<Entry>,
  dataPath: string,
  generalDelta: boolean,
): Promise<Uint8Array> {
  const chain: [number, Entry][] = [[rev, head]];
  let r = rev;
  let e = head;
  while (e.base !== r) {
    // generaldelta: base is the delta parent; otherwise the chain is base..rev, each against the previous rev
    const next = generalDelta ? e.base : r - 1;
    if (next < 0 || next >= r || (!generalDelta && next < e.base))
      throw malformed(`rev ${r}: bad delta base ${e.base}`);
    if (chain.length >= MAX_CHAIN) throw malformed(`rev ${rev}: delta chain longer than ${MAX_CHAIN}`);
    r = next;
    e = await entry(r);
    chain.push([r, e]);
  }
  chain.reverse();
  const data = (await openRevlogFile(dataPath))?.fh;
  if (!data) throw malformed('data file 00changelog.d is missing');
  try {
    const texts: Uint8Array[] = [];
    for (const [cr, ce] of chain) {
      if (ce.compressedLength < 0 || ce.rawSize > MAX_TEXT_SIZE) throw malformed(`rev ${cr}: bad lengths`);
      const raw = await readExactly(data, ce.compressedLength, ce.offset, `rev ${cr} data`);
      const prep = chunkNeedsPreparation(raw);
      if (prep) await prep;
      texts.push(
        decompressChunk(raw, Math.max(1 << 20, 13 * (Math.max(0, ce.rawSize) + 1) + (texts[0]?.length ?? 0))),
      );
    }
    const text = applyDeltas(texts[0]!, texts.slice(1));
    if (head.rawSize >= 0 && text.length !== head.rawSize)
      throw malformed(`rev ${rev}: unpacked size is ${text.length}, ${head.rawSize} expected`);
    return text;
  } finally {
    await data.close();
  }
}
