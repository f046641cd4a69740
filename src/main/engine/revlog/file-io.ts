// The few file operations revlog reading needs, in two flavours. 'async' goes through libuv's
// thread pool (right for cold disks and network file systems, where requests overlap); 'sync'
// calls the kernel directly, which on page-cache hits costs a few µs instead of a thread-pool round
// trip plus promise machinery (measured on the medium corpus: ~60 µs of main-thread time per file
// through fs/promises for open+fstat+read+close, under 15 µs synchronously). Callers that read
// thousands of small revlogs pick per file (verify starts sync and falls back to async when reads
// turn slow).
import { closeSync, readSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { openRegular, openRegularSync } from '../repo/state-file';

// A revlog file is read only when it is a regular file (repo/state-file.ts): a FIFO in a (served)
// repository would block the reader and a libuv thread for good, a link to /dev/zero would be
// read forever. Links are followed, as hg follows them (serving checks them: store-auditor.ts).
const FOLLOW = { followLink: true } as const;

/** Opens path for reading with fs/promises, with its size then; null when it does not exist. */
export function openRevlogFile(path: string): Promise<{ fh: FileHandle; size: number } | null> {
  return openRegular(path, FOLLOW);
}

export type RevlogIoMode = 'async' | 'sync';

export interface OpenedFile {
  /** the file's size when it was opened */
  size(): Promise<number>;
  read(buf: Uint8Array, offset: number, length: number, position: number): Promise<number>;
  close(): Promise<void>;
}

class AsyncFile implements OpenedFile {
  constructor(
    private readonly fh: FileHandle,
    private readonly openedSize: number,
  ) {}
  async size(): Promise<number> {
    return this.openedSize;
  }
  async read(buf: Uint8Array, offset: number, length: number, position: number): Promise<number> {
    return (await this.fh.read(buf, offset, length, position)).bytesRead;
  }
  close(): Promise<void> {
    return this.fh.close();
  }
}

class SyncFile implements OpenedFile {
  constructor(
    private fd: number,
    private readonly openedSize: number,
  ) {}
  async size(): Promise<number> {
    return this.openedSize;
  }
  async read(buf: Uint8Array, offset: number, length: number, position: number): Promise<number> {
    return readSync(this.fd, buf, offset, length, position);
  }
  async close(): Promise<void> {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }
}

/**
 * Opens path for reading; null when it does not exist (a missing revlog file is an empty one).
 * `knownSize`: the size a listing of regular files found (no fstat then: openRegular).
 */
export async function openForRead(
  path: string,
  mode: RevlogIoMode,
  knownSize?: number,
): Promise<OpenedFile | null> {
  const opts = { ...FOLLOW, knownSize };
  if (mode === 'sync') {
    const opened = openRegularSync(path, opts);
    return opened && new SyncFile(opened.fd, opened.size);
  }
  const opened = await openRegular(path, opts);
  return opened && new AsyncFile(opened.fh, opened.size);
}

/** Reads up to `size` bytes from the start (fewer if the file is shorter). */
export async function readUpTo(f: OpenedFile, size: number): Promise<Uint8Array> {
  const buf = Buffer.allocUnsafe(size);
  let got = 0;
  while (got < size) {
    const n = await f.read(buf, got, size - got, got);
    if (n === 0) break;
    got += n;
  }
  return buf.subarray(0, got);
}
