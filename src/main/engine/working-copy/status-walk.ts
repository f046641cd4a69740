// dirstate.walk for status with an always-matcher: the working directory read depth first on this
// thread, as hg's pure walk does. Names only (no Dirent objects): every tracked path gets the one
// lstat status needs anyway, and that lstat also says whether it is a directory; untracked names
// are lstat'ed only when not ignored. Ignored directories are never entered, nested repositories
// (a directory holding `.hg`) skipped as osutil.listdir(skip='.hg') does. Synchronous calls on
// purpose (a threadpool round trip per call cost more than the microsecond calls themselves), with
// a turn of the event loop every few thousand, where a cancel is seen.
import { lstatSync, readdirSync, type Stats } from 'node:fs';
import { cancelled } from '../errors';
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
  signal?: AbortSignal;
}

/** fs calls between two turns of the event loop (SIGINT's handler runs there). */
export const CALLS_PER_TURN = 4096;

/**
 * Counts fs calls; every CALLS_PER_TURN of them, lets the event loop turn and stops with
 * CANCELLED once the signal is aborted. Called between batches: the loops doing the calls stay
 * synchronous functions, which V8 optimizes better than a loop holding an await.
 */
export class EventLoopTurns {
  private spent = 0;

  constructor(private readonly signal: AbortSignal | undefined) {}

  async after(calls: number): Promise<void> {
    this.spent += calls;
    if (this.spent < CALLS_PER_TURN) return;
    this.spent = 0;
    await new Promise((resolve) => setImmediate(resolve));
    if (this.signal?.aborted) throw cancelled();
  }
}

/** Walks the working directory under root (step 2 of dirstate.walk). */
export async function walkWorkingDirectory(opts: WalkOptions): Promise<void> {
  const { root, rowOf, ignore, tracked, untracked } = opts;
  const turns = new EventLoopTurns(opts.signal);
  const rootPrefix = Buffer.from(root + '/', 'utf8');
  const fsPath = (path: string): string | Buffer => workingPath(root, path, rootPrefix);
  const work = [''];
  /** One directory: its subdirectories pushed on work; returns the names it had. */
  const visit = (dir: string): number => {
    const names = listNames(dir === '' ? root : fsPath(dir), dir, opts.warn);
    if (!names) return 0;
    if (dir !== '' && names.includes('.hg') && lstatOrNull(fsPath(dir + '/.hg'))?.isDirectory()) return 1; // a nested repository
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
    return names.length;
  };
  for (let dir = work.pop(); dir !== undefined; dir = work.pop()) await turns.after(1 + visit(dir));
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
