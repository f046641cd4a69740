// `sluice update`: checks out a revision into a repository's working copy (hg's merge.update with
// branchmerge=False, force=False, the path hg.clone and `hg update REV` take).
// - From the null revision (after `hg clone -U`, or inside a clone's temporary destination):
//   every file of the manifest is created exclusively; on an error or a cancel every file and
//   directory created is removed again and the dirstate is left as it was.
// - Between revisions: only when the working copy is clean (dirstate.status: size, mode and mtime,
//   content read only for entries in doubt). New contents go to a scratch directory inside `.hg`
//   first; only once all of them are written are removed files unlinked and the new ones renamed
//   into place, so a failure while reading or writing leaves the working copy untouched.
// The dirstate and `.hg/branch` are written last, each atomically (temp + rename).
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  rmSync,
  rmdirSync,
  statSync,
  unlinkSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import type { CloseStats } from '../../../../shared/events';
import type { CloserOptions } from '../../../../shared/jobs';
import { planCloser, type CloseImpl, type CloserPlan } from '../../closer/background-closer';
import { SluiceError, toSluiceError } from '../../errors';
import { writeAtomic, type StagedFile } from '../../repo/vfs';
import type { JobContext } from '../../context/job-context';
import { ProgressTracker } from '../../context/progress';
import { LocalRepo } from '../../repo/local-repo';
import { locateRepository, unknownFeaturesError, unsupportedRequirements } from '../../store/requirements';
import { acquireLock, readLockTimeouts } from '../../repo/lock';
import { RevisionResolver, type ResolvedRevision } from '../../repo/revsymbol';
import { ChangelogGraph } from '../../repo/changelog-graph';
import { hiddenRevs } from '../serve/repo-state';
import { prepareZstd } from '../../codec/zstd';
import { NULL_REV } from '../../revlog/constants';
import type { Revlog } from '../../revlog/revlog';
import { parseChangelogEntry, type ManifestEntry } from '../../revlog/texts';
import { diffManifests } from './manifest-diff';
import { updateManifests } from './manifest-texts';
import { readDirstateV1, type Dirstate } from '../../working-copy/dirstate-v1';
import { readDirstateV2 } from '../../working-copy/dirstate-v2';
import { refuseUncommitted } from './uncommitted';
import { checkoutDirstate, fsNowSeconds, writeCheckoutDirstate, type CheckedOut } from './checkout-dirstate';
import { afterCheckout, cloneAnnouncement, clonePlan, dirstateBranch, updatePlan } from './update-plan';
import type { WorkingParent } from './destination';
import {
  batchTarget,
  FILE_PENDING,
  newBatchShared,
  packBatchFiles,
  packManifestFiles,
  type FileBatch,
} from '../../working-copy/file-batch';
import {
  auditPathSet,
  displayPath,
  PathAuditor,
  type PathAuditorOptions,
} from '../../working-copy/path-auditor';
import { currentUmask, WorkingCopyWriter } from '../../working-copy/wc-writer';
import { fileWriters, type FileWriters, type WritePoolOptions } from '../../working-copy/write-pool';

export interface UpdateOptions {
  /** hg's REV; default: hg.clone's pick (`@`, tip of default, tip) */
  rev?: string;
  /** hg's --hidden: REV (and the default's tip) resolved on every changeset, hidden ones too */
  hidden?: boolean;
  closer?: Partial<CloserOptions>;
  /** tests: a slow or failing close (the main thread then writes every file) */
  closeImpl?: CloseImpl;
  /** worker threads writing files beside the main thread (default: one per other core, at most 3) */
  workers?: number;
  /** tests: false leaves every file to the worker threads */
  mainShare?: boolean;
  /** tests: stream texts above this many bytes (default revlog's STREAM_ABOVE, 32 MiB) */
  streamAbove?: number;
  /** tests: Windows name rules, case-insensitive collisions */
  auditor?: PathAuditorOptions;
  /** false: write symlink targets as plain files (hg where symlinks cannot be made) */
  symlinks?: boolean;
  /** emit a start event (a standalone update job; inside a clone the job has started) */
  emitStart?: boolean;
  /** log hg clone's `updating to branch NAME` / `updating to bookmark NAME` first */
  announce?: boolean;
}

