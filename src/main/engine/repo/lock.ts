// Repository locks as hg 6.3.2 takes them (lock.py `lock._trylock`/`_testlock`, util.makelock):
// `.hg/wlock` (working copy: bookmarks, dirstate) and `.hg/store/lock` (the store). The lock is a
// symlink whose target is `<host>[/<pid-namespace inode>]:<pid>` (a plain file where symlinks are
// unavailable), created atomically. A lock held by a live process is waited for (hg: ui.timeout,
// 600 s) and then refused; one left by a dead process on this host is broken under `<lock>.break`,
// exactly as hg does, so hg and Sluice exclude each other both ways. The waiting, `got lock after`
// and abort messages are lock.trylock's and scmutil.callcatch's, word for word.

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
import { pythonBytesRepr } from '../revlog/byte-source';
import { readRepoConfig, readUserConfig } from '../store/hgrc';

/**
 * `[ui] timeout` and `timeout.warn` (seconds) as localrepo._lock reads them: the repository's
 * hgrc over the user's and system's. hg's configint: anything but an integer is a config error.
 */
export async function readLockTimeouts(
  repoRoot: string,
): Promise<Pick<LockOptions, 'timeoutMs' | 'warnAfterMs'>> {
  const repo = await readRepoConfig(repoRoot);
  const user = readUserConfig();
  const seconds = (key: string, fallback: number): number => {
    const text = repo.get('ui', key) ?? user.get('ui', key);
    if (text === undefined) return fallback;
    if (!/^\s*[-+]?\d+\s*$/.test(text))
      throw new SluiceError('USAGE', `config error: ui.${key} is not a valid integer ('${text}')`);
    return Number(text) * 1000;
  };
  return {
    timeoutMs: seconds('timeout', DEFAULT_LOCK_TIMEOUT_MS / 1000),
    warnAfterMs: seconds('timeout.warn', 0),
  };
}

/** hg's ui.timeout default (seconds → ms). */
export const DEFAULT_LOCK_TIMEOUT_MS = 600_000;
const POLL_MS = 100;

export interface LockOptions {
  /** how long to wait for a lock held by a live process (default 600 s, hg's ui.timeout) */
  timeoutMs?: number;
  /** hg's ui.timeout.warn: say it waits only once it has waited this long (default 0: at once) */
  warnAfterMs?: number;
  signal?: AbortSignal;
  /**
   * hg's ui.warn lines while waiting: "waiting for lock on repository R held by process 'P' on
   * host 'H'" once, and "got lock after N seconds" if it said so
   */
  onWait?: (message: string) => void;
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

/** `%r` of a locker as hg prints it: pycompat.bytestr's repr, a bytes repr without its `b`. */
function pythonRepr(locker: string): string {
  return pythonBytesRepr(locker, 'latin1').slice(1);
}

/** lock.trylock's printwarning: a `host:pid` locker named in parts, an old-style one whole. */
export function waitingMessage(description: string, locker: string): string {
  const colon = locker.indexOf(':');
  if (colon < 0) return `waiting for lock on ${description} held by ${pythonRepr(locker)}`;
  const [host, pid] = [locker.slice(0, colon), locker.slice(colon + 1)];
  return `waiting for lock on ${description} held by process ${pythonRepr(pid)} on host ${pythonRepr(host)}`;
}

/** strerror() of the errors a lock's creation meets (hg prints encoding.strtolocal(inst.strerror)). */
const STRERROR: Record<string, string> = {
  EACCES: 'Permission denied',
  EPERM: 'Operation not permitted',
  EROFS: 'Read-only file system',
  ENOSPC: 'No space left on device',
  ENOENT: 'No such file or directory',
  ENOTDIR: 'Not a directory',
  EDQUOT: 'Disk quota exceeded',
};

/** error.LockUnavailable as scmutil.callcatch prints it: "could not lock repository R: Permission denied". */
function lockUnavailable(path: string, description: string | undefined, e: unknown): SluiceError {
  const code = (e as NodeJS.ErrnoException).code ?? 'EIO';
  return new SluiceError(
    'LOCK_UNAVAILABLE',
    `could not lock ${description ?? path}: ${STRERROR[code] ?? code}`,
    {
      path,
      errno: code,
    },
  );
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
function tryLock(path: string, description?: string): string | null {
  for (let retry = 5; retry > 0; retry--) {
    try {
      makeLock(lockName(), path);
      return null;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw lockUnavailable(path, description, e);
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
 * Takes the lock at `path`, waiting up to timeoutMs for a live holder as lock.trylock does (a
 * timeout of 0 does not wait, nor say it would). LOCKED (with the holder) when it stays held,
 * LOCK_UNAVAILABLE when it cannot be created (a read-only `.hg`), CANCELLED when the signal fires.
 */
export async function acquireLock(path: string, opts: LockOptions = {}): Promise<HeldLock> {
  const timeout = opts.timeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
  const warnAfter = timeout === 0 ? Infinity : (opts.warnAfterMs ?? 0);
  const description = opts.description ?? path;
  const started = Date.now();
  let warned = false;
  for (;;) {
    if (opts.signal?.aborted) throw new SluiceError('CANCELLED', 'cancelled');
    const holder = tryLock(path, opts.description);
    const waited = Date.now() - started;
    if (holder === null) {
      if (warned) opts.onWait?.(`got lock after ${Math.max(1, Math.ceil(waited / 1000))} seconds`);
      return heldLock(path);
    }
    if (!warned && waited >= warnAfter) {
      warned = true;
      opts.onWait?.(waitingMessage(description, holder));
    }
    if (waited >= timeout) {
      throw new SluiceError(
        'LOCKED',
        `${description}: timed out waiting for lock held by ${pythonRepr(holder)}`,
        { path, holder },
      );
    }
    await new Promise((r) => setTimeout(r, Math.min(POLL_MS, Math.max(1, timeout - waited))));
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
