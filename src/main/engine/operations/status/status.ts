// `sluice status`: hg status against the working directory's first parent (workingctx.status:
// dirstate.status, then _checklookup for the entries in doubt, then _poststatusfixup writing the
// entries found clean back into the dirstate when the wlock is free and the dirstate unchanged).
// Lists are sorted by byte path as basectx.status sorts them; copies as copies.pathcopies gives them.
import { statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { SluiceError } from '../../errors';
import { LocalRepo } from '../../repo/local-repo';
import { acquireLock } from '../../repo/lock';
import { writeAtomic } from '../../repo/vfs';
import { NULL_REV } from '../../revlog/constants';
import { parseChangelogEntry, parseManifest, type ManifestEntry } from '../../revlog/texts';
import { HgConfig, readRepoConfig, readUserConfig } from '../../store/hgrc';
import {
  AMBIGUOUS_TIME,
  packDirstateV1,
  readDirstateV1,
  type Dirstate,
} from '../../working-copy/dirstate-v1';
import { readDirstateV2, writeDirstateV2 } from '../../working-copy/dirstate-v2';
import { FileTextReader, findRev } from '../../working-copy/file-texts';
import { workingCopyFsCaps } from '../../working-copy/fs-caps';
import { repoIgnoreMatcher, type Warn } from '../../working-copy/ignore';
import { dirstateStatus, type StatusLists } from '../../working-copy/status';
import { checkLookup, fsNow, type Fixup, type Timestamp } from '../../working-copy/status-lookup';

export interface StatusOptions {
  listUnknown: boolean;
  listIgnored: boolean;
  listClean: boolean;
  /** warnings hg prints on stderr (unreadable pattern files, unreadable directories) */
  warn: Warn;
  /** the user's configuration (tests: an empty one) */
  userConfig?: HgConfig;
}

export interface StatusResult extends StatusLists {
  /** copy destination → source, for tracked destinations whose source p1 has (pathcopies) */
  copies: Map<string, string>;
  /** entries found clean and written back into the dirstate */
  fixedUp: number;
}

/** Requirements whose working copy status cannot be read as hg's pure dirstate.status reads it. */
const UNSUPPORTED_WC = ['exp-sparse', 'dirstate-tracked-key-v1', 'largefiles', 'lfs'];

export async function workingCopyStatus(repoRoot: string, opts: StatusOptions): Promise<StatusResult> {
  const repo = await LocalRepo.open(resolve(repoRoot));
  const bad = UNSUPPORTED_WC.filter((r) => repo.requirements.has(r));
  if (bad.length)
    throw new SluiceError(
      'UNSUPPORTED_REQUIREMENTS',
      `cannot read the status of a working copy that requires ${bad.join(', ')}`,
      {
        unsupported: bad,
      },
    );
  const root = repo.root;
  const v2 = repo.requirements.has('dirstate-v2');
  const identity = dirstateIdentity(repo.hgDir);
  const ds = v2 ? readDirstateV2(repo.hgDir) : readDirstateV1(join(repo.hgDir, 'dirstate'));
  const user = opts.userConfig ?? readUserConfig();
  const repoConfig = await readRepoConfig(root).catch(() => new HgConfig());
  const uiItems = new Map([...user.items('ui'), ...repoConfig.items('ui')]);
  const ignore = repoIgnoreMatcher(root, [...uiItems], opts.warn) ?? (() => false);
  const caps = workingCopyFsCaps(repo.hgDir);
  let boundary: Timestamp | null;
  try {
    boundary = fsNow(repo.hgDir);
  } catch {
    boundary = null; // a read-only .hg: hg's mtime_boundary None
  }
  const s = await dirstateStatus({
    root,
    dirstate: ds,
    ignore,
    listUnknown: opts.listUnknown,
    listIgnored: opts.listIgnored,
    listClean: opts.listClean,
    checkExec: caps.checkExec,
    warn: opts.warn,
  });
  const needParent = s.lookup.length > 0 || [...ds.entries.values()].some((e) => e.copySource !== undefined);
  const parent = needParent ? await parentManifest(repo, ds.p1) : new Map<string, ManifestEntry>();
  let fixedUp = 0;
  if (s.lookup.length) {
    const looked = await checkLookup(s.lookup, {
      root,
      parent,
      reader: new FileTextReader(repo),
      checkExec: caps.checkExec,
      checkLink: caps.checkLink,
      boundary,
    });
    s.modified.push(...looked.modified);
    s.deleted.push(...looked.deleted);
    if (opts.listClean) s.clean.push(...looked.clean, ...looked.fixup.map((f) => f.path));
    if (looked.fixup.length && (await writeFixups(repo, ds, identity, looked.fixup, v2)))
      fixedUp = looked.fixup.length;
  }
  const copies = new Map<string, string>();
  for (const e of ds.entries.values())
    if (e.copySource !== undefined && e.state !== 'r' && e.copySource !== e.path && parent.has(e.copySource))
      copies.set(e.path, e.copySource);
  const lists: StatusLists = {
    modified: s.modified.sort(byteOrder),
    added: s.added.sort(byteOrder),
    removed: s.removed.sort(byteOrder),
    deleted: s.deleted.sort(byteOrder),
    unknown: s.unknown.sort(byteOrder),
    ignored: s.ignored.sort(byteOrder),
    clean: s.clean.sort(byteOrder),
  };
  return { ...lists, copies, fixedUp };
}

function byteOrder(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0; // latin1 strings compare as their bytes
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
    const mrev = findRev(mf.index, manifestNode);
    if (mrev === undefined) throw new SluiceError('REVLOG', `manifest of revision ${rev} is missing`);
    parseManifest(await mf.revision(mrev), (e) => out.set(e.path, e));
    return out;
  } finally {
    await cl.close();
    await mf.close();
  }
}

/** dirstate.identity: the file's stat, to see whether someone wrote the dirstate meanwhile. */
function dirstateIdentity(hgDir: string): string {
  const st = statSync(join(hgDir, 'dirstate'), { throwIfNoEntry: false, bigint: true });
  return st ? `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}` : 'none';
}

/**
 * _poststatusfixup: under the wlock, not waited for (hg's wlock(False)), and only when the
 * dirstate is still the one read. Returns whether it was written.
 */
async function writeFixups(
  repo: LocalRepo,
  ds: Dirstate,
  identity: string,
  fixups: readonly Fixup[],
  v2: boolean,
): Promise<boolean> {
  let lock;
  try {
    lock = await acquireLock(join(repo.hgDir, 'wlock'), { timeoutMs: 0 });
  } catch (e) {
    if (e instanceof SluiceError && e.code === 'LOCKED') return false;
    throw e;
  }
  try {
    if (dirstateIdentity(repo.hgDir) !== identity) return false; // skip updating dirstate: identity mismatch
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
