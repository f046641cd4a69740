// dirstate.walk for status with an always-matcher: the working directory read with bounded parallel
// readdir and lstat (libuv's threads, callbacks: no promise per file), ignored directories never
// entered, nested repositories (a directory holding `.hg`) skipped as osutil.listdir(skip='.hg')
// does. Untracked files need no lstat (status only names them); tracked ones get one.
import { lstat, lstatSync, readdir, type Dirent, type Stats } from 'node:fs';
import { strerror, type PathPredicate, type Warn } from './ignore';
import { workingPath } from './path-auditor';

/** fs calls in flight at once: enough to keep libuv's threads busy, few enough to bound memory. */
const CONCURRENCY = 32;

export interface WalkResult {
  /** untracked files and symlinks found (not ignored, unless every file was asked for), unsorted */
  untracked: string[];
  /** tracked paths seen: their lstat, or null when the path is a directory or a special file */
  tracked: Map<string, Stats | null>;
}

export interface WalkOptions {
  root: string;
  isTracked: (path: string) => boolean;
  /** dirstate._ignore, or never (listing ignored files) */
  ignore: PathPredicate;
  warn: Warn;
}

/** Runs the fs calls of a walk with at most CONCURRENCY in flight; resolves when all are done. */
class FsQueue {
  private active = 0;
  private readonly pending: Array<() => void> = [];
  private resolve!: () => void;
  private fail!: (e: unknown) => void;
  readonly done = new Promise<void>((res, rej) => {
    this.resolve = res;
    this.fail = rej;
  });

  push(start: (finished: () => void) => void): void {
    this.pending.push(() => start(() => this.finished()));
    this.pump();
  }

  private pump(): void {
    while (this.active < CONCURRENCY && this.pending.length) {
      this.active++;
      try {
        this.pending.pop()!();
      } catch (e) {
        this.fail(e);
      }
    }
  }

  private finished(): void {
    this.active--;
    this.pump();
    if (this.active === 0 && this.pending.length === 0) this.resolve();
  }

  error(e: unknown): void {
    this.fail(e);
  }
}

/** Walks the working directory under root (step 2 of dirstate.walk). */
export async function walkWorkingDirectory(opts: WalkOptions): Promise<WalkResult> {
  const { root, isTracked, ignore, warn } = opts;
  const rootPrefix = Buffer.from(root + '/', 'utf8');
  const result: WalkResult = { untracked: [], tracked: new Map() };
  const queue = new FsQueue();
  // lstat on this thread: a threadpool round trip per file cost more than the call itself
  // (libuv's request and callback against a microsecond lstat on a warm cache)
  const statTracked = (path: string): void => {
    // gone between readdir and lstat: missing (statfiles' None)
    result.tracked.set(
      path,
      lstatSync(workingPath(root, path, rootPrefix), { throwIfNoEntry: false }) ?? null,
    );
  };
  const visit = (dir: string): void =>
    queue.push((finished) =>
      readdir(
        dir === '' ? root : workingPath(root, dir, rootPrefix),
        { withFileTypes: true, encoding: 'latin1' },
        (err, entries: Dirent[]) => {
          if (err) {
            const code = err.code;
            if (code !== 'EACCES' && code !== 'EPERM' && code !== 'ENOENT' && code !== 'ENOTDIR')
              return queue.error(err);
            warn(`${dir}: ${strerror(err)}\n`);
          } else {
            try {
              listed(dir, entries);
            } catch (e) {
              return queue.error(e);
            }
          }
          finished();
        },
      ),
    );
  const listed = (dir: string, entries: Dirent[]): void => {
    if (dir !== '' && entries.some((e) => e.name === '.hg' && e.isDirectory())) return; // a nested repository
    const prefix = dir === '' ? '' : dir + '/';
    for (const e of entries) {
      const name = e.name;
      if (dir === '' && name === '.hg') continue;
      const path = prefix + name;
      if (e.isDirectory()) {
        if (!ignore(path)) visit(path);
        if (isTracked(path)) result.tracked.set(path, null);
      } else if (e.isFile() || e.isSymbolicLink()) {
        if (isTracked(path)) statTracked(path);
        else if (!ignore(path)) result.untracked.push(path);
      } else if (isTracked(path)) result.tracked.set(path, null);
    }
  };
  visit('');
  await queue.done;
  return result;
}

/**
 * lstat of each path, null when missing (bounded parallel); with onlyFiles, util.statfiles: null
 * also for what is neither a file nor a symlink (a directory where a file was).
 */
export async function lstatPaths(
  root: string,
  paths: readonly string[],
  onlyFiles: boolean,
): Promise<Array<Stats | null>> {
  const rootPrefix = Buffer.from(root + '/', 'utf8');
  const out = new Array<Stats | null>(paths.length).fill(null);
  if (paths.length === 0) return out;
  const queue = new FsQueue();
  paths.forEach((path, i) =>
    queue.push((finished) =>
      lstat(workingPath(root, path, rootPrefix), (err, st) => {
        if (err && err.code !== 'ENOENT' && err.code !== 'ENOTDIR') return queue.error(err);
        out[i] = err || (onlyFiles && !st.isFile() && !st.isSymbolicLink()) ? null : st;
        finished();
      }),
    ),
  );
  await queue.done;
  return out;
}