export interface UpdateStats {
  rev: number;
  nodeHex: string;
  branch: string;
  /** files written */
  files: number;
  /** files removed (update between revisions) */
  removed: number;
  bytes: number;
  close: CloseStats;
  /** manifests (target, working parent) whose text came from hg's manifest fulltext cache */
  manifestsFromCache: number;
}

const NULL_HEX = '0'.repeat(40);
/**
 * Requirements Sluice reads but whose working copy this writer cannot produce: a sparse checkout
 * and the tracked-key dirstate. (Files whose content lives outside the revlogs, largefiles' and
 * lfs's, are refused before, as unknown: hg without those extensions refuses them so.)
 */
const UNSUPPORTED_WC = ['exp-sparse', 'dirstate-tracked-key-v1'];

export async function updateWorkingCopy(
  repoRoot: string,
  opts: UpdateOptions,
  ctx: JobContext,
): Promise<UpdateStats> {
  const root = resolve(repoRoot);
  // localrepo.ensurerequirementsrecognized's refusal comes first, in hg's words
  const unknown = unsupportedRequirements((await locateRepository(root)).requirements);
  if (unknown.length > 0) throw unknownFeaturesError(unknown);
  const repo = await LocalRepo.open(root);
  // the wasm zstd decoder loads (~40 ms of CPU, the rest off-thread) while the lock is taken and
  // the indexes are read, instead of when the first chunk needs it
  if (repo.requirements.has('revlog-compression-zstd')) void prepareZstd();
  const bad = UNSUPPORTED_WC.filter((r) => repo.requirements.has(r));
  if (bad.length > 0)
    throw new SluiceError(
      'UNSUPPORTED_REQUIREMENTS',
      `cannot update a working copy that requires ${bad.join(', ')}`,
      { unsupported: bad },
    );
  // hg's wlock (repo/lock.ts: waited for as ui.timeout says, stale locks broken, honoured by hg both ways)
  const wlock = await acquireLock(join(repo.hgDir, 'wlock'), {
    ...(await readLockTimeouts(root)),
    signal: ctx.signal,
    description: `working directory of ${root}`,
    onWait: (message) => ctx.log('warn', message),
  });
  try {
    return await updateLocked(repo, opts, ctx);
  } finally {
    wlock.release();
  }
}

/**
 * hg.clone's update step, in a clone's temporary repository (applyStream's `checkout`): `updating
 * to branch NAME`, then the checkout, with the clone's closer knobs.
 */
export async function checkoutAfterClone(
  root: string,
  opts: Pick<UpdateOptions, 'rev' | 'closer' | 'closeImpl'>,
  ctx: JobContext,
): Promise<UpdateStats> {
  return updateWorkingCopy(root, { ...opts, announce: true }, ctx);
}

interface Target extends ResolvedRevision {
  branch: string;
  /** hg.clone's `updating to branch NAME` / `updating to bookmark NAME`, logged before the checkout */
  announcement?: string;
  /** the revision's manifest text (empty for null or an empty manifest) */
  manifestText: Uint8Array;
}

const NO_TEXT = new Uint8Array(0);

/** The manifest revision of changeset `rev` (undefined for the null revision and an empty manifest). */
async function manifestRevOf(cl: Revlog, mf: Revlog, rev: number): Promise<number | undefined> {
  if (rev === NULL_REV) return undefined;
  const entry = parseChangelogEntry(await cl.revision(rev));
  if (entry.manifest.every((b) => b === 0)) return undefined;
  const mrev = mf.index.scanRev(entry.manifest);
  if (mrev === undefined)
    throw new SluiceError(
      'REVLOG',
      `manifest ${Buffer.from(entry.manifest).toString('hex')} of revision ${rev} is missing`,
    );
  return mrev;
}

