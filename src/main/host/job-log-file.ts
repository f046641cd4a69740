// A job's debug log as the host keeps it: a list of compact LogChunks, in memory while the job runs
// and in `logs/<jobId>.log` once it has finished, with a small index (`<jobId>.json`) that says
// where each chunk starts, by line and by byte. The lines are formatted only for the pages, filters
// and exports that read them. Version 1 files (the formatted text itself) are still read.
//
// A chunk of n lines on disk: its kinds (n bytes), sizes (8n), string ends (4n), then its strings
// in latin1, or in UTF-16 when one is outside latin1 (both read back exactly). The typed arrays are
// written in the platform's byte order, little-endian on every platform Electron supports.

import { open, readFile } from 'node:fs/promises';
import { chunkLines, type LogChunk } from '../../shared/job-log-lines';

export const LOG_FILE_VERSION = 2;

/** [first line, byte offset, lines, 1 when its strings are UTF-16] */
export type ChunkPlace = [number, number, number, number];

export interface LogCounts {
  /** retained lines */
  total: number;
  /** lines dropped from the head once the cap was reached */
  dropped: number;
}

export interface LogIndex {
  version: number;
  dropped: number;
  lines: number;
  chunks: ChunkPlace[];
}

/** A log's lines, read page by page. */
export interface LogSource extends LogCounts {
  read(from: number, count: number): Promise<string[]>;
  /** every retained line, each '\n'-terminated */
  all(): Promise<string>;
}

const BYTES_PER_LINE = 1 + 8 + 4;

/** `chunks` as one file's bytes and the index that places them. */
export function encodeLog(chunks: readonly LogChunk[], dropped: number): { data: Buffer; index: LogIndex } {
  const parts: Buffer[] = [];
  const places: ChunkPlace[] = [];
  let line = 0;
  let offset = 0;
  for (const c of chunks) {
    const wide = /[\u0100-\uffff]/.test(c.strings);
    const strings = Buffer.from(c.strings, wide ? 'utf16le' : 'latin1');
    places.push([line, offset, c.lines, wide ? 1 : 0]);
    for (const a of [c.kinds, c.sizes, c.ends]) parts.push(Buffer.from(a.buffer, a.byteOffset, a.byteLength));
    parts.push(strings);
    line += c.lines;
    offset += c.lines * BYTES_PER_LINE + strings.length;
  }
  const index = { version: LOG_FILE_VERSION, dropped, lines: line, chunks: places };
  return { data: Buffer.concat(parts, offset), index };
}

/** A chunk from its bytes on disk, or null when they do not hold `lines` lines. */
export function decodeChunk(bytes: Uint8Array, lines: number, wide: boolean): LogChunk | null {
  const head = lines * BYTES_PER_LINE;
  const stringBytes = bytes.length - head;
  if (stringBytes < 0 || (wide && stringBytes % 2 !== 0)) return null;
  // copies: a typed array over a file's bytes needs its own aligned buffer
  const kinds = new Uint8Array(bytes.subarray(0, lines));
  const sizes = new Float64Array(new Uint8Array(bytes.subarray(lines, 9 * lines)).buffer);
  const ends = new Uint32Array(new Uint8Array(bytes.subarray(9 * lines, head)).buffer);
  const strings = Buffer.from(bytes.buffer, bytes.byteOffset + head, stringBytes).toString(
    wide ? 'utf16le' : 'latin1',
  );
  if (lines > 0 && ends[lines - 1] !== strings.length) return null;
  return { lines, kinds, sizes, ends, strings };
}

/** Chunk k covers lines [starts[k], starts[k] + lines of k). */
export function chunkAt(starts: readonly number[], line: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid]! <= line) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/**
 * Lines [from, from + count) of a log made of chunks whose first lines are `starts`; `load` gives
 * chunks k0..k1 (inclusive).
 */
async function readChunks(
  starts: readonly number[],
  total: number,
  from: number,
  count: number,
  load: (k0: number, k1: number) => Promise<readonly LogChunk[]>,
): Promise<string[]> {
  const end = Math.min(total, from + count);
  if (from >= end || starts.length === 0) return [];
  const k0 = chunkAt(starts, from);
  const chunks = await load(k0, chunkAt(starts, end - 1));
  const out: string[] = [];
  for (let j = 0; j < chunks.length; j++) {
    // a filter reads the whole log: let the host's other work in between chunks
    if (j > 0) await nextTurn();
    const first = starts[k0 + j]!;
    for (const line of chunkLines(chunks[j]!, from - first, end - first)) out.push(line);
  }
  return out;
}

