// The part of `sluice status` that needs the working directory's first parent, loaded only when
// some file's stat cannot tell (workingctx._checklookup and _poststatusfixup) or a copy is
// recorded (copies.pathcopies): the revlogs, their compression and hashing stay unloaded for a
// status that the dirstate alone answers.
import { join } from 'node:path';
import { SluiceError } from '../../errors';
import { LocalRepo } from '../../repo/local-repo';
import { acquireLock } from '../../repo/lock';
import { writeAtomic } from '../../repo/vfs';
import { NULL_REV } from '../../revlog/constants';
import { parseChangelogEntry, parseManifest, type ManifestEntry } from '../../revlog/texts';
import type { RepoLocation } from '../../store/requirements';
import {
  AMBIGUOUS_TIME,
  packDirstateV1,
  readDirstateV1,
  type DirstateRows,
} from '../../working-copy/dirstate-v1';
import { readDirstateV2, writeDirstateV2 } from '../../working-copy/dirstate-v2';
import { FileTextReader } from '../../working-copy/file-texts';
import type { FsCaps } from '../../working-copy/fs-caps';
import { checkLookup, type Fixup, type Timestamp } from '../../working-copy/status-lookup';

export interface ParentCheckOptions {
  caps: FsCaps;
  /** null: no "now" could be had (a read-only .hg): nothing is fixed up */
  boundary: Timestamp | null;
  v2: boolean;
  /** the first parent's manifest text, when the caller has it */
  parentManifestText?: Uint8Array;
  /** the dirstate on disk is still the one status read (dirstate.identity) */
  sameDirstate: () => boolean;
}

export interface ParentCheck {
  modified: string[];
  deleted: string[];
  /** found clean by content, fixed up or not */
  clean: string[];
  /** copy destination → source, for tracked destinations whose source p1 has (pathcopies) */
  copies: Map<string, string>;
  /** entries found clean and written back into the dirstate */
  fixedUp: number;
}

/** _checklookup of the files in doubt, the fixups written back, and the copies p1 explains. */
export async function checkWithParent(
  loc: RepoLocation,
  ds: DirstateRows,
  lookup: readonly string[],
  opts: ParentCheckOptions,
): Promise<ParentCheck> {
  const repo = await LocalRepo.open(loc.root);
  const parent = opts.parentManifestText
    ? manifestByPath(opts.parentManifestText)
    : await parentManifest(repo, ds.p1);
  const out: ParentCheck = { modified: [], deleted: [], clean: [], copies: new Map(), fixedUp: 0 };
  if (lookup.length > 0) {
    const looked = await checkLookup(lookup, {
      root: loc.root,
      parent,
      reader: new FileTextReader(repo),
      checkExec: opts.caps.checkExec,
      checkLink: opts.caps.checkLink,
      boundary: opts.boundary,
    });
    out.modified = looked.modified;
    out.deleted = looked.deleted;
    out.clean = [...looked.clean, ...looked.fixup.map((f) => f.path)];
    if (looked.fixup.length && (await writeFixups(repo, looked.fixup, opts)))
      out.fixedUp = looked.fixup.length;
  }
  for (const [row, source] of ds.copySources) {
    const path = ds.paths[row]!;
    if (ds.rows.get(path) !== row) continue; // a repeated path: the last row counts
    if (ds.states[row] !== 0x72 && source !== path && parent.has(source)) out.copies.set(path, source);
  }
  return out;
}

function manifestByPath(text: Uint8Array): Map<string, ManifestEntry> {
  const out = new Map<string, ManifestEntry>();
  parseManifest(text, (e) => out.set(e.path, e));
  return out;
}

/** The manifest of the working directory's first parent, by path. */
async function parentManifest(repo: LocalRepo, p1: Uint8Array): Promise<Map<string, ManifestEntry>> {
  const out = new Map<string, ManifestEntry>();
  if (p1.every((b) => b === 0)) return out;
  const cl = await repo.changelog();
  const mf = await repo.manifestlog();
  try {
    const rev = cl.index.rev(p1);
    if (rev === undefined || rev === NULL_REV)
      throw new SluiceError(
        'REVLOG',
        `working directory has unknown parent '${Buffer.from(p1).toString('hex').slice(0, 12)}'`,
      );
    const manifestNode = parseChangelogEntry(await cl.revision(rev)).manifest;
    if (manifestNode.every((b) => b === 0)) return out;
    const mrev = mf.index.scanRev(manifestNode);
    if (mrev === undefined) throw new SluiceError('REVLOG', `manifest of revision ${rev} is missing`);
    return manifestByPath(await mf.revision(mrev));
  } finally {
    await cl.close();
    await mf.close();
  }
}

/**
 * _poststatusfixup: under the wlock, not waited for (hg's wlock(False)), and only when the
 * dirstate is still the one read. Returns whether it was written.
 */
async function writeFixups(
  repo: LocalRepo,
  fixups: readonly Fixup[],
  opts: ParentCheckOptions,
): Promise<boolean> {
  let lock;
  try {
    lock = await acquireLock(join(repo.hgDir, 'wlock'), { timeoutMs: 0 });
  } catch (e) {
    if (e instanceof SluiceError && e.code === 'LOCKED') return false;
    throw e;
  }
  try {
    if (!opts.sameDirstate()) return false; // skip updating dirstate: identity mismatch
    // the unchanged file read again as entries, the model the writers take
    const v2 = opts.v2;
    const ds = v2 ? readDirstateV2(repo.hgDir) : readDirstateV1(join(repo.hgDir, 'dirstate'));
    for (const f of fixups) {
      const e = ds.entries.get(f.path);
      if (!e) continue;
      // dirstatemap.set_clean: size masked, copy record dropped; v1 keeps no nanoseconds and
      // writes an ambiguous second as "look it up"
      e.mode = f.mode;
      e.size = f.size & 0x7fffffff;
      delete e.copySource;
      if (v2) {
        e.mtime = f.mtime.sec;
        e.mtimeNs = f.mtime.ns;
        e.mtimeSecondAmbiguous = f.mtime.secondAmbiguous;
      } else e.mtime = f.mtime.secondAmbiguous ? AMBIGUOUS_TIME : f.mtime.sec;
    }
    if (v2) writeDirstateV2(repo.hgDir, ds);
    else writeAtomic(join(repo.hgDir, 'dirstate'), packDirstateV1(ds));
    return true;
  } finally {
    lock.release();
  }
}
