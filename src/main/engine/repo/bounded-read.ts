// Reading a repository's cache files whole, within a bound: a cache is hostile input like any
// other file, and a missing, unreadable or oversized one is simply not used.
import { closeSync, readSync } from 'node:fs';
import { openRegularSync } from './state-file';

/**
 * Up to `max` bytes of `path`; undefined when it is missing, unreadable, a symbolic link, not a
 * regular file, or (with `exact`) longer than `max`.
 */
export function readBounded(path: string, max: number, exact: boolean): Buffer | undefined {
  return withFile(path, (fd, size) =>
    exact && size > max ? undefined : readFully(fd, Math.min(size, max), 0),
  );
}

/**
 * `length` bytes of `path` from offset `at` (never through a symbolic link at the file); fewer
 * when the file is shorter now, undefined when it cannot be read.
 */
export function readAt(path: string, at: number, length: number): Buffer | undefined {
  return withFile(path, (fd) => readFully(fd, length, at));
}

/**
 * `use` on the file opened to read (a regular file, not through a link: repo/state-file.ts);
 * undefined when anything fails.
 */
function withFile(path: string, use: (fd: number, size: number) => Buffer | undefined): Buffer | undefined {
  let fd: number;
  let size: number;
  try {
    const opened = openRegularSync(path, {});
    if (!opened) return undefined;
    ({ fd, size } = opened);
  } catch {
    return undefined;
  }
  try {
    return use(fd, size);
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
