// dirstate.walk for status with an always-matcher: the working directory read depth first on this
// thread, as hg's pure walk does. Names only (no Dirent objects): every tracked path gets the one
// lstat status needs anyway, and that lstat also says whether it is a directory; untracked names
// are lstat'ed only when not ignored. Ignored directories are never entered, nested repositories
// (a directory holding `.hg`) skipped as osutil.listdir(skip='.hg') does. Synchronous on purpose:
// a threadpool round trip per call cost more than the microsecond calls themselves.
import { lstatSync, readdirSync, type Stats } from 'node:fs';
import { strerror, type PathPredicate, type Warn } from './ignore';
import { workingPath } from './path-auditor';

export interface WalkOptions {
  root: string;
  /** the dirstate row of a path; undefined when untracked */
  rowOf: (path: string) => number | undefined;
  /** dirstate._ignore, or never (listing ignored files) */
  ignore: PathPredicate;
  warn: Warn;
  /** a tracked path reached: its lstat, null when missing, a directory or a special file */
  tracked: (row: number, st: Stats | null) => void;
  /** an untracked file or symlink found (not ignored, unless every file was asked for) */
  untracked: (path: string) => void;
}

/** Walks the working directory under root (step 2 of dirstate.walk). */
export function walkWorkingDirectory(opts: WalkOptions): void {
  const { root, rowOf, ignore, tracked, untracked } = opts;
  const rootPrefix = Buffer.from(root + '/', 'utf8');
  const fsPath = (path: string): string | Buffer => workingPath(root, path, rootPrefix);
  const work = [''];
  for (let dir = work.pop(); dir !== undefined; dir = work.pop()) {
    const names = listNames(dir === '' ? root : fsPath(dir), dir, opts.warn);
    if (!names) continue;
    if (dir !== '' && names.includes('.hg') && lstatOrNull(fsPath(dir + '/.hg'))?.isDirectory()) continue; // a nested repository
    const prefix = dir === '' ? '' : dir + '/';
    for (const name of names) {
      if (dir === '' && name === '.hg') continue;
      const path = prefix + name;
      const row = rowOf(path);
      if (row !== undefined) {
        const st = lstatOrNull(fsPath(path));
        if (st?.isDirectory()) {
          if (!ignore(path)) work.push(path);
          tracked(row, null);
        } else tracked(row, st && (st.isFile() || st.isSymbolicLink()) ? st : null);
      } else if (!ignore(path)) {
        const st = lstatOrNull(fsPath(path)); // null: gone since the listing
        if (st?.isDirectory()) work.push(path);
        else if (st && (st.isFile() || st.isSymbolicLink())) untracked(path);
      }
    }
  }
}

/** A directory's names (latin1 byte strings); null, with hg's warning, when it cannot be read. */
function listNames(fsDir: string | Buffer, dir: string, warn: Warn): string[] | null {
  try {
    return readdirSync(fsDir, { encoding: 'latin1' });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'EACCES' && code !== 'EPERM' && code !== 'ENOENT' && code !== 'ENOTDIR') throw e;
    warn(`${dir}: ${strerror(e as NodeJS.ErrnoException)}\n`);
    return null;
  }
}

/** lstat, null when the path is missing (or a parent is no longer a directory). */
export function lstatOrNull(path: string | Buffer): Stats | null {
  try {
    return lstatSync(path, { throwIfNoEntry: false }) ?? null;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
    throw e;
  }
}