/**
 * Manifest bytes a line takes, generously (a 40-hex node, a path, a flag: 83 on the medium
 * corpus): the files a fresh checkout writes, estimated from the manifest's size before it is read.
 */
const MANIFEST_LINE_ESTIMATE = 100;

/** The revs hg's `visible` view hides (repoview.computehidden); null without obsolescence markers. */
async function hiddenOf(repo: LocalRepo): Promise<Uint8Array | null> {
  const obsstore = statSync(join(repo.loc.storeDir, 'obsstore'), { throwIfNoEntry: false });
  if (!obsstore?.size) return null;
  return hiddenRevs(repo.loc, await ChangelogGraph.read(repo.loc.storeDir));
}

async function updateLocked(repo: LocalRepo, opts: UpdateOptions, ctx: JobContext): Promise<UpdateStats> {
  const v2 = repo.requirements.has('dirstate-v2');
  const ds = v2 ? readDirstateV2(repo.hgDir) : readDirstateV1(join(repo.hgDir, 'dirstate'));
  const p1Hex = Buffer.from(ds.p1).toString('hex');
  const mf = await repo.manifestlog();
  const writers = fileWriters({
    ...writePoolOptions(opts),
    zstd: repo.requirements.has('revlog-compression-zstd'),
  });
  let cl: Revlog | undefined;
  let cacheWrite: StagedFile | undefined;
  try {
    // from null every file is written: the writer threads start now, sized by the newest
    // manifest (a fresh checkout's usual target), so their start runs beside the changelog's and
    // the manifest's reads; run() ends any the real target does not need
    if (p1Hex === NULL_HEX && ds.entries.size === 0 && mf.index.length > 0)
      writers.prestart(Math.floor(mf.index.rawSize(mf.index.length - 1) / MANIFEST_LINE_ESTIMATE));
    cl = await repo.changelog();
    const resolver = new RevisionResolver(repo, cl);
    const hidden = await hiddenOf(repo);
    if (!opts.hidden) resolver.hideRevs(hidden);
    const p1Rev = p1Hex === NULL_HEX ? NULL_REV : cl.index.rev(ds.p1);
    if (p1Rev === undefined)
      throw new SluiceError('REVLOG', `working directory has unknown parent '${p1Hex.slice(0, 12)}'`);
    const wc: WorkingParent = { rev: p1Rev, nodeHex: p1Hex, branch: dirstateBranch(repo.hgDir) };
    const plan = opts.announce
      ? await clonePlan(resolver, opts.rev)
      : await updatePlan(resolver, cl, repo.hgDir, wc, opts.rev, ctx);
    const branch = plan.rev === NULL_REV ? 'default' : (await resolver.branchOf(plan.rev)).branch;
    const mrev = await manifestRevOf(cl, mf, plan.rev);
    const manifests = await updateManifests(repo.hgDir, mf, mrev, await manifestRevOf(cl, mf, p1Rev));
    cacheWrite = manifests.cacheWrite;
    const { targetText, sourceText } = manifests;
    const target: Target = {
      rev: plan.rev,
      nodeHex: plan.rev === NULL_REV ? NULL_HEX : cl.index.nodeHex(plan.rev),
      branch,
      manifestText: targetText,
      ...(opts.announce ? { announcement: cloneAnnouncement(plan, branch) } : {}),
    };
    // the manifests are parsed: their texts (cached, ~9 MB on a 99k-file manifest) and read
    // windows would otherwise stay through the whole checkout
    mf.clearCache();
    cl.clearCache();
    const stats = await checkout(repo, ds, sourceText, target, opts, ctx, writers);
    // hg's note after `update --hidden` to an obsolete changeset
    if (hidden?.[plan.rev] === 1)
      ctx.log('info', `updated to hidden changeset ${target.nodeHex.slice(0, 12)}`);
    await afterCheckout(
      repo.loc,
      resolver,
      cl,
      plan,
      { rev: target.rev, nodeHex: target.nodeHex, branch },
      ctx,
    );
    // hg writes its manifest cache when the wlock is released after a success, as here
    cacheWrite?.commit();
    return { ...stats, manifestsFromCache: manifests.fromCache };
  } finally {
    cacheWrite?.discard();
    // checkout() ends the threads itself once they have run (before its undo, after its dirstate);
    // any other way out (a refused plan or audit, a cancel, a failed read) ends them here
    await writers.terminate();
    await cl?.close();
    await mf.close();
  }
}

