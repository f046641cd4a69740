// The entry sequences of a stream clone, read from a repository on disk (streamclone.py
// generatev1's emitrevlogdata and _emit2):
//   v1 (stream_out, packed1): `encodedir(name)\0size\n` + data
//   v2 (stream2 payload):      vfs | uvarint len(name) | uvarint size | name | data
//
// The file list (names, sizes, order) comes from listStreamFiles up front, as hg lists under its
// lock; data is read afterwards and exactly the listed size is sent, even if a file grew since
// (revlogs are append-only and data files precede their index, so the listed prefix is
// consistent). A file that got shorter fails like hg's _emit2 ("clone could only read N bytes").
//
// Output is assembled into fresh 256 KiB buffers with synchronous reads: a stream is tens of
// thousands of small files, and a libuv round trip per open/read/close costs more than the
// syscalls. One buffer fill blocks the event loop well under a millisecond on a warm page cache.
// Buffers are never reused, so consumers may keep them.

import { closeSync, openSync, readSync } from 'node:fs';
import { cancelled, SluiceError, toSluiceError } from '../errors';
import { v1EntryHeader } from '../format/stream-v1';
import { stream2EntryHeader } from '../format/stream2';
import { OPEN_NO_FOLLOW } from '../store/walk';

/** What a stream needs of a listed file (store/walk.ts StoreFile has these and more). */
export interface StreamSourceFile {
  vfs: 's' | 'c';
  /** raw store path or cache name (latin1 byte string) */
  name: string;
  size: number;
  /** absolute path on disk */
  path: string;
}

export interface EmitOptions {
  /** output buffer size, default 256 KiB */
  bufferSize?: number;
  signal?: AbortSignal;
  /** called after each file's data was read, with running totals */
  onFile?: (file: StreamSourceFile, filesDone: number, bytesDone: number) => void;
}

const DEFAULT_BUFFER = 256 * 1024;

/** v1 entries of `files` (names encodedir'd on the wire, like generatev1). */
export function v1Entries(
  files: readonly StreamSourceFile[],
  options: EmitOptions = {},
): AsyncGenerator<Uint8Array> {
  for (const f of files) {
    if (f.vfs !== 's')
      throw new SluiceError('USAGE', `stream v1 carries store files only, not cache file ${f.name}`);
  }
  return emitEntries(files, (f) => v1EntryHeader(f.name, f.size), options);
}

/** v2 entries of `files` (the stream2 part payload). */
export function v2Entries(
  files: readonly StreamSourceFile[],
  options: EmitOptions = {},
): AsyncGenerator<Uint8Array> {
  return emitEntries(files, (f) => stream2EntryHeader(f.vfs, f.name, f.size), options);
}

async function* emitEntries(
  files: readonly StreamSourceFile[],
  header: (f: StreamSourceFile) => Uint8Array,
  options: EmitOptions,
): AsyncGenerator<Uint8Array> {
  const size = options.bufferSize ?? DEFAULT_BUFFER;
  let out = Buffer.allocUnsafe(size);
  let fill = 0;
  let filesDone = 0;
  let bytesDone = 0;
  const flush = (): Buffer => {
    const full = out.subarray(0, fill);
    out = Buffer.allocUnsafe(size);
    fill = 0;
    if (options.signal?.aborted) throw cancelled();
    return full;
  };
  for (const f of files) {
    const h = header(f);
    if (fill + h.length > out.length) {
      if (fill) yield flush();
      if (h.length > out.length) out = Buffer.allocUnsafe(h.length);
    }
    out.set(h, fill);
    fill += h.length;
    if (f.size > 0) {
      let fd: number;
      try {
        // the listing took regular files only: a link swapped in since is not followed
        fd = openSync(f.path, OPEN_NO_FOLLOW);
      } catch (e) {
        throw toSluiceError(e);
      }
      try {
        let pos = 0;
        while (pos < f.size) {
          if (fill === out.length) yield flush();
          const n = Math.min(out.length - fill, f.size - pos);
          readExactlyAt(fd, f, out, fill, pos, n);
          fill += n;
          pos += n;
        }
      } finally {
        closeSync(fd);
      }
    }
    filesDone++;
    bytesDone += f.size;
    options.onFile?.(f, filesDone, bytesDone);
  }
  if (fill) yield flush();
}

function readExactlyAt(
  fd: number,
  f: StreamSourceFile,
  out: Buffer,
  at: number,
  pos: number,
  n: number,
): void {
  let done = 0;
  while (done < n) {
    let got: number;
    try {
      got = readSync(fd, out, at + done, n - done, pos + done);
    } catch (e) {
      throw toSluiceError(e);
    }
    if (got === 0) {
      throw new SluiceError(
        'SIZE_MISMATCH',
        `clone could only read ${pos + done} bytes from ${f.name}, but expected ${f.size} bytes`,
        { name: f.name, read: pos + done, expected: f.size },
      );
    }
    done += got;
  }
}
