// `sluice apply BUNDLE DEST` for changegroup bundles (what plain `hg bundle` writes): into an
// existing repository like `hg unbundle`, or into a new one made atomically like the stream
// apply does (a temporary beside DEST, `hg init` + unbundle there, renamed into place at the end).

import { obsolescenceEnabled } from '../../repo/obsstore';
import { lstat, stat } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  applyBundleBytesToRepo,
  createEmptyRepository,
  summarizeBundle,
  type ApplyToRepoResult,
  type BundleKind,
} from '../../changegroup';
import { ByteSource } from '../../format/byte-source';
import { SluiceError, toSluiceError } from '../../errors';
import type { JobContext } from '../../context/job-context';
import { DEFAULT_NEW_REPO_REQUIREMENTS, readRequirements } from '../../store/requirements';
import { readAhead } from './apply-stream-bundle';
import { createTempDestination } from '../../repo/destination';

export interface ChangegroupApplyStats extends ApplyToRepoResult {
  dest: string;
  /** true when DEST was created, false when an existing repository got the changesets */
  created: boolean;
}

/**
 * What `sluice apply` does with the bundle at `path`: changegroup bundles (HG10, HG20 with a
 * changegroup part) go here, stream bundles to the stream apply. A regular file is sniffed by a
 * first read up to its first part; anything else (a pipe can be read only once) is taken as a
 * stream bundle, which the stream apply checks and refuses if it is not one.
 */
export async function bundleKindOf(path: string): Promise<BundleKind | 'unknown'> {
  const st = await statBundleSource(path);
  if (!st.isFile()) return 'unknown';
  try {
    return (await summarizeBundle(new ByteSource(readAhead(path, 64 * 1024)))).kind;
  } catch (e) {
    if (e instanceof SluiceError && e.code === 'BAD_MAGIC') return 'unknown';
    throw e;
  }
}

/**
 * The bundle file a job reads, checked before anything is written: a missing path, a folder or a
 * file without read permission is SOURCE_UNREADABLE, which names the bundle, so nobody is sent to
 * check the destination's free space for it. Pipes and devices pass (read once, as a stream).
 */
export async function statBundleSource(path: string): Promise<Stats> {
  let st: Stats;
  try {
    st = await stat(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR')
      throw new SluiceError('SOURCE_UNREADABLE', `bundle ${path} does not exist`, { path });
    if (code === 'EACCES' || code === 'EPERM')
      throw new SluiceError('SOURCE_UNREADABLE', `bundle ${path} cannot be read: permission denied`, {
        path,
      });
    throw toSluiceError(e);
  }
  if (st.isDirectory())
    throw new SluiceError('SOURCE_UNREADABLE', `${path} is a folder, not a bundle file`, { path });
  return st;
}

/** True when `dir/.hg` is a directory. */
export async function isRepository(dir: string): Promise<boolean> {
  try {
    return (await lstat(join(dir, '.hg'))).isDirectory();
  } catch {
    return false;
  }
}

export async function applyChangegroupBundleFile(
  bundlePath: string,
  destPath: string,
  ctx: JobContext,
  opts: { lockTimeoutMs?: number } = {},
): Promise<ChangegroupApplyStats> {
  const dest = resolve(destPath);
  const size = (
    await stat(bundlePath).catch((e: unknown) => {
      throw toSluiceError(e);
    })
  ).size;
  const existing = await isRepository(dest);
  const requirements = existing
    ? [...(await readRequirements(dest))].sort()
    : [...DEFAULT_NEW_REPO_REQUIREMENTS];
  ctx.emit({
    type: 'start',
    kind: 'apply',
    format: 'changegroup',
    files: 0,
    bytes: size,
    requirements,
    source: resolve(bundlePath),
    dest,
  });
  const applyOpts = {
    totalBytes: size,
    ...(opts.lockTimeoutMs !== undefined ? { lockTimeoutMs: opts.lockTimeoutMs } : {}),
  };
  // bundle2.handleobsmarker: markers merge into a repository that may create them; into one that
  // may not, an advisory part is skipped and a mandatory one (what `hg bundle` writes) aborts the
  // whole unbundle, as hg's read-only obsstore does (OBSOLESCENCE_DISABLED)
  const obsmarkers = async (root: string) =>
    (await obsolescenceEnabled(root, 'createmarkers')) ? ('merge' as const) : ('ignore' as const);
  if (existing) {
    const r = await applyBundleBytesToRepo(dest, readAhead(bundlePath), ctx, {
      ...applyOpts,
      obsmarkers: await obsmarkers(dest),
    });
    return { ...r, repo: dest, dest, created: false };
  }
  const tmp = await createTempDestination(dest);
  try {
    await createEmptyRepository(tmp.root);
    const r = await applyBundleBytesToRepo(tmp.root, readAhead(bundlePath), ctx, {
      ...applyOpts,
      obsmarkers: await obsmarkers(tmp.root),
    });
    ctx.throwIfCancelled();
    await tmp.commit();
    return { ...r, repo: dest, dest, created: true };
  } catch (e) {
    ctx.phase('cleanup');
    await tmp.discard();
    throw e instanceof SluiceError ? e : toSluiceError(e);
  }
}
