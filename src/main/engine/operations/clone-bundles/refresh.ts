// hg 6.5's `admin::clone-bundles-refresh` and `admin::clone-bundles-clear`: generate the bundles the
// triggers ask for, upload them, publish them in the manifest, then delete the outdated ones (out of
// the manifest first, so no client is sent to a bundle being deleted). One refresh at a time per
// repository (.hg/clonebundles.lock, hg's lock protocol).

import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { SluiceError } from '../../errors';
import { acquireLock } from '../../repo/lock';
import { readRepoConfig } from '../../store/hgrc';
import { locateRepository } from '../../store/requirements';
import { ServedRepo, type RepoSnapshot } from '../serve/repo-state';
import { readAutoGenConfig, requirePublishing, type AutoGenConfig } from './auto-config';
import { readAutoGenState, saveAutoGenState, type AutoBundle } from './auto-gen-state';
import type { AutoBundleSpec } from './bundle-specs';
import { publisherFor, type BundlePublisher } from './publisher';
import { immutableView, writeAutoBundle, type ImmutableView } from './write-bundle';

export interface RefreshOptions {
  signal?: AbortSignal;
  /** how long to wait for another refresh's lock (default 600 s; 0: LOCKED at once) */
  lockTimeoutMs?: number;
  onNote?: (line: string) => void;
}

export interface RefreshResult {
  generated: AutoBundle[];
  deleted: AutoBundle[];
  /** outdated bundles whose deletion failed (kept as OLD-v1 to retry) */
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

/** find_outdated_bundles: invalid ones, and all but the largest of each type. */
export function outdatedBundles(
  bundles: readonly AutoBundle[],
  valid: (b: AutoBundle) => boolean,
): AutoBundle[] {
  const old = bundles.filter((b) => b.status === 'old' || !valid(b));
  const byType = new Map<string, AutoBundle[]>();
  for (const b of bundles)
    if (b.status === 'done' && valid(b)) byType.set(b.spec, [...(byType.get(b.spec) ?? []), b]);
  for (const list of byType.values()) old.push(...list.sort((a, b) => b.revs - a.revs).slice(1));
  return old;
}

/** valid_for: the bundle's tip is still a public changeset of the repository (not stripped). */
function validator(snap: RepoSnapshot): (b: AutoBundle) => boolean {
  return (b) => {
    const r = snap.graph.rev(Buffer.from(b.tipNode, 'hex').toString('latin1'));
    return r !== undefined && snap.phases[r] === 0 && snap.visible(r);
  };
}

function basenameFor(spec: AutoBundleSpec, view: ImmutableView, opId: string): string {
  const type = spec.name.replace(/[^A-Za-z0-9.]+/g, '-');
  return `full-${type}-${view.revs}_revs-${view.tipNode.slice(0, 12)}_tip-${opId}.hg`;
}

interface Session {
  hgDir: string;
  cfg: AutoGenConfig;
  publisher: BundlePublisher;
  opts: RefreshOptions;
}

async function withSession<T>(
  repo: string,
  opts: RefreshOptions,
  publishing: boolean,
  body: (s: Session) => Promise<T>,
): Promise<T> {
  const loc = await locateRepository(repo);
  const cfg = readAutoGenConfig(await readRepoConfig(repo));
  if (publishing) requirePublishing(cfg);
  const lock = await acquireLock(join(loc.hgDir, 'clonebundles.lock'), {
    timeoutMs: opts.lockTimeoutMs ?? 600_000,
    description: `clone bundles of ${repo}`,
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
  try {
    return await body({ hgDir: loc.hgDir, cfg, publisher: await publisherFor(cfg), opts });
  } finally {
    lock.release();
  }
}

/** Removes outdated bundles: out of the manifest first, then from the storage. */
async function deleteBundles(
  s: Session,
  bundles: AutoBundle[],
  doomed: AutoBundle[],
  result: RefreshResult,
): Promise<AutoBundle[]> {
  if (!doomed.length) return bundles;
  const gone = new Set(doomed.map((b) => b.basename));
  let state = bundles.map((b) => (gone.has(b.basename) ? { ...b, status: 'old' as const } : b));
  await saveAutoGenState(s.hgDir, state);
  for (const b of doomed) {
    try {
      await s.publisher.remove(b.basename, s.opts.signal);
      state = state.filter((x) => x.basename !== b.basename);
      result.deleted.push(b);
      s.opts.onNote?.(`deleted ${b.basename}`);
    } catch (e) {
      if (s.opts.signal?.aborted) throw e;
      result.failedDeletes.push(`${b.basename}: ${(e as Error).message}`);
    }
    await saveAutoGenState(s.hgDir, state);
  }
  return state;
}

async function generateOne(
  s: Session,
  snap: RepoSnapshot,
  view: ImmutableView,
  spec: AutoBundleSpec,
  opId: string,
): Promise<AutoBundle> {
  const basename = basenameFor(spec, view, opId);
  const tmpDir = join(s.hgDir, 'cache', 'clonebundles-tmp');
  await mkdir(tmpDir, { recursive: true });
  const file = join(tmpDir, basename);
  try {
    s.opts.onNote?.(`generating ${basename}`);
    const written = await writeAutoBundle(snap, view, spec, file, s.opts.signal);
    s.opts.onNote?.(`uploading ${basename} (${written.size} bytes)`);
    await s.publisher.upload(file, basename, s.opts.signal);
    return {
      status: 'done',
      spec: spec.name,
      manifestSpec: written.manifestSpec,
      revs: view.revs,
      tipRev: view.tipRev,
      tipNode: view.tipNode,
      basename,
      url: s.cfg.urlTemplate!.replaceAll('{basename}', basename),
      sha256: written.sha256,
      size: written.size,
    };
  } finally {
    await rm(file, { force: true });
  }
}

export async function refreshCloneBundles(repo: string, opts: RefreshOptions = {}): Promise<RefreshResult> {
  return withSession(repo, opts, true, async (s) => {
    const snap = await new ServedRepo(repo).snapshot();
    const view = immutableView(snap);
    const valid = validator(snap);
    let bundles = await readAutoGenState(s.hgDir);
    const result: RefreshResult = { generated: [], deleted: [], failedDeletes: [] };
    const opId = `${process.pid}${randomBytes(3).toString('hex')}`;
    for (const spec of s.cfg.formats) {
      if (!bundleNeeded(bundles, spec.name, view, s.cfg, valid)) continue;
      const made = await generateOne(s, snap, view, spec, opId);
      // published only now: uploaded whole
      bundles = [...bundles, made];
      await saveAutoGenState(s.hgDir, bundles);
      result.generated.push(made);
    }
    await deleteBundles(s, bundles, outdatedBundles(bundles, valid), result);
    return result;
  });
}

/** admin::clone-bundles-clear: every auto-generated bundle out of the manifest and the storage. */
export async function clearCloneBundles(repo: string, opts: RefreshOptions = {}): Promise<RefreshResult> {
  return withSession(repo, opts, false, async (s) => {
    if (!s.cfg.uploadUrl && !s.cfg.deleteCommand)
      throw new SluiceError(
        'USAGE',
        'clone-bundles.delete-command or clone-bundles.upload-url must be set to delete bundles',
      );
    const bundles = await readAutoGenState(s.hgDir);
    const result: RefreshResult = { generated: [], deleted: [], failedDeletes: [] };
    await deleteBundles(s, bundles, bundles, result);
    return result;
  });
}

export async function listCloneBundles(repo: string): Promise<AutoBundle[]> {
  return readAutoGenState((await locateRepository(repo)).hgDir);
}
