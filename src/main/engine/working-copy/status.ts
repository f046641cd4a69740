// dirstate.status (hg 6.3.2, the pure-Python path hg takes without its Rust extension): walk the
// working directory, then sort every dirstate entry into modified, added, removed, deleted or
// clean by its recorded size, exec bit and mtime; entries whose mtime cannot tell ("lookup") are
// left for a content comparison with the parent (status-lookup.ts).
import { lstatSync, type Stats } from 'node:fs';
import type { Dirstate, DirstateEntry } from './dirstate-v1';
import { AMBIGUOUS_TIME, RANGE_MASK } from './dirstate-v1';
import type { PathPredicate, Warn } from './ignore';
import { workingPath } from './path-auditor';
import { lstatPaths, walkWorkingDirectory } from './status-walk';

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
  dirstate: Dirstate;
  /** dirstate._ignore */
  ignore: PathPredicate;
  listUnknown: boolean;
  listIgnored: boolean;
  listClean: boolean;
  /** util.checkexec / util.checklink of the working directory's filesystem */
  checkExec: boolean;
  warn: Warn;
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

export async function dirstateStatus(opts: DirstateStatusOptions): Promise<DirstateStatus> {
  const { root, dirstate, listUnknown, listIgnored } = opts;
  const entries = dirstate.entries;
  const out: DirstateStatus = { ...emptyStatusLists(), lookup: [] };
  const stats = new Map<string, Stats | null>();
  if (listUnknown || listIgnored) {
    // dirstate.walk: with ignored files listed nothing is skipped, else ignored ones are
    const ignore = listIgnored ? NEVER : opts.ignore;
    const walked = await walkWorkingDirectory({
      root,
      isTracked: (p) => entries.has(p),
      ignore,
      warn: opts.warn,
    });
    for (const path of walked.untracked) {
      if (listIgnored && dirIgnored(opts.ignore, path)) out.ignored.push(path);
      else if (listUnknown) out.unknown.push(path);
    }
    for (const [path, st] of walked.tracked) stats.set(path, st);
    // step 3: tracked files the walk did not reach (under an ignored or missing directory, a
    // symlink, a nested repository): lstat'ed where no symlink or repository is on the way
    const audit = new ParentAudit(root);
    const rest = [...entries.keys()].filter((p) => !stats.has(p) && audit.check(p));
    const restStats = await lstatPaths(root, rest, false);
    rest.forEach((p, i) => stats.set(p, restStats[i]!));
  } else {
    // nothing untracked asked for: no walk, every entry lstat'ed (util.statfiles)
    const paths = [...entries.keys()];
    const st = await lstatPaths(root, paths, true);
    paths.forEach((p, i) => stats.set(p, st[i]!));
  }
  for (const e of entries.values()) classify(e, stats.get(e.path) ?? null, opts, out);
  return out;
}

/** The loop body of dirstate.status for one dirstate entry. */
function classify(
  e: DirstateEntry,
  st: Stats | null,
  opts: DirstateStatusOptions,
  out: DirstateStatus,
): void {
  const tracked = e.state !== 'r';
  const fn = e.path;
  if (!st && tracked) out.deleted.push(fn);
  else if (tracked && (e.state === 'm' || (e.state === 'n' && e.size === -2))) out.modified.push(fn);
  else if (e.state === 'a') out.added.push(fn);
  else if (e.state === 'r') out.removed.push(fn);
  else {
    const size = e.size;
    const s = st!;
    if (
      (size >= 0 &&
        ((size !== s.size && size !== (s.size & RANGE_MASK)) ||
          ((e.mode ^ s.mode) & 0o100 && opts.checkExec))) ||
      e.copySource !== undefined
    ) {
      // issue6456: a symlink's size may be longer than its target (fscrypt)
      if (s.isSymbolicLink() && size !== s.size) out.lookup.push(fn);
      else out.modified.push(fn);
    } else if (!mtimeLikelyEqual(e, s)) out.lookup.push(fn);
    else if (opts.listClean) out.clean.push(fn);
  }
}

/** DirstateItem.mtime_likely_equal_to(timestamp.mtime_of(st)) */
function mtimeLikelyEqual(e: DirstateEntry, st: Stats): boolean {
  if (e.size < 0 || e.mtime === AMBIGUOUS_TIME) return false; // no mtime recorded
  const ms = st.mtimeMs;
  const sec = Math.floor(ms / 1000);
  if (e.mtime !== (sec & RANGE_MASK)) return false;
  const selfNs = e.mtimeNs ?? 0;
  const otherNs = Math.round((ms - sec * 1000) * 1e6);
  if (otherNs === 0 || selfNs === 0) return !e.mtimeSecondAmbiguous;
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