function writePoolOptions(opts: UpdateOptions): WritePoolOptions {
  return {
    ...(opts.closeImpl ? { closeImpl: opts.closeImpl } : {}),
    ...(opts.workers !== undefined ? { workers: opts.workers } : {}),
    ...(opts.mainShare !== undefined ? { mainShare: opts.mainShare } : {}),
  };
}

/** What a checkout writes, removes and chmods (merge.calculateupdates for a clean working copy). */
interface CheckoutChanges extends CheckedOut {
  /** files to write (between revisions) */
  gets: ManifestEntry[];
  /** the gets the working copy's parent does not have (between revisions) */
  added: ReadonlySet<string>;
  /** manifestmerge's 'e' action: same file node, only the exec bit changes (chmod, no rewrite) */
  execs: ManifestEntry[];
  /** tracked files the target does not have */
  removes: string[];
  files: FileBatch['files'];
}

/**
 * What checking out target over the working copy (sourceText: its parent's manifest) changes;
 * between revisions, the working copy must be clean.
 */
async function checkoutChanges(
  repo: LocalRepo,
  ds: Dirstate,
  sourceText: Uint8Array,
  target: Target,
  ctx: JobContext,
): Promise<CheckoutChanges> {
  // an empty manifest text has no lines, a non-empty one at least one
  const fresh = sourceText.length === 0 && ds.entries.size === 0;
  // from null every manifest line is a get: the lines' bytes go straight into the batch's columns
  // (no entry object, hex string or map per line on the serial path before the first file)
  const packed = fresh ? packManifestFiles(target.manifestText) : undefined;
  const diff = fresh ? undefined : diffManifests(sourceText, target.manifestText);
  target.manifestText = NO_TEXT;
  // subrepo.state: hg's update clones and updates the subrepositories `.hgsub` names; Sluice writes
  // `.hgsub` and `.hgsubstate` as plain files and leaves them to hg
  if ((packed ? packed.paths : diff!.targetPaths).includes('.hgsub'))
    ctx.log(
      'warn',
      'this revision has subrepositories (.hgsub): Sluice does not clone or update them; run hg update to get them',
    );
  if (!fresh) {
    // merge.update refuses over an uncommitted merge, then over what hg status lists
    if (ds.p2.some((b) => b !== 0)) throw new SluiceError('USAGE', 'outstanding uncommitted merge');
    await refuseUncommitted(repo.root, {
      warn: (m) => ctx.log('warn', m.trimEnd()),
      signal: ctx.signal,
      parentManifestText: sourceText,
    });
  }

  const gets = diff?.gets ?? [];
  const execs = diff?.execs ?? [];
  return {
    fresh,
    targetPaths: diff?.targetPaths ?? [],
    added: diff?.added ?? new Set(),
    gets,
    execs,
    execPaths: new Set(execs.map((e) => e.path)),
    removes: diff?.removes ?? [],
    files: packed ? packed.files : packBatchFiles(gets),
    // the manifest's order (sorted paths): neighbours share directories and are claimed together
    paths: packed ? packed.paths : gets.map((g) => g.path),
  };
}

/**
 * Every name is checked before the first write (pathauditor, _checkcollision); between revisions
 * also the existing directories on the way (a fresh checkout's writer audits what mkdir finds)
 * and untracked files in the way (a fresh checkout's exclusive creates refuse those).
 */
