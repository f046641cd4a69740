// `sluice status`: hg status against the working directory's first parent (workingctx.status:
// dirstate.status, then _checklookup for the entries in doubt, then _poststatusfixup writing the
// entries found clean back into the dirstate when the wlock is free and the dirstate unchanged).
// Lists are sorted by byte path as basectx.status sorts them; copies as copies.pathcopies gives them.
// The revlogs are needed only for files in doubt or copies (status-parent.ts, loaded then): a
// clean stat-only status loads no revlog, compression or hashing code.
import { statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { SluiceError } from '../../errors';
import { HgConfig, readRepoConfig, readUserConfig } from '../../store/hgrc';
import { locateRepository, UNREADABLE_REQUIREMENTS } from '../../store/requirements';
import { dirstateRows, readDirstateV1Rows, type DirstateRows } from '../../working-copy/dirstate-v1';
import { workingCopyFsCaps } from '../../working-copy/fs-caps';
import { repoIgnoreMatcher, type Warn } from '../../working-copy/ignore';
import { dirstateStatus, type StatusLists } from '../../working-copy/status';
import { fsNow, type Timestamp } from '../../working-copy/status-lookup';

export interface StatusOptions {
  listUnknown: boolean;
  listIgnored: boolean;
  listClean: boolean;
  /** warnings hg prints on stderr (unreadable pattern files, unreadable directories) */
  warn: Warn;
  /** the user's configuration (tests: an empty one) */
  userConfig?: HgConfig;
  /** aborted (SIGINT): status stops with CANCELLED */
  signal?: AbortSignal;
  /** the first parent's manifest text when the caller has it (an update): not built again */
  parentManifestText?: Uint8Array;
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
  const loc = await locateRepository(resolve(repoRoot));
  const unreadable = UNREADABLE_REQUIREMENTS.filter((r) => loc.requirements.has(r));
  if (unreadable.length > 0)
    throw new SluiceError(
      'UNSUPPORTED_REQUIREMENTS',
      `repository ${resolve(repoRoot)} requires features sluice cannot read: ${unreadable.join(', ')}`,
      { unsupported: unreadable },
    );
  const bad = UNSUPPORTED_WC.filter((r) => loc.requirements.has(r));
  if (bad.length)
    throw new SluiceError(
      'UNSUPPORTED_REQUIREMENTS',
      `cannot read the status of a working copy that requires ${bad.join(', ')}`,
      { unsupported: bad },
    );
  const { root, hgDir } = loc;
  const v2 = loc.requirements.has('dirstate-v2');
  const identity = dirstateIdentity(hgDir);
  const ds = v2 ? await readDirstateV2Rows(hgDir) : readDirstateV1Rows(join(hgDir, 'dirstate'));
  const user = opts.userConfig ?? readUserConfig();
  const repoConfig = await readRepoConfig(root).catch(() => new HgConfig());
  const uiItems = new Map([...user.items('ui'), ...repoConfig.items('ui')]);
  const ignore = repoIgnoreMatcher(root, [...uiItems], opts.warn) ?? (() => false);
  const caps = workingCopyFsCaps(hgDir);
  let boundary: Timestamp | null;
  try {
    boundary = fsNow(hgDir);
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
    signal: opts.signal,
  });
  let copies = new Map<string, string>();
  let fixedUp = 0;
  if (s.lookup.length > 0 || ds.copySources.size > 0) {
    const parent = await import('./status-parent');
    const checked = await parent.checkWithParent(loc, ds, s.lookup, {
      ...(opts.parentManifestText && { parentManifestText: opts.parentManifestText }),
      caps,
      boundary,
      v2,
      sameDirstate: () => dirstateIdentity(hgDir) === identity,
    });
    s.modified.push(...checked.modified);
    s.deleted.push(...checked.deleted);
    if (opts.listClean) s.clean.push(...checked.clean);
    copies = checked.copies;
    fixedUp = checked.fixedUp;
  }
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

/** dirstate-v2's reader (and the writer it sits with) loaded only for a v2 working copy. */
async function readDirstateV2Rows(hgDir: string): Promise<DirstateRows> {
  const { readDirstateV2 } = await import('../../working-copy/dirstate-v2');
  return dirstateRows(readDirstateV2(hgDir));
}

function byteOrder(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0; // latin1 strings compare as their bytes
}

/** dirstate.identity: the file's stat, to see whether someone wrote the dirstate meanwhile. */
function dirstateIdentity(hgDir: string): string {
  const st = statSync(join(hgDir, 'dirstate'), { throwIfNoEntry: false, bigint: true });
  return st ? `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}` : 'none';
}
