// dirstate.status (hg 6.3.2, the pure-Python path hg takes without its Rust extension): walk the
// working directory, then sort every dirstate entry into modified, added, removed, deleted or
// clean by its recorded size, exec bit and mtime; entries whose mtime cannot tell ("lookup") are
// left for a content comparison with the parent (status-lookup.ts).
import { lstatSync, type Stats } from 'node:fs';
import type { DirstateRows } from './dirstate-v1';
import { AMBIGUOUS_TIME, RANGE_MASK } from './dirstate-v1';
import type { PathPredicate, Warn } from './ignore';
import { workingPath } from './path-auditor';
import { CALLS_PER_TURN, EventLoopTurns, lstatOrNull, walkWorkingDirectory } from './status-walk';

export interface StatusLists {
  modified: string[];
  added: string[];
  removed: string[];
  deleted: string[];
  unknown: string[];
  ignored: string[];
  clean: string[];
}

export interface DirstateStatus extends StatusLists {
  /** tracked files whose stat cannot tell: compare contents (context._checklookup) */
  lookup: string[];
}

export interface DirstateStatusOptions {
  root: string;
  dirstate: DirstateRows;
  /** dirstate._ignore */
  ignore: PathPredicate;
  listUnknown: boolean;
  listIgnored: boolean;
  listClean: boolean;
  /** util.checkexec / util.checklink of the working directory's filesystem */
  checkExec: boolean;
  warn: Warn;
  /** aborted: stop with CANCELLED at the next turn of the event loop */
  signal?: AbortSignal;
}

export function emptyStatusLists(): StatusLists {
  return { modified: [], added: [], removed: [], deleted: [], unknown: [], ignored: [], clean: [] };
}

const NEVER: PathPredicate = () => false;

/** dirstate._dirignore: the path or one of its parent directories is ignored. */
export function dirIgnored(ignore: PathPredicate, path: string): boolean {
  if (ignore(path)) return true;
  for (let slash = path.lastIndexOf('/'); slash > 0; slash = path.lastIndexOf('/', slash - 1))
    if (ignore(path.slice(0, slash))) return true;
  return false;
}

/**
 * Each entry is sorted as soon as its lstat is had: no Stats object outlives its entry, so a
 * large working copy's 20k stats die young instead of filling the old generation.
 */
export async function dirstateStatus(opts: DirstateStatusOptions): Promise<DirstateStatus> {
  const { root, dirstate: ds, listUnknown, listIgnored } = opts;
  const out: DirstateStatus = { ...emptyStatusLists(), lookup: [] };
  const rowCount = ds.paths.length;
  const rootPrefix = Buffer.from(root + '/', 'utf8');
  const turns = new EventLoopTurns(opts.signal);
  if (listUnknown || listIgnored) {
    const reached = new Uint8Array(rowCount);
    // dirstate.walk: with ignored files listed nothing is skipped, else ignored ones are
    await walkWorkingDirectory({
      root,
      signal: opts.signal,
      rowOf: (p) => ds.rows.get(p),
      ignore: listIgnored ? NEVER : opts.ignore,
      warn: opts.warn,
      tracked: (row, st) => {
        reached[row] = 1;
        classify(ds, row, st, opts, out);
      },
      untracked: (path) => {
        if (listIgnored && dirIgnored(opts.ignore, path)) out.ignored.push(path);
        else if (listUnknown) out.unknown.push(path);
      },
    });
    // step 3: tracked files the walk did not reach (under an ignored or missing directory, a
    // symlink, a nested repository): lstat'ed where no symlink or repository is on the way
    const audit = new ParentAudit(root);
    await inBatches(rowCount, turns, (row) => {
      const path = ds.paths[row]!;
      if (reached[row] || ds.rows.get(path) !== row) return; // reached, or a repeated path's earlier row
      const st = audit.check(path) ? lstatOrNull(workingPath(root, path, rootPrefix)) : null;
      classify(ds, row, st, opts, out);
    });
  } else {
    // nothing untracked asked for: no walk, every entry lstat'ed (util.statfiles)
    await inBatches(rowCount, turns, (row) => {
      const path = ds.paths[row]!;
      if (ds.rows.get(path) !== row) return; // a repeated path: hg's dict keeps the last row
      const st = lstatOrNull(workingPath(root, path, rootPrefix));
      classify(ds, row, st && (st.isFile() || st.isSymbolicLink()) ? st : null, opts, out);
    });
  }
  return out;
}