function auditCheckout(auditor: PathAuditor, changes: CheckoutChanges): void {
  auditPathSet(auditor, changes.fresh ? changes.paths : changes.targetPaths);
  if (changes.fresh) return;
  const removing = new Set(changes.removes);
  const seen = new Set<string>();
  for (const { path } of changes.gets) {
    auditExistingParents(auditor, path, removing, seen);
    if (changes.added.has(path) && inTheWay(auditor, path, removing))
      throw new SluiceError(
        'DEST_EXISTS',
        `untracked file in working directory differs from file in requested revision: '${displayPath(path)}'`,
        { path: displayPath(path) },
      );
  }
}

/** The checkout's start event and log lines, before the first file is written. */
function announceCheckout(
  repo: LocalRepo,
  target: Target,
  count: number,
  plan: CloserPlan,
  opts: UpdateOptions,
  ctx: JobContext,
): void {
  if (opts.emitStart)
    ctx.emit({
      type: 'start',
      kind: 'update',
      files: count,
      bytes: 0,
      requirements: [...repo.requirements].sort(),
      source: `${target.rev}:${target.nodeHex.slice(0, 12)}`,
      dest: repo.root,
    });
  if (target.announcement !== undefined) ctx.log('info', target.announcement);
  ctx.phase('checkout');
  ctx.throwIfCancelled();
  if (plan.background) ctx.log('debug', `starting ${plan.threads} threads for background file closing`);
}

/** Between revisions, once every new content is in scratch: the point of no return. */
function swapIntoPlace(
  auditor: PathAuditor,
  writer: WorkingCopyWriter,
  batch: FileBatch,
  changes: CheckoutChanges,
): void {
  for (const path of changes.removes) removeTracked(auditor, path);
  for (let i = 0; i < changes.paths.length; i++) writer.moveInto(batchTarget(batch, i), changes.paths[i]!);
  for (const e of changes.execs) setExecFlag(auditor.fsPath(e.path), e.flag === 'x');
}

async function checkout(
  repo: LocalRepo,
  ds: Dirstate,
  sourceText: Uint8Array,
  target: Target,
  opts: UpdateOptions,
  ctx: JobContext,
  writers: FileWriters,
): Promise<Omit<UpdateStats, 'manifestsFromCache'>> {
  const auditor = new PathAuditor(repo.root, opts.auditor);
  const changes = await checkoutChanges(repo, ds, sourceText, target, ctx);
  const { fresh, files, paths, removes } = changes;
  const count = files.count;
  const plan = planCloser(opts.closer, count);
  const scratch = fresh
    ? undefined
    : join(repo.hgDir, `sluice-update-${process.pid}-${randomBytes(4).toString('hex')}`);
  const batch: FileBatch = {
    loc: repo.loc,
    files,
    ...(scratch !== undefined ? { scratch } : {}),
    ...(opts.symlinks !== undefined ? { symlinks: opts.symlinks } : {}),
    ...(opts.streamAbove !== undefined ? { streamAbove: opts.streamAbove } : {}),
    closer: plan,
  };
  const shared = newBatchShared(count);
  auditCheckout(auditor, changes);
  announceCheckout(repo, target, count, plan, opts, ctx);
  const progress = new ProgressTracker(ctx, { bytes: 0, files: count });
  const writer = new WorkingCopyWriter(auditor);
  let committed = false;
  try {
    if (scratch) mkdirSync(scratch);
    const close = await writers.run(ctx, progress, batch, shared, () => {
      if (!scratch) writer.ensureParents(paths);
    });
    progress.finish();
    ctx.throwIfCancelled();
    if (scratch) {
      committed = true;
      swapIntoPlace(auditor, writer, batch, changes);
    }
    const v2 = repo.requirements.has('dirstate-v2');
    const p1 = Buffer.from(target.nodeHex, 'hex');
    const next = checkoutDirstate(p1, changes, ds, shared.stats, fsNowSeconds(repo.hgDir), v2);
    writeAtomic(join(repo.hgDir, 'branch'), Buffer.from(target.branch + '\n', 'latin1'));
    committed = true;
    writeCheckoutDirstate(repo.hgDir, next, v2);
    await writers.terminate(); // their threads ended while the dirstate was written
    // hg's merge stats line (hg update / hg clone)
    ctx.log(
      'info',
      `${count} files updated, 0 files merged, ${removes.length} files removed, 0 files unresolved`,
    );
    return {
      rev: target.rev,
      nodeHex: target.nodeHex,
      branch: target.branch,
      files: count,
      removed: removes.length,
      bytes: progress.bytes,
      close,
    };
  } catch (e) {
    const err = toSluiceError(e);
    await writers.terminate(); // stopped already unless the failure came before they ran
    if (!committed) {
      ctx.phase('cleanup');
      // every thread has stopped and closed what it wrote (writeBatch settles only then)
      const created: (string | Buffer)[] = [];
      for (let i = 0; i < count; i++)
        if (Atomics.load(shared.status, i) !== FILE_PENDING) created.push(batchTarget(batch, i));
      writer.undo(created);
    }
    throw err;
  } finally {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  }
}

