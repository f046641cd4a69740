// hg 6.5's `admin::clone-bundles-refresh` and `admin::clone-bundles-clear`, on hg's own state
// (auto-gen-state.ts) and lock (`.hg/clonebundleslock`), so hg and Sluice can share a repository.
// As hg, a refresh first deletes the bundles that were already outdated (out of the manifest since
// the last refresh), then generates what the triggers ask for: the bundle a client was just sent
// stays in the storage until the next refresh, and a new one is published only once uploaded.

import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { SluiceError } from '../../errors';
import { acquireLock, lockHostPrefix } from '../../repo/lock';
import { readRepoConfig } from '../../store/hgrc';
import { locateRepository } from '../../store/requirements';
import { ServedRepo, type RepoSnapshot } from '../serve/repo-state';
import { readAutoGenConfig, requirePublishing, type AutoGenConfig } from './auto-config';
import {
  advertisedBundles,
  readAutoGenState,
  saveAutoGenState,
  type AutoBundle,
  type DoneBundle,
  type PendingBundle,
} from './auto-gen-state';
import type { AutoBundleSpec } from './bundle-specs';
import { publisherFor, type BundlePublisher } from './publisher';
import { immutableView, writeAutoBundle, type ImmutableView } from './write-bundle';

/** hg's lock and temporary folder names, inside .hg */
const LOCK_NAME = 'clonebundleslock';
const TMP_DIR = 'tmp-bundles';

export interface RefreshOptions {
  signal?: AbortSignal;
  /** how long to wait for another refresh's lock (default 600 s; 0: LOCKED at once) */
  lockTimeoutMs?: number;
  onNote?: (line: string) => void;
}

export interface RefreshResult {
  generated: DoneBundle[];
  deleted: DoneBundle[];
  /** outdated bundles whose deletion failed (kept in the state, retried by the next refresh) */
  failedDeletes: string[];
}

/** new_bundle_needed: no valid bundle of this type covers more than the threshold. */
export function bundleNeeded(
  bundles: readonly AutoBundle[],
  spec: string,
  view: ImmutableView,
  cfg: AutoGenConfig,
  valid: (b: AutoBundle) => boolean,
): boolean {
  if (view.revs === 0) return false;
  const threshold = Math.max(view.revs * cfg.belowBundledRatio, view.revs - cfg.triggerRevs);
  return !bundles.some((b) => b.status === 'done' && b.spec === spec && valid(b) && b.revs > threshold);
}

/** find_outdated_bundles, uploaded ones: invalid ones, and all but the largest of each type. */
export function outdatedBundles(
  bundles: readonly AutoBundle[],
  valid: (b: AutoBundle) => boolean,
): DoneBundle[] {
  const kept = new Set(advertisedBundles(bundles, valid));
  return bundles.filter((b): b is DoneBundle => b.status === 'done' && !kept.has(b));
}

/**
 * valid_for: the bundle's tip still has its revision number (not stripped); Sluice also wants it
 * public and visible, as the bundle was made of the immutable view.
 */
function validator(snap: RepoSnapshot): (b: AutoBundle) => boolean {
  return (b) => {
    const r = snap.graph.rev(Buffer.from(b.tipNode, 'hex').toString('latin1'));
    return r === b.tipRev && snap.phases[r] === 0 && snap.visible(r);
  };
}

/** hg's BUNDLE_MASK with the type made safe for a file and object name */
function basenameFor(spec: AutoBundleSpec, view: ImmutableView, opId: string): string {
  const type = spec.name.replace(/[^A-Za-z0-9.]+/g, '-');
  return `full-${type}-${view.revs}_revs-${view.tipNode.slice(0, 12)}_tip-${opId}.hg`;
}

