// Atomic destination: a clone or apply is written into a temporary directory beside DEST and
// renamed into place only once it is complete, so DEST is either absent (or the empty directory it
// was) or a whole repository — never half of one. hg instead creates DEST first and deletes it on
// error (hg.clone's cleanup), which leaves a partial repository behind when the process is killed.
//
// The temporary is `.<DESTNAME>.sluice-tmp-<pid>-<random>` in DEST's parent (same filesystem, so the
// final rename is atomic) and holds a marker file naming its owner. A later run removes temporaries
// whose owner process is dead (kill -9, power loss); those of live processes — including other jobs
// of this same process — are left alone.

import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { SluiceError, toSluiceError } from '../errors';

/** Marker inside a temporary; removed just before the final rename. */
export const OWNER_MARKER = '.sluice-tmp-owner';
const TEMP_NAME = /^\.(.*)\.sluice-tmp-(\d+)-([0-9a-f]+)$/;

export interface OwnerMarker {
  pid: number;
  host: string;
  startedAt: number;
  dest: string;
}

export interface TempDestination {
  /** final path (absolute) */
  readonly dest: string;
  /** the temporary directory: the repository is written here (its `.hg/` lives directly inside) */
  readonly root: string;
  /** Moves the finished repository into DEST. DEST_EXISTS if DEST was filled meanwhile. */
  commit(): Promise<void>;
  /** Removes the temporary (after an error or a cancel). Never throws. */
  discard(): Promise<void>;
}

/**
 * Checks that DEST does not exist or is an empty directory (hg clone: `destination 'X' is not
 * empty`) and returns whether it is an empty directory.
 */
export async function checkDestination(dest: string): Promise<{ emptyDir: boolean }> {
  let st;
  try {
    st = await fsp.lstat(dest);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { emptyDir: false };
    throw toSluiceError(e);
  }
  if (st.isDirectory() && (await fsp.readdir(dest)).length === 0) return { emptyDir: true };
  // the repository is renamed into place: never through (or over) a link to somewhere else
  if (st.isSymbolicLink())
    throw new SluiceError(
      'DEST_EXISTS',
      `destination '${dest}' is a symbolic link: give the folder it points to instead`,
      { dest },
    );
  throw new SluiceError('DEST_EXISTS', `destination '${dest}' is not empty`, { dest });
}

/**
 * Creates the temporary for DEST after checking DEST and removing stale temporaries beside it.
 * The parent of DEST is created if missing (hg clone does the same); it is not removed on failure.
 */
export async function createTempDestination(destPath: string): Promise<TempDestination> {
  const dest = resolve(destPath);
  const parent = dirname(dest);
  await checkDestination(dest);
  await fsp.mkdir(parent, { recursive: true }).catch((e) => {
    throw toSluiceError(e);
  });
  await removeStaleTemporaries(parent);
  const root = await makeOwnedTemporary(dest);

  let settled = false;
  return {
    dest,
    root,
    async commit() {
      if (settled) throw new SluiceError('IO', 'temporary destination already committed or discarded');
      await fsp.rm(join(root, OWNER_MARKER), { force: true });
      try {
        await renameIntoPlace(root, dest);
      } catch (e) {
        // Leave the marker out: discard() is the caller's next step and removes the tree anyway.
        throw e instanceof SluiceError ? e : toSluiceError(e);
      }
      settled = true;
    },
    async discard() {
      if (settled) return;
      settled = true;
      await removeTree(root);
    },
  };
}

/**
 * A scratch directory beside DEST for work that precedes the repository itself (a clone bundle's
 * download). It is a temporary like the destination's (same name pattern, same owner marker), so a
 * run killed mid-download leaves nothing that the next run beside DEST does not sweep. DEST's
 * parent is created if missing.
 */
export async function createScratchBeside(
  destPath: string,
): Promise<{ dir: string; remove(): Promise<void> }> {
  const dest = resolve(destPath);
  await fsp.mkdir(dirname(dest), { recursive: true }).catch((e) => {
    throw toSluiceError(e);
  });
  await removeStaleTemporaries(dirname(dest));
  const dir = await makeOwnedTemporary(dest);
  return { dir, remove: () => removeTree(dir) };
}

/** `.<DESTNAME>.sluice-tmp-<pid>-<random>` beside DEST, with this process's owner marker. */
async function makeOwnedTemporary(dest: string): Promise<string> {
  const dir = join(
    dirname(dest),
    `.${basename(dest)}.sluice-tmp-${process.pid}-${randomBytes(4).toString('hex')}`,
  );
  try {
    await fsp.mkdir(dir);
    const marker: OwnerMarker = { pid: process.pid, host: hostname(), startedAt: Date.now(), dest };
    await fsp.writeFile(join(dir, OWNER_MARKER), JSON.stringify(marker) + '\n');
  } catch (e) {
    await removeTree(dir);
    throw toSluiceError(e);
  }
  return dir;
}

/**
 * rename(2) replaces an empty directory on POSIX; Windows refuses to rename onto an existing
 * directory, so an empty DEST is removed first (a short window in which DEST is absent).
 */
async function renameIntoPlace(root: string, dest: string): Promise<void> {
  try {
    await fsp.rename(root, dest);
    return;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (
      code !== 'EEXIST' &&
      code !== 'ENOTEMPTY' &&
      code !== 'EPERM' &&
      code !== 'EACCES' &&
      code !== 'EISDIR'
    ) {
      throw toSluiceError(e);
    }
  }
  const { emptyDir } = await checkDestination(dest); // DEST_EXISTS when someone filled it meanwhile
  if (emptyDir) await fsp.rmdir(dest).catch(() => undefined);
  try {
    await fsp.rename(root, dest);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST' || code === 'ENOTEMPTY') {
      throw new SluiceError('DEST_EXISTS', `destination '${dest}' is not empty`, { dest });
    }
    throw toSluiceError(e);
  }
}

/**
 * Removes temporaries in `parent` whose owner is a dead process on this host. Returns the paths
 * removed. A temporary without a readable marker (killed between mkdir and the marker write, or
 * after the marker was removed for the final rename) is judged by the pid in its name.
 */
export async function removeStaleTemporaries(parent: string): Promise<string[]> {
  let names: string[];
  try {
    names = await fsp.readdir(parent);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const n of names) {
    const m = TEMP_NAME.exec(n);
    if (!m) continue;
    const path = join(parent, n);
    const owner = await readOwner(path);
    const pid = owner?.pid ?? Number(m[2]);
    if (owner && owner.host !== hostname()) continue; // another machine on a shared filesystem
    if (isProcessAlive(pid)) continue;
    await removeTree(path);
    removed.push(path);
  }
  return removed;
}

async function readOwner(dir: string): Promise<OwnerMarker | undefined> {
  try {
    const o = JSON.parse(await fsp.readFile(join(dir, OWNER_MARKER), 'utf8')) as Partial<OwnerMarker>;
    if (typeof o.pid === 'number' && typeof o.host === 'string') return o as OwnerMarker;
  } catch {
    // no marker or a torn one: fall back to the pid in the name
  }
  return undefined;
}

/** kill(pid, 0): ESRCH = gone; EPERM = alive but someone else's. A reused pid counts as alive. */
export function isProcessAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function removeTree(path: string): Promise<void> {
  // maxRetries: Windows reports EBUSY/EPERM for a moment after handles close (antivirus scans).
  await fsp.rm(path, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 }).catch(() => undefined);
}
