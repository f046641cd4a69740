// Reading a repository's cache files whole, within a bound: a cache is hostile input like any
// other file, and a missing, unreadable or oversized one is simply not used.
import { closeSync, constants as fsConstants, fstatSync, openSync, readSync } from 'node:fs';

const NOFOLLOW = fsConstants.O_NOFOLLOW ?? 0;

/**
 * Up to `max` bytes of `path`; undefined when it is missing, unreadable, a symbolic link, or (with
 * `exact`) longer than `max`.
 */
export function readBounded(path: string, max: number, exact: boolean): Buffer | undefined {
  return withFile(path, (fd) => {
    const size = fstatSync(fd).size;
    return exact && size > max ? undefined : readFully(fd, Math.min(size, max), 0);
  });
}

/**
 * `length` bytes of `path` from offset `at` (never through a symbolic link at the file); fewer
 * when the file is shorter now, undefined when it cannot be read.
 */
export function readAt(path: string, at: number, length: number): Buffer | undefined {
  return withFile(path, (fd) => readFully(fd, length, at));
}

/** `use` on the file opened to read (not through a link); undefined when anything fails. */
function withFile(path: string, use: (fd: number) => Buffer | undefined): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(path, fsConstants.O_RDONLY | NOFOLLOW);
  } catch {
    return undefined;
  }
  try {
    return use(fd);
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/** `length` bytes from `at`, fewer at the end of the file. */
function readFully(fd: number, length: number, at: number): Buffer {
  const buf = Buffer.allocUnsafe(length);
  let got = 0;
  while (got < length) {
    const n = readSync(fd, buf, got, length - got, at + got);
    if (n === 0) break;
    got += n;
  }
  return buf.subarray(0, got);
}
