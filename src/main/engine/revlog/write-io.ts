// The revlog writer's file I/O: appended bytes queued and written with writev, reads at an
// offset, and new revlogs written whole (their batch behind one journal write).
import { closeSync, readSync, writeSync, writevSync } from 'node:fs';
import { SluiceError } from '../errors';
import { openForUpdate } from '../repo/vfs';

/** A new revlog's whole content, not written yet (RevlogWriter.close's hand-over). */
export interface NewFile {
  path: string;
  pieces: Uint8Array[];
  bytes: number;
}

/**
 * Creates the files handed over by close(); the caller has flushed the transaction's journal
 * (which names every one of them) first.
 */
export function writeNewFiles(files: readonly NewFile[]): void {
  for (const f of files) {
    const fd = openForUpdate(f.path);
    try {
      writevAll(fd, f.pieces, 0);
    } finally {
      closeSync(fd);
    }
  }
}

/** Bytes appended to a file but not written yet: contiguous from `at`. */
export class WriteQueue {
  private pieces: Uint8Array[] = [];
  bytes = 0;
  private at = 0;

  push(piece: Uint8Array, position: number): void {
    if (this.bytes === 0) this.at = position;
    else if (position !== this.at + this.bytes) throw new SluiceError('IO', 'revlog writes out of order');
    this.pieces.push(piece);
    this.bytes += piece.length;
  }

  /** where the queued bytes go in the file */
  get start(): number {
    return this.at;
  }

  /** The queued pieces, the queue left empty. */
  take(): Uint8Array[] {
    const pieces = this.pieces;
    this.pieces = [];
    this.bytes = 0;
    return pieces;
  }

  writeTo(fd: number): void {
    const pieces = this.pieces;
    const at = this.at;
    this.pieces = [];
    this.bytes = 0;
    writevAll(fd, pieces, at);
  }
}

/** At most this many buffers per writev(2) (IOV_MAX is 1024 on Linux and macOS). */
const IOV_BATCH = 1024;

/** Writes pieces contiguously from `position`, in as few writev calls as the kernel allows. */
export function writevAll(fd: number, pieces: Uint8Array[], position: number): void {
  let i = 0;
  while (i < pieces.length) {
    const batch = pieces.slice(i, i + IOV_BATCH);
    let want = 0;
    for (const p of batch) want += p.length;
    const done = writevSync(fd, batch, position);
    position += done;
    if (done === want) {
      i += batch.length;
      continue;
    }
    // a short write: finish the piece it stopped in, then carry on with the next ones
    let skip = done;
    while (skip >= pieces[i]!.length) skip -= pieces[i++]!.length;
    const rest = pieces[i]!.subarray(skip);
    writeAll(fd, rest, position);
    position += rest.length;
    i++;
  }
}

export function writeAll(fd: number, data: Uint8Array, position: number): void {
  let done = 0;
  while (done < data.length) done += writeSync(fd, data, done, data.length - done, position + done);
}

export function readAt(fd: number, pos: number, len: number, label: string): Uint8Array {
  const buf = Buffer.allocUnsafe(len);
  let got = 0;
  while (got < len) {
    const n = readSync(fd, buf, got, len - got, pos + got);
    if (n === 0)
      throw new SluiceError('REVLOG', `partial read of revlog ${label}`, { problem: 'partial-read' });
    got += n;
  }
  return buf;
}
