// Repository locks as hg 6.3.2 takes them (lock.py `lock._trylock`/`_testlock`, util.makelock):
// `.hg/wlock` (working copy: bookmarks, dirstate) and `.hg/store/lock` (the store). The lock is a
// symlink whose target is `<host>[/<pid-namespace inode>]:<pid>` (a plain file where symlinks are
// unavailable), created atomically. A lock held by a live process is waited for (hg: ui.timeout,
// 600 s) and then refused; one left by a dead process on this host is broken under `<lock>.break`,
// exactly as hg does, so hg and Sluice exclude each other both ways.

import {
  closeSync,
  lstatSync,
  openSync,
  readSync,
  readlinkSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { SluiceError } from '../errors';

/** hg's ui.timeout default (seconds → ms). */
export const DEFAULT_LOCK_TIMEOUT_MS = 600_000;
const POLL_MS = 100;

export interface LockOptions {
  /** how long to wait for a lock held by a live process (default 600 s, hg's ui.timeout) */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** called once when the lock is found held (hg: "waiting for lock on repository … held by …") */
  onWait?: (holder: string) => void;
  /** what the lock protects, for messages (hg's desc: "repository X", "working directory of X") */
  description?: string;
}

export interface HeldLock {
  readonly path: string;
  /** Removes the lock (only if it is still ours). Never throws. */
  release(): void;
}

let lockPrefix: string | undefined;

/** lock._getlockprefix: the host name, plus the pid namespace inode on Linux. */
export function lockHostPrefix(): string {
  if (lockPrefix === undefined) {
    let p = hostname();
    if (process.platform === 'linux') {
      try {
        p += '/' + statSync('/proc/self/ns/pid').ino.toString(16);
      } catch {
        // no /proc: host name only, as hg
      }
    }
    lockPrefix = p;
  }
  return lockPrefix;
}

/** The lock content this process writes. */
export function lockName(): string {
  return `${lockHostPrefix()}:${process.pid}`;
}

function makeLock(info: string, path: string): void {
  try {
    symlinkSync(info, path);
    return;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw e;
    if (code !== 'EPERM' && code !== 'ENOSYS' && code !== 'EOPNOTSUPP') throw e;
  }
  writeFileSync(path, info, { flag: 'wx' }); // O_CREAT|O_EXCL like util.makelock's fallback
}

/** A locker is `host:pid` (a few dozen bytes); a lock file's content beyond this is not read. */
const LOCK_INFO_MAX = 1024;

/** util.readlock: the symlink target, or the file content; null when there is no lock. */
export function readLock(path: string): string | null {
  try {
    return readlinkSync(path, 'latin1');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return null;
    if (code !== 'EINVAL' && code !== 'UNKNOWN') throw e;
  }
  let fd: number;
  try {
    // a FIFO or device there would block or never end: such a lock names no locker (held, by nobody
    // Sluice may break), and a huge regular file is read only as far as a locker can reach
    if (!lstatSync(path).isFile()) return '';
    fd = openSync(path, 'r');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
  try {
    const buf = Buffer.alloc(LOCK_INFO_MAX);
    const n = readSync(fd, buf, 0, LOCK_INFO_MAX, null);
    return buf.toString('latin1', 0, n);
  } finally {
    closeSync(fd);
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** lock._lockshouldbebroken: a `host:pid` lock of this host whose process is gone. */
function shouldBreak(locker: string | null): boolean {
  if (locker === null) return false;
  const colon = locker.indexOf(':');
  if (colon < 0) return false;
  if (locker.slice(0, colon) !== lockHostPrefix()) return false;
  const pidText = locker.slice(colon + 1);
  if (!/^\d+$/.test(pidText)) return false;
  const pid = Number(pidText);
  if (pid === process.pid) return false;
  return !processAlive(pid);
}

/** One attempt; returns null when taken, else the holder. Breaks a stale lock like lock._testlock. */
function tryLock(path: string): string | null {
  for (let retry = 5; retry > 0; retry--) {
    try {
      makeLock(lockName(), path);
      return null;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'EEXIST') {
        throw new SluiceError('IO', `could not lock ${path}: ${(e as Error).message}`, { errno: code });
      }
    }
    const locker = readLock(path);
    if (locker === null) continue; // released meanwhile: try again
    if (!shouldBreak(locker)) return locker;
    // Break the dead process's lock while holding `<lock>.break`, or two breakers could race and
    // one remove the lock the other just took.
    const breakPath = path + '.break';
    try {
      makeLock(lockName(), breakPath);
    } catch {
      return locker;
    }
    try {
      const again = readLock(path);
      if (!shouldBreak(again)) {
        if (again === null) continue;
        return again;
      }
      unlinkSync(path);
    } finally {
      try {
        unlinkSync(breakPath);
      } catch {
        // gone already
      }
    }
  }
  return readLock(path) ?? 'unknown';
}

/**
 * Takes the lock at `path`, waiting up to timeoutMs for a live holder. LOCKED (with the holder)
 * when it stays held, CANCELLED when the signal fires while waiting.
 */
export async function acquireLock(path: string, opts: LockOptions = {}): Promise<HeldLock> {
  const timeout = opts.timeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
  const started = Date.now();
  let warned = false;
  for (;;) {
    if (opts.signal?.aborted) throw new SluiceError('CANCELLED', 'cancelled');
    const holder = tryLock(path);
    if (holder === null) return heldLock(path);
    if (!warned) {
      warned = true;
      opts.onWait?.(holder);
    }
    if (Date.now() - started >= timeout) {
      throw new SluiceError(
        'LOCKED',
        `timed out waiting for lock held by '${holder}' on ${opts.description ?? path}`,
        { path, holder },
      );
    }
    await new Promise((r) => setTimeout(r, Math.min(POLL_MS, Math.max(1, timeout))));
  }
}

function heldLock(path: string): HeldLock {
  const mine = lockName();
  let released = false;
  return {
    path,
    release() {
      if (released) return;
      released = true;
      try {
        // remove only our own lock (a breaker may have replaced it if we looked dead)
        if (readLock(path) === mine) unlinkSync(path);
      } catch {
        // nothing to release
      }
    },
  };
}

/** True when `path` exists as a lock (symlink or file), whoever holds it. */
export function lockExists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}