const nextTurn = (): Promise<void> => new Promise((r) => setImmediate(r));

/** Every line of `chunks`, '\n'-terminated; yields between chunks so a long log never holds the thread. */
async function allLines(chunks: readonly LogChunk[]): Promise<string> {
  const parts: string[] = [];
  for (const chunk of chunks) {
    if (chunk.lines > 0) parts.push(chunkLines(chunk).join('\n') + '\n');
    await nextTurn();
  }
  return parts.join('');
}

/** A running job's log in memory. */
export function liveSource(chunks: readonly LogChunk[], counts: LogCounts): LogSource {
  const starts: number[] = [];
  let n = 0;
  for (const c of chunks) {
    starts.push(n);
    n += c.lines;
  }
  return {
    ...counts,
    read: (from, count) =>
      readChunks(starts, counts.total, from, count, async (k0, k1) => chunks.slice(k0, k1 + 1)),
    all: () => allLines(chunks),
  };
}

/** A finished job's log on disk (`base`.json and `base`.log), or null when there is none. */
export async function diskSource(base: string): Promise<LogSource | null> {
  let index: LogIndex;
  try {
    index = JSON.parse(await readFile(`${base}.json`, 'utf8')) as LogIndex;
    if (!Array.isArray(index.chunks)) return null;
  } catch {
    return null;
  }
  if (index.version === 1) return textFileSource(base, index);
  if (index.version !== LOG_FILE_VERSION) return null;
  const starts = index.chunks.map((c) => c[0]);
  /** chunks k0..k1 from one read of the bytes they span */
  const load = async (k0: number, k1: number): Promise<LogChunk[]> => {
    const fh = await open(`${base}.log`, 'r');
    try {
      const byteStart = index.chunks[k0]![1];
      const byteEnd = index.chunks[k1 + 1]?.[1] ?? (await fh.stat()).size;
      const buf = Buffer.alloc(Math.max(0, byteEnd - byteStart));
      await fh.read(buf, 0, buf.length, byteStart);
      const out: LogChunk[] = [];
      for (let k = k0; k <= k1; k++) {
        const [, offset, lines, wide] = index.chunks[k]!;
        const next = k < k1 ? index.chunks[k + 1]![1] : byteEnd;
        const chunk = decodeChunk(buf.subarray(offset - byteStart, next - byteStart), lines, wide === 1);
        if (!chunk) throw new Error(`${base}.log: chunk ${k} is damaged`);
        out.push(chunk);
      }
      return out;
    } finally {
      await fh.close();
    }
  };
  return {
    total: index.lines,
    dropped: index.dropped,
    read: (from, count) => readChunks(starts, index.lines, from, count, load),
    all: async () => (index.chunks.length ? allLines(await load(0, index.chunks.length - 1)) : ''),
  };
}

function splitLines(text: string): string[] {
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** A version 1 log: the lines as text, the index's chunks as [first line, byte offset]. */
function textFileSource(base: string, index: LogIndex): LogSource {
  const starts = index.chunks.map((c) => c[0]);
  return {
    total: index.lines,
    dropped: index.dropped,
    async read(from, count) {
      const end = Math.min(index.lines, from + count);
      if (from >= end || index.chunks.length === 0) return [];
      const k0 = chunkAt(starts, from);
      let k1 = chunkAt(starts, end - 1);
      const byteStart = index.chunks[k0]![1];
      const byteEnd = k1 + 1 < index.chunks.length ? index.chunks[++k1]![1] : undefined;
      const fh = await open(`${base}.log`, 'r');
      try {
        const size = byteEnd ?? (await fh.stat()).size;
        const buf = Buffer.alloc(size - byteStart);
        await fh.read(buf, 0, buf.length, byteStart);
        const lines = splitLines(buf.toString('utf8'));
        const skip = from - starts[k0]!;
        return lines.slice(skip, skip + (end - from));
      } finally {
        await fh.close();
      }
    },
    async all() {
      return readFile(`${base}.log`, 'utf8').catch(() => '');
    },
  };
}
