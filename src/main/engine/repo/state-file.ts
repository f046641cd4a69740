// Reading a repository's state files (requires, phaseroots, bookmarks, obsstore, the changelog's
// index, hgrc…) whole, within a bound. They are hostile input wherever a repository is served or
// opened that someone else could write: one that is a FIFO would block the reader (and a libuv
// thread) forever, a device such as /dev/zero would be read until memory runs out. Only regular
// files are read; a link is followed only where the caller says links are legitimate (hgrc files
// are commonly linked to dotfiles), never for what a served repository's view is computed from.
// Revlogs (revlog/file-io.ts) and caches (bounded-read.ts) open through openRegular(Sync) too.
import {
  closeSync,
  constants as fsConstants,
  fstatSync,
  lstatSync,
  openSync,
  readSync,
  type Stats,
} from 'node:fs';
import { lstat, open, type FileHandle } from 'node:fs/promises';
import { SluiceError } from '../errors';

const NOFOLLOW = fsConstants.O_NOFOLLOW ?? 0;
// a FIFO's open() waits for a writer without it; regular files read the same with it
const NONBLOCK = fsConstants.O_NONBLOCK ?? 0;

export interface StateFileOptions {
  /** the most bytes accepted: a larger file is a LIMIT error, or with `prefix` read up to it */
  max: number;
  /** read only the first `max` bytes (a header) */
  prefix?: boolean;
  /** follow a symbolic link at the file itself (default: refused as UNSAFE_PATH) */
  followLink?: boolean;
}

type LinkOption = Pick<StateFileOptions, 'followLink'>;

export interface OpenRegularOptions extends LinkOption {
  /**
   * The size a listing that took regular files only already found (verify's walk): no fstat then.
   * Reads stay within it, and O_NONBLOCK keeps anything swapped in since from blocking them.
   */
  knownSize?: number;
}

const MISSING = new Set(['ENOENT', 'ENOTDIR']);

function flags(opts: LinkOption): number {
  return fsConstants.O_RDONLY | NONBLOCK | (opts.followLink ? 0 : NOFOLLOW);
}

const linkRefused = (path: string): SluiceError =>
  new SluiceError('UNSAFE_PATH', `${path} is a symbolic link, which Sluice does not follow`, { path });

/** Without O_NOFOLLOW (Windows) an lstat before the open decides. */
const lstatFirst = (opts: LinkOption): boolean => NOFOLLOW === 0 && !opts.followLink;

function openError(path: string, e: unknown): SluiceError | null {
  if (e instanceof SluiceError) return e;
  const code = (e as NodeJS.ErrnoException).code ?? '';
  if (MISSING.has(code)) return null;
  // O_NOFOLLOW at a link: ELOOP (Linux), EMLINK (FreeBSD), EFTYPE (NetBSD)
  if (code === 'ELOOP' || code === 'EMLINK' || code === 'EFTYPE') return linkRefused(path);
  return new SluiceError('IO', `cannot read ${path}: ${(e as Error).message}`, { path, errno: code });
}

/** Throws unless `st` is a regular file (a folder: IO with errno EISDIR). */
function checkRegular(path: string, st: Stats): void {
  if (st.isDirectory()) throw new SluiceError('IO', `${path} is a directory`, { path, errno: 'EISDIR' });
  if (!st.isFile()) throw new SluiceError('UNSAFE_PATH', `${path} is not a regular file`, { path });
}

/** The number of bytes to read of a file of `size` bytes within the bound. */
function lengthToRead(path: string, size: number, opts: StateFileOptions): number {
  if (size > opts.max && !opts.prefix)
    throw new SluiceError('LIMIT', `${path} is ${size} bytes, more than the ${opts.max} Sluice reads`, {
      path,
      size,
    });
  return Math.min(size, opts.max);
}

/**
 * Opens `path` to read if it is a regular file (O_NONBLOCK: a FIFO's open does not wait), with its
 * size then; null when it does not exist. Typed errors as the header says.
 */
export function openRegularSync(path: string, opts: OpenRegularOptions): { fd: number; size: number } | null {
  let fd: number;
  try {
    if (lstatFirst(opts) && lstatSync(path).isSymbolicLink()) throw linkRefused(path);
    fd = openSync(path, flags(opts));
  } catch (e) {
    const err = openError(path, e);
    if (err) throw err;
    return null;
  }
  if (opts.knownSize !== undefined) return { fd, size: opts.knownSize };
  try {
    const st = fstatSync(fd);
    checkRegular(path, st);
    return { fd, size: st.size };
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

/** openRegularSync on libuv's threadpool. */
export async function openRegular(
  path: string,
  opts: OpenRegularOptions,
): Promise<{ fh: FileHandle; size: number } | null> {
  let fh: FileHandle;
  try {
    if (lstatFirst(opts) && (await lstat(path)).isSymbolicLink()) throw linkRefused(path);
    fh = await open(path, flags(opts));
  } catch (e) {
    const err = openError(path, e);
    if (err) throw err;
    return null;
  }
  if (opts.knownSize !== undefined) return { fh, size: opts.knownSize };
  try {
    const st = await fh.stat();
    checkRegular(path, st);
    return { fh, size: st.size };
  } catch (e) {
    await fh.close();
    throw e;
  }
}

/** The file's bytes; null when it does not exist. Typed errors as the header says. */
export function readStateFileSync(path: string, opts: StateFileOptions): Buffer | null {
  const opened = openRegularSync(path, opts);
  if (!opened) return null;
  const { fd } = opened;
  try {
    const buf = Buffer.allocUnsafe(lengthToRead(path, opened.size, opts));
    let got = 0;
    while (got < buf.length) {
      const n = readSync(fd, buf, got, buf.length - got, got);
      if (n === 0) break; // shorter now: what is there
      got += n;
    }
    return buf.subarray(0, got);
  } finally {
    closeSync(fd);
  }
}

/** readStateFileSync on libuv's threadpool. */
export async function readStateFile(path: string, opts: StateFileOptions): Promise<Buffer | null> {
  const opened = await openRegular(path, opts);
  if (!opened) return null;
  const { fh } = opened;
  try {
    const buf = Buffer.allocUnsafe(lengthToRead(path, opened.size, opts));
    let got = 0;
    while (got < buf.length) {
      const { bytesRead } = await fh.read(buf, got, buf.length - got, got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    return buf.subarray(0, got);
  } finally {
    await fh.close();
  }
}

/** Bounds for the files a repository keeps its state in (hg's own files stay far below them). */
export const STATE_FILE_MAX = {
  /** phaseroots, bookmarks, localtags, and the small files beside them (requires, branch…) */
  lines: 256 << 20,
  /** hgrc and the files it includes */
  config: 16 << 20,
  /** obsstore, 00changelog.i: read whole, as hg does */
  large: 1 << 30,
} as const;
