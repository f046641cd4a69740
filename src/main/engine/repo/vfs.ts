// The one opener for files of an existing repository that are written in place (hg 6.3.2's
// vfs.__call__ with util.mktempcopy, util.checknlink and util.nlinks). `hg clone /local/path`
// hard-links the store, so a file appended to or truncated in place would change the clone's
// source too: a file opened to append or update whose link count is above 1 is first copied
// beside itself and the copy renamed over it; a file opened to write is unlinked first. Nothing
// is opened through a symbolic link. Engine code outside this module may not open a file to
// append or update (eslint.config.js, test/lint/vfs.test.ts).

import {
  closeSync,
  copyFileSync,
  fstatSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  renameSync,
  unlinkSync,
  writeFileSync,
  writeSync,
  constants as fsConstants,
} from 'node:fs';
import { randomBytes } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import { toSluiceError } from '../errors';

const NOFOLLOW = fsConstants.O_NOFOLLOW ?? 0;
/** read-write, created when missing, never through a symbolic link (hg's 'a+'/'r+' without the seek) */
const UPDATE_FLAGS = fsConstants.O_RDWR | fsConstants.O_CREAT | NOFOLLOW;

/**
 * util.checknlink's answer per filesystem (st_dev): whether link counts can be trusted there. hg
 * keeps it per vfs object (_trustnlink); it is a property of the filesystem, so one per device.
 */
const trustedNlink = new Map<number, boolean>();

/**
 * vfs.__call__ in an append or update mode: opens `path` read-write (created with its directories
 * when missing), first giving it an inode of its own when another name shares it (a hard-linked
 * clone's store file), so what is written or truncated reaches this repository only.
 */
export function openForUpdate(path: string): number {
  let fd = openCreatingDirs(path);
  try {
    if (!sharesInode(fd, dirname(path))) return fd;
    closeSync(fd);
    fd = -1;
    breakHardLink(path);
    return openSync(path, UPDATE_FLAGS, 0o666);
  } catch (e) {
    if (fd >= 0) closeSync(fd);
    throw toSluiceError(e);
  }
}

/**
 * vfs.__call__ in a write mode ('w'): the old file is unlinked and a new one created exclusively,
 * read-write, so neither a hard link nor a symbolic link planted at the name is written through.
 */
export function openReplacing(path: string): number {
  unlinkQuiet(path);
  return openSync(path, fsConstants.O_RDWR | fsConstants.O_CREAT | fsConstants.O_EXCL | NOFOLLOW, 0o666);
}

/** openReplacing with the whole content at once. */
export function writeReplacing(path: string, data: string | Uint8Array, encoding?: BufferEncoding): void {
  unlinkQuiet(path);
  writeFileSync(path, data, { flag: 'wx', ...(encoding ? { encoding } : {}) });
}

/**
 * atomictemp: a temporary written whole and synced, renamed over `path`: readers see the old file
 * or the new one, and a link at the name (hard or symbolic) is replaced, not written through.
 */
export function writeAtomic(path: string, data: Uint8Array): void {
  stageAtomic(path, [data]).commit();
}

/** A temporary written whole, waiting to replace its file (commit) or to be dropped (discard). */
export interface StagedFile {
  commit(): void;
  discard(): void;
}

/**
 * writeAtomic in two steps: `parts` go to the temporary now, one at a time (an iterator may make
 * each as it is written), and the rename waits for commit(), so a file that must appear only once
 * a job has succeeded needs no copy of its content in memory meanwhile. `sync: false` for a cache
 * whose reader checks what it reads (hg's atomictemp does not sync either): a crash may leave it
 * short, never wrong. A commit that throws leaves the temporary for discard().
 */
export function stageAtomic(path: string, parts: Iterable<Uint8Array>, sync = true): StagedFile {
  const tmp = `${path}.sluice-tmp-${process.pid}`;
  const fd = openReplacing(tmp);
  try {
    for (const data of parts)
      for (let off = 0; off < data.length;) off += writeSync(fd, data, off, data.length - off);
    if (sync) fsyncSync(fd);
  } catch (e) {
    closeSync(fd);
    unlinkQuiet(tmp);
    throw e;
  }
  closeSync(fd);
  let done = false;
  return {
    commit() {
      if (done) return;
      renameSync(tmp, path);
      done = true;
    },
    discard() {
      if (done) return;
      done = true;
      unlinkQuiet(tmp);
    },
  };
}

/** util.copyfile: the destination is unlinked first (a link there is replaced, not followed). */
export function copyReplacing(src: string, dest: string): void {
  unlinkQuiet(dest);
  copyFileSync(src, dest, fsConstants.COPYFILE_EXCL);
}

export function unlinkQuiet(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}

/** The read-write open, creating the file's directories when they are missing. */
function openCreatingDirs(path: string): number {
  try {
    return openSync(path, UPDATE_FLAGS, 0o666);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw toSluiceError(e);
  }
  mkdirSync(dirname(path), { recursive: true });
  return openSync(path, UPDATE_FLAGS, 0o666);
}

/**
 * vfs.__call__'s test: a link count above 1 (below 1 is issue1922's filesystem that reports 0),
 * or any file on a filesystem whose link counts checknlink found untrustworthy (a new file
 * there is copied too: hg knows it absent from its lstat, which costs every other open a call).
 */
function sharesInode(fd: number, dir: string): boolean {
  const st = fstatSync(fd);
  if (st.nlink !== 1) {
    if (st.nlink > 1) trustedNlink.set(st.dev, true);
    return true;
  }
  let trusted = trustedNlink.get(st.dev);
  if (trusted === undefined) {
    trusted = checkNlink(dir);
    trustedNlink.set(st.dev, trusted);
  }
  return !trusted;
}

/**
 * util.mktempcopy + rename: the file's bytes and permission bits copied to `.NAME-XXXX~` beside
 * it, renamed over it; the other names keep the old inode unchanged.
 */
export function breakHardLink(path: string): void {
  const tmp = join(dirname(path), `.${basename(path)}-${randomBytes(6).toString('hex')}~`);
  try {
    // copyfile(3)'s EXCL: the temporary is new; the mode is the source's
    copyFileSync(path, tmp, fsConstants.COPYFILE_EXCL);
    renameSync(tmp, path);
  } catch (e) {
    unlinkQuiet(tmp);
    throw toSluiceError(e);
  }
}

/**
 * util.checknlink: whether this filesystem reports a hard link's count (some network and FUSE
 * filesystems say 1 always), tried on two temporaries in `dir`. Any failure says no.
 */
export function checkNlink(dir: string): boolean {
  const stem = join(dir, `.sluice-nlink-${process.pid}-${randomBytes(6).toString('hex')}`);
  const f1 = `${stem}1~`;
  const f2 = `${stem}2~`;
  let fd = -1;
  try {
    closeSync(
      openSync(f1, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | NOFOLLOW, 0o600),
    );
    linkSync(f1, f2);
    fd = openSync(f2, fsConstants.O_RDONLY | NOFOLLOW);
    return fstatSync(fd).nlink > 1;
  } catch {
    return false;
  } finally {
    if (fd >= 0) closeSync(fd);
    unlinkQuiet(f1);
    unlinkQuiet(f2);
  }
}