/** util.setflags for the exec bit: +x for every +r bit (minus the umask), or all x bits off. */
function setExecFlag(path: string | Buffer, exec: boolean): void {
  const s = lstatSync(path).mode & 0o7777;
  chmodSync(path, exec ? s | (((s & 0o444) >> 2) & ~currentUmask()) : s & 0o666);
}

function lexists(p: string | Buffer): boolean {
  try {
    lstatSync(p);
    return true;
  } catch {
    return false;
  }
}

/**
 * merge._checkunknownfiles: something untracked at `path`. A directory is not in the way when all
 * it holds are tracked files this update removes first (removeTracked then drops the emptied
 * directory, as hg's unlinkpath does): a directory replaced by a file between revisions.
 */
function inTheWay(auditor: PathAuditor, path: string, removing: ReadonlySet<string>): boolean {
  let st;
  try {
    st = lstatSync(auditor.fsPath(path));
  } catch {
    return false;
  }
  if (!st.isDirectory()) return true;
  // an empty directory stays (only the removed files' parents are pruned): in the way too
  const onlyRemoved = (dir: string): boolean => {
    const ents = readdirSync(auditor.fsPath(dir), { withFileTypes: true, encoding: 'buffer' });
    for (const ent of ents) {
      const child = `${dir}/${ent.name.toString('latin1')}`;
      if (ent.isDirectory() ? !onlyRemoved(child) : !removing.has(child)) return false;
    }
    return ents.length > 0;
  };
  return !onlyRemoved(path);
}

/** Audits the existing parents of `path`, except ones that are files this update removes first. */
function auditExistingParents(
  auditor: PathAuditor,
  path: string,
  removing: ReadonlySet<string>,
  seen: Set<string>,
): void {
  let slash = path.indexOf('/');
  while (slash >= 0) {
    const dir = path.slice(0, slash);
    if (removing.has(dir)) return; // removed before anything is renamed into place
    if (!seen.has(dir)) {
      seen.add(dir);
      if (lexists(auditor.fsPath(dir))) auditor.auditDir(dir, path);
    }
    slash = path.indexOf('/', slash + 1);
  }
}

/** util.unlinkpath(f, ignoremissing=True, rmdir=True): the file, then parents left empty. */
function removeTracked(auditor: PathAuditor, path: string): void {
  try {
    unlinkSync(auditor.fsPath(path));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  let dir = path;
  for (let slash = dir.lastIndexOf('/'); slash > 0; slash = dir.lastIndexOf('/')) {
    dir = dir.slice(0, slash);
    try {
      rmdirSync(auditor.fsPath(dir));
    } catch {
      break;
    }
  }
  auditor.reset();
}
