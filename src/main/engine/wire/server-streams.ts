// The stream bodies `sluice serve` sends: stream_out (v1) and the stream2 part payload (v2),
// streamclone.py generatev1wireproto / generatev2 + _emit2.
//
// Listing (names, sizes, order) happens once, up front, like hg under its store lock; data is
// read afterwards, exactly the listed number of bytes per file (revlogs are append-only and data
// files precede their index, so a concurrent commit cannot make the prefix inconsistent). "Full"
// files (phaseroots, caches) are read whole at listing time, as hg copies them under the lock.
//
// Output is assembled into ~256 KiB buffers with synchronous reads: a stream clone is tens of
// thousands of small files and one libuv round trip per open/read/close costs more than the
// syscalls themselves. Each buffer fill blocks the event loop for well under a millisecond on a
// warm page cache, so concurrent clients stay interleaved.

import { closeSync, openSync, readSync } from 'node:fs';
import { SluiceError } from '../errors';
import { streamOutPreamble, v1EntryHeader } from '../format/stream-v1';
import { stream2EntryHeader } from '../format/stream2';
import { listServedFiles, type ServedFile } from './served-files';
import type { RepoSnapshot } from './repo-state';

const OUT_BUFFER = 256 * 1024;

export interface ServerStream {
  files: number;
  bytes: number;
  payload: AsyncIterable<Uint8Array>;
}

type HeaderFn = (f: ServedFile) => Buffer;

/** Reads `f.size` bytes of `f` into `out` at `at` (sync); SIZE_MISMATCH if the file got shorter. */
function readInto(fd: number, f: ServedFile, out: Buffer, at: number, pos: number, n: number): void {
  let done = 0;
  while (done < n) {
    const got = readSync(fd, out, at + done, n - done, pos + done);
    if (got === 0) {
      throw new SluiceError('SIZE_MISMATCH', `clone could only read ${pos + done} bytes from ${f.name}, but expected ${f.size} bytes`);
    }
    done += got;
  }
}

async function* emit(files: ServedFile[], header: HeaderFn, preamble?: Buffer): AsyncGenerator<Uint8Array> {
  let out = Buffer.allocUnsafe(OUT_BUFFER);
  let fill = 0;
  const flush = function* (): Generator<Uint8Array> {
    if (fill) {
      yield out.subarray(0, fill);
      out = Buffer.allocUnsafe(OUT_BUFFER);
      fill = 0;
    }
  };
  const put = (b: Uint8Array): void => {
    out.set(b, fill);
    fill += b.length;
  };
  if (preamble) put(preamble);
  for (const f of files) {
    const h = header(f);
    if (fill + h.length > out.length) yield* flush();
    put(h);
    if (f.content) {
      // a full file read at listing time
      let off = 0;
      while (off < f.content.length) {
        if (fill === out.length) yield* flush();
        const n = Math.min(out.length - fill, f.content.length - off);
        put(f.content.subarray(off, off + n));
        off += n;
      }
      continue;
    }
    let fd: number;
    try {
      fd = openSync(f.path, 'r');
    } catch (e) {
      throw new SluiceError('IO', `cannot read ${f.name}: ${(e as Error).message}`);
    }
    try {
      let pos = 0;
      while (pos < f.size) {
        if (fill === out.length) yield* flush();
        const n = Math.min(out.length - fill, f.size - pos);
        readInto(fd, f, out, fill, pos, n);
        fill += n;
        pos += n;
      }
    } finally {
      closeSync(fd);
    }
  }
  yield* flush();
}

/** The whole stream_out body: `0\n`, `<files> <bytes>\n`, entries (names encodedir'd). */
export async function* serverStreamOut(snap: RepoSnapshot): AsyncGenerator<Uint8Array> {
  const { files, bytes } = await listServedFiles(snap, 'v1');
  yield* emit(files, (f) => v1EntryHeader(f.name, f.size), streamOutPreamble(files.length, bytes));
}

/** The stream2 part: counts now (they are part params), payload lazily. */
export async function serverStream2(snap: RepoSnapshot): Promise<ServerStream> {
  const { files, bytes } = await listServedFiles(snap, 'v2');
  return { files: files.length, bytes, payload: emit(files, (f) => stream2EntryHeader(f.vfs, f.name, f.size)) };
}
