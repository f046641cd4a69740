// The dirstate a checkout leaves (merge.recordupdates for a clean update): every file of the
// target tracked, with the stat of what was written where it can be trusted.
import { randomBytes } from 'node:crypto';
import { closeSync, fstatSync, openSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import {
  AMBIGUOUS_TIME,
  NONNORMAL,
  packDirstateV1,
  packDirstateV1Clean,
  RANGE_MASK,
  type Dirstate,
  type DirstateEntry,
} from '../../working-copy/dirstate-v1';
import { writeDirstateV2 } from '../../working-copy/dirstate-v2';
import { writeAtomic } from '../../repo/vfs';

/** What a checkout changed, as the dirstate needs it. */
export interface CheckedOut {
  /** from the null revision: every file of the target was written, in `paths`' order */
  fresh: boolean;
  /** the files written (batch order) */
  paths: readonly string[];
  /** between revisions: every path of the target's manifest (fresh: empty) */
  targetPaths: readonly string[];
  /** files whose exec bit alone changed */
  execPaths: ReadonlySet<string>;
}

/** The dirstate to write: a dirstate-v1 from null is packed straight from the written files' stats. */
export type NewDirstate = { v1Clean: Buffer } | { ds: Dirstate };

/** timestamp.get_fs_now: the filesystem's idea of now, from a file created in `.hg`. */
export function fsNowSeconds(hgDir: string): number {
  const path = join(hgDir, `sluice-now-${process.pid}-${randomBytes(4).toString('hex')}`);
  const fd = openSync(path, 'wx');
  try {
    return Math.floor(fstatSync(fd).mtimeMs / 1000) & RANGE_MASK;
  } finally {
    closeSync(fd);
    unlinkSync(path);
  }
}

/**
 * merge.update: an mtime not strictly in the past cannot be trusted (a write within the same
 * second would keep it); hg stores it as unknown so status looks the file up.
 */
function trustedMtime(stat: number, now: number): number {
  const mtime = stat & RANGE_MASK;
  return mtime >= now ? AMBIGUOUS_TIME : mtime;
}

/** A tracked entry without file data (status looks the file up). */
function lookupEntry(path: string): DirstateEntry {
  return { path, state: 'n', mode: 0, size: NONNORMAL, mtime: AMBIGUOUS_TIME };
}

/**
 * The new dirstate, parent p1: written file i's stat (mode, size, mtime) is stats[3i..3i+2];
 * files not written keep their old entry (old) without a copy source.
 */
export function checkoutDirstate(
  p1: Uint8Array,
  done: CheckedOut,
  old: Dirstate,
  stats: Float64Array,
  now: number,
  v2: boolean,
): NewDirstate {
  const { fresh, paths } = done;
  const count = paths.length;
  if (fresh && !v2) {
    const modes = new Int32Array(count);
    const sizes = new Int32Array(count);
    const mtimes = new Int32Array(count);
    for (let i = 0; i < count; i++) {
      modes[i] = stats[i * 3]!;
      sizes[i] = stats[i * 3 + 1]!;
      mtimes[i] = trustedMtime(stats[i * 3 + 2]!, now);
    }
    return { v1Clean: packDirstateV1Clean(p1, paths, modes, sizes, mtimes) };
  }
  const columns = !fresh && !v2 ? keptColumns(done, old, stats, now) : undefined;
  if (columns) return { v1Clean: packDirstateV1Clean(p1, done.targetPaths, ...columns) };
  const ds: Dirstate = { p1, p2: new Uint8Array(20), entries: new Map() };
  const getIndex = fresh ? undefined : new Map(paths.map((p, i) => [p, i]));
  const entries = fresh ? count : done.targetPaths.length;
  for (let j = 0; j < entries; j++) {
    const path = fresh ? paths[j]! : done.targetPaths[j]!;
    const w = getIndex ? (getIndex.get(path) ?? -1) : j;
    const was = fresh ? undefined : old.entries.get(path);
    // recordupdates for 'e' (the exec bit alone changed): tracked, no file data
    if (done.execPaths.has(path)) ds.entries.set(path, lookupEntry(path));
    else if (w < 0 && was) ds.entries.set(path, { ...was, copySource: undefined });
    else if (w >= 0)
      ds.entries.set(path, {
        path,
        state: 'n',
        mode: stats[w * 3]!,
        size: stats[w * 3 + 1]!,
        mtime: trustedMtime(stats[w * 3 + 2]!, now),
      });
    else ds.entries.set(path, lookupEntry(path));
  }
  for (const e of ds.entries.values()) if (e.copySource === undefined) delete e.copySource;
  return { ds };
}

/**
 * Between revisions, a dirstate-v1's rows as columns in the target's (sorted) order: written files
 * from their stats, exec-bit changes looked up, the rest kept from old. Undefined when an old row
 * is not plainly tracked ('n'): checkoutDirstate's entries then keep its state as it is.
 */
function keptColumns(
  done: CheckedOut,
  old: Dirstate,
  stats: Float64Array,
  now: number,
): [Int32Array, Int32Array, Int32Array] | undefined {
  const { targetPaths, paths } = done;
  const n = targetPaths.length;
  const modes = new Int32Array(n);
  const sizes = new Int32Array(n);
  const mtimes = new Int32Array(n);
  // the written files (paths) are a subsequence of the target's paths, in the same order
  let w = 0;
  for (let j = 0; j < n; j++) {
    const path = targetPaths[j]!;
    const written = w < paths.length && paths[w] === path;
    const was = written ? undefined : old.entries.get(path);
    if (was && was.state !== 'n') return undefined;
    if (done.execPaths.has(path) || (!written && !was)) {
      sizes[j] = NONNORMAL;
      mtimes[j] = AMBIGUOUS_TIME;
    } else if (written) {
      modes[j] = stats[w * 3]!;
      sizes[j] = stats[w * 3 + 1]!;
      mtimes[j] = trustedMtime(stats[w * 3 + 2]!, now);
    } else {
      modes[j] = was!.mode;
      sizes[j] = was!.size;
      mtimes[j] = was!.mtime;
    }
    if (written) w++;
  }
  return [modes, sizes, mtimes];
}

/** Writes the dirstate (atomically: temp + rename). */
export function writeCheckoutDirstate(hgDir: string, next: NewDirstate, v2: boolean): void {
  if ('v1Clean' in next) writeAtomic(join(hgDir, 'dirstate'), next.v1Clean);
  else if (v2) writeDirstateV2(hgDir, next.ds);
  else writeAtomic(join(hgDir, 'dirstate'), packDirstateV1(next.ds));
}