/** A generation of this machine whose process is gone: hg's would stay forever, Sluice drops it. */
function isStalePending(b: AutoBundle): b is PendingBundle {
  if (b.status !== 'pending' || b.host !== lockHostPrefix()) return false;
  try {
    process.kill(b.pid, 0);
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

interface Session {
  hgDir: string;
  cfg: AutoGenConfig;
  publisher: BundlePublisher;
  opts: RefreshOptions;
  valid: (b: AutoBundle) => boolean;
  /** writes the state and its manifest; `withheld` bundles stay out of the manifest */
  save(bundles: readonly AutoBundle[], withheld?: ReadonlySet<AutoBundle>): Promise<void>;
}

async function withSession<T>(
  repo: string,
  opts: RefreshOptions,
  publishing: boolean,
  body: (s: Session, snap: RepoSnapshot) => Promise<T>,
): Promise<T> {
  const loc = await locateRepository(repo);
  const cfg = readAutoGenConfig(await readRepoConfig(repo));
  if (publishing) requirePublishing(cfg);
  const lock = await acquireLock(join(loc.hgDir, LOCK_NAME), {
    timeoutMs: opts.lockTimeoutMs ?? 600_000,
    description: `clone bundles of ${repo}`,
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
  try {
    const snap = await new ServedRepo(repo).snapshot();
    const valid = validator(snap);
    const session: Session = {
      hgDir: loc.hgDir,
      cfg,
      publisher: await publisherFor(cfg),
      opts,
      valid,
      save: (bundles, withheld) =>
        saveAutoGenState(
          loc.hgDir,
          bundles,
          withheld ? (b) => valid(b) && !withheld.has(b) : valid,
          cfg.formats.map((f) => f.name),
        ),
    };
    return await body(session, snap);
  } finally {
    lock.release();
  }
}

/**
 * Deletes bundles from the storage, then from the state. They leave the manifest first, so no client
 * is sent to a bundle being deleted; one whose deletion failed is still there, and may return to it.
 */
async function deleteBundles(
  s: Session,
  bundles: readonly AutoBundle[],
  doomed: readonly DoneBundle[],
  result: RefreshResult,
): Promise<AutoBundle[]> {
  if (!doomed.length) return [...bundles];
  const withheld = new Set<AutoBundle>(doomed);
  let state = [...bundles];
  await s.save(state, withheld);
  for (const b of doomed) {
    try {
      await s.publisher.remove(b, s.opts.signal);
      state = state.filter((x) => x !== b);
      result.deleted.push(b);
      s.opts.onNote?.(`deleted ${b.basename}`);
    } catch (e) {
      if (s.opts.signal?.aborted) throw e;
      result.failedDeletes.push(`${b.basename}: ${(e as Error).message}`);
    }
    await s.save(state, withheld);
  }
  await s.save(state);
  return state;
}

/** Drops this machine's dead generations from the state, and their files. */
async function dropStalePending(s: Session, bundles: readonly AutoBundle[]): Promise<AutoBundle[]> {
  const stale = bundles.filter(isStalePending);
  if (!stale.length) return [...bundles];
  const tmpDir = join(s.hgDir, TMP_DIR);
  // only a file directly in the temporary folder: the state file is not trusted with other paths
  for (const b of stale) if (join(tmpDir, basename(b.path)) === b.path) await rm(b.path, { force: true });
  const kept = bundles.filter((b) => !stale.includes(b as PendingBundle));
  await s.save(kept);
  return kept;
}

async function generateOne(
  s: Session,
  snap: RepoSnapshot,
  view: ImmutableView,
  spec: AutoBundleSpec,
  opId: string,
  bundles: readonly AutoBundle[],
): Promise<DoneBundle> {
  const name = basenameFor(spec, view, opId);
  const tmpDir = join(s.hgDir, TMP_DIR);
  await mkdir(tmpDir, { recursive: true });
  const file = join(tmpDir, name);
  const base = { spec: spec.name, revs: view.revs, tipRev: view.tipRev, tipNode: view.tipNode };
  const pending: PendingBundle = {
    status: 'pending',
    ...base,
    host: lockHostPrefix(),
    pid: process.pid,
    path: file,
  };
  await s.save([...bundles, pending]);
  try {
    s.opts.onNote?.(`generating ${name}`);
    const written = await writeAutoBundle(snap, view, spec, file, s.opts.signal);
    s.opts.onNote?.(`uploading ${name} (${written.size} bytes)`);
    await s.publisher.upload(file, name, s.opts.signal);
    return {
      status: 'done',
      ...base,
      url: s.cfg.urlTemplate!.replaceAll('{basename}', name),
      basename: name,
      manifestSpec: written.manifestSpec,
      sha256: written.sha256,
      size: written.size,
    };
  } catch (e) {
    await s.save(bundles);
    throw e;
  } finally {
    await rm(file, { force: true });
  }
}

export async function refreshCloneBundles(repo: string, opts: RefreshOptions = {}): Promise<RefreshResult> {
  return withSession(repo, opts, true, async (s, snap) => {
    const view = immutableView(snap);
    const result: RefreshResult = { generated: [], deleted: [], failedDeletes: [] };
    let bundles = await dropStalePending(s, await readAutoGenState(s.hgDir));
    bundles = await deleteBundles(s, bundles, outdatedBundles(bundles, s.valid), result);
    const opId = `${process.pid}${randomBytes(3).toString('hex')}_acbr`;
    for (const spec of s.cfg.formats) {
      if (!bundleNeeded(bundles, spec.name, view, s.cfg, s.valid)) continue;
      const made = await generateOne(s, snap, view, spec, opId, bundles);
      // published only now: uploaded whole
      bundles = [...bundles, made];
      await s.save(bundles);
      result.generated.push(made);
    }
    return result;
  });
}

/** admin::clone-bundles-clear: every uploaded bundle out of the manifest, then out of the storage. */
export async function clearCloneBundles(repo: string, opts: RefreshOptions = {}): Promise<RefreshResult> {
  return withSession(repo, opts, false, async (s) => {
    if (!s.cfg.uploadUrl && !s.cfg.deleteCommand)
      throw new SluiceError(
        'USAGE',
        'clone-bundles.delete-command or clone-bundles.upload-url must be set to delete bundles',
      );
    const bundles = await readAutoGenState(s.hgDir);
    const result: RefreshResult = { generated: [], deleted: [], failedDeletes: [] };
    const uploaded = bundles.filter((b): b is DoneBundle => b.status === 'done');
    await deleteBundles(s, bundles, uploaded, result);
    return result;
  });
}

export interface ListedBundle {
  bundle: AutoBundle;
  /** in the manifest now */
  advertised: boolean;
}

/** The state's bundles, and which of them the manifest advertises. */
export async function listCloneBundles(repo: string): Promise<ListedBundle[]> {
  const loc = await locateRepository(repo);
  const bundles = await readAutoGenState(loc.hgDir);
  const valid = validator(await new ServedRepo(repo).snapshot());
  const advertised = new Set<AutoBundle>(advertisedBundles(bundles, valid));
  return bundles.map((bundle) => ({ bundle, advertised: advertised.has(bundle) }));
}