/** each(row) for every row, a turn of the event loop between batches of CALLS_PER_TURN */
async function inBatches(count: number, turns: EventLoopTurns, each: (row: number) => void): Promise<void> {
  for (let from = 0; from < count; from += CALLS_PER_TURN) {
    const to = Math.min(count, from + CALLS_PER_TURN);
    for (let row = from; row < to; row++) each(row);
    await turns.after(to - from);
  }
}

const STATE_N = 0x6e;
const STATE_A = 0x61;
const STATE_R = 0x72;
const STATE_M = 0x6d;

/** The loop body of dirstate.status for one dirstate row. */
function classify(
  ds: DirstateRows,
  row: number,
  st: Stats | null,
  opts: DirstateStatusOptions,
  out: DirstateStatus,
): void {
  const state = ds.states[row]!;
  const size = ds.sizes[row]!;
  const tracked = state !== STATE_R;
  const fn = ds.paths[row]!;
  if (!st && tracked) out.deleted.push(fn);
  else if (tracked && (state === STATE_M || (state === STATE_N && size === -2))) out.modified.push(fn);
  else if (state === STATE_A) out.added.push(fn);
  else if (state === STATE_R) out.removed.push(fn);
  else {
    const s = st!;
    if (
      (size >= 0 &&
        ((size !== s.size && size !== (s.size & RANGE_MASK)) ||
          ((ds.modes[row]! ^ s.mode) & 0o100 && opts.checkExec))) ||
      ds.copySources.has(row)
    ) {
      // issue6456: a symlink's size may be longer than its target (fscrypt)
      if (s.isSymbolicLink() && size !== s.size) out.lookup.push(fn);
      else out.modified.push(fn);
    } else if (!mtimeLikelyEqual(ds, row, s)) out.lookup.push(fn);
    else if (opts.listClean) out.clean.push(fn);
  }
}

/** DirstateItem.mtime_likely_equal_to(timestamp.mtime_of(st)) */
function mtimeLikelyEqual(ds: DirstateRows, row: number, st: Stats): boolean {
  const mtime = ds.mtimes[row]!;
  if (ds.sizes[row]! < 0 || mtime === AMBIGUOUS_TIME) return false; // no mtime recorded
  const ms = st.mtimeMs;
  const sec = Math.floor(ms / 1000);
  if (mtime !== (sec & RANGE_MASK)) return false;
  const selfNs = ds.mtimeNs?.[row] ?? 0;
  const otherNs = Math.round((ms - sec * 1000) * 1e6);
  if (otherNs === 0 || selfNs === 0) return !ds.secondAmbiguous?.[row];
  // mtimeMs is a double: today's dates keep its nanoseconds to a few hundred; bigint stats for
  // every file would cost a BigInt each. Two writes of a file are never that close.
  return Math.abs(selfNs - otherNs) < NS_TOLERANCE;
}

const NS_TOLERANCE = 1000;

/** pathauditor.check for step 3: no symlink and no nested repository among a path's parents. */
class ParentAudit {
  private readonly dirs = new Map<string, boolean>();
  private readonly prefix: Buffer;

  constructor(private readonly root: string) {
    this.prefix = Buffer.from(root + '/', 'utf8');
  }

  check(path: string): boolean {
    for (let slash = path.indexOf('/'); slash > 0; slash = path.indexOf('/', slash + 1)) {
      const dir = path.slice(0, slash);
      let ok = this.dirs.get(dir);
      if (ok === undefined) {
        ok = this.dirOk(dir);
        this.dirs.set(dir, ok);
      }
      if (!ok) return false;
    }
    return true;
  }

  private dirOk(dir: string): boolean {
    const st = lstatSync(workingPath(this.root, dir, this.prefix), { throwIfNoEntry: false });
    if (!st) return true; // missing: the lstat of the file says so
    if (st.isSymbolicLink()) return false;
    if (!st.isDirectory()) return true;
    return !lstatSync(workingPath(this.root, dir + '/.hg', this.prefix), {
      throwIfNoEntry: false,
    })?.isDirectory();
  }
}
