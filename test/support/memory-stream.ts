// An in-memory StreamReader for tests (apply, destination, cancel, kill -9): entries with their
// data, optional pauses and an injected failure, without going through a byte format.

import type { StreamFormat } from '../../src/shared/events';
import type { ChunkWriter } from '../../src/main/engine/format/byte-source';
import type { StreamEntry, StreamHeader, StreamReader } from '../../src/main/engine/format/stream-reader';
import { SluiceError } from '../../src/main/engine/errors';

export interface MemoryEntry {
  vfs: 's' | 'c';
  name: string;
  data: Uint8Array;
}

export interface MemoryStreamOptions {
  format?: StreamFormat;
  requirements?: string[];
  /** data is handed to copyData's writer in pieces of this size (default 4096) */
  pieceSize?: number;
  /** ms to wait before each entry (slow stream for cancel / kill tests) */
  delayMs?: number;
  /** throw this from nextEntry() before returning entry number `failAt` (0-based) */
  failAt?: number;
  failWith?: Error;
  /** called before each entry is returned (index) */
  onEntry?: (index: number) => void;
}

export function memoryStream(
  entries: MemoryEntry[],
  opts: MemoryStreamOptions = {},
): StreamReader & { closed: boolean } {
  const bytes = entries.reduce((n, e) => n + e.data.length, 0);
  const header: StreamHeader = {
    format: opts.format ?? 'stream-v2',
    files: entries.length,
    bytes,
    requirements: opts.requirements ?? [
      'generaldelta',
      'revlog-compression-zstd',
      'revlogv1',
      'sparserevlog',
    ],
    compression: 'UN',
  };
  let index = -1;
  const reader = {
    header,
    closed: false,
    async nextEntry(): Promise<StreamEntry | null> {
      index++;
      if (opts.failAt === index)
        throw opts.failWith ?? new SluiceError('TRUNCATED', `stream ended unexpectedly at entry ${index}`);
      if (index >= entries.length) return null;
      if (opts.delayMs) await new Promise((r) => setTimeout(r, opts.delayMs));
      opts.onEntry?.(index);
      const e = entries[index]!;
      return { vfs: e.vfs, name: e.name, size: e.data.length };
    },
    async copyData(write: ChunkWriter): Promise<void> {
      const data = entries[index]!.data;
      const piece = opts.pieceSize ?? 4096;
      for (let at = 0; at < data.length; at += piece) {
        const pending = write(data.subarray(at, Math.min(data.length, at + piece)));
        if (pending) await pending;
      }
    },
    async close(): Promise<void> {
      reader.closed = true;
    },
  };
  return reader;
}

/** `count` filelog entries `data/f<i>.i` of `size` bytes each, plus the two top-level revlogs. */
export function syntheticEntries(count: number, size = 100): MemoryEntry[] {
  const out: MemoryEntry[] = [];
  for (let i = 0; i < count; i++) {
    out.push({ vfs: 's', name: `data/d${i % 17}/F${i}.i`, data: Buffer.alloc(size, i & 0xff) });
  }
  out.push({ vfs: 's', name: '00manifest.i', data: Buffer.from('manifest') });
  out.push({ vfs: 's', name: '00changelog.i', data: Buffer.from('changelog') });
  return out;
}
