// Public API of changegroup application (stable: helper code for pull, clone --pull and the apply
// job build on it).
//
//   createEmptyRepository(repoRoot, opts?)
//       `hg init`: `.hg` with hg 6.3.2's default requirements (or opts.requirements); repoRoot
//       may exist, `.hg` must not (DEST_EXISTS).
//
//   applyBundle2ToRepo(repoRoot, source, ctx, opts?) → ApplyToRepoResult
//       A bundle2 stream (`HG20…`, e.g. a getbundle reply body or a bundle file's bytes) into an
//       existing repository, in one transaction: changegroup parts (cg1/cg2/cg3), phase-heads,
//       bookmarks ('apply' by default, 'records' to only return them, as hg pull does),
//       obsmarkers (merged with opts.obsmarkers 'merge'; else an advisory part is skipped and a
//       mandatory one refused, OBSOLESCENCE_DISABLED, as hg's read-only obsstore). Bytes after
//       the end-of-bundle marker are refused (MALFORMED) unless opts.trailing is 'ignore' (ssh).
//
//   applyChangegroupToRepo(repoRoot, source, version, ctx, opts?) → ApplyToRepoResult
//       A bare cgN stream ('01' | '02' | '03') in one transaction.
//
// Both take the locks (`.hg/wlock`, `.hg/store/lock`, waiting for hg's as hg does, up to
// opts.lockTimeoutMs), roll back a journal a crash left, and either commit everything or leave
// the repository byte-identical to before (error, cancel through ctx.signal, or a crash: the next
// run or `hg recover` rolls the journal back). Every revision is checked against its node id;
// failures are SluiceError (REVLOG with details.problem, MALFORMED, TRUNCATED, UNSAFE_PATH,
// LOCKED, CANCELLED…). Added changesets get opts.targetPhase (default draft, hg's cg.apply
// default) and then phase-heads are applied (phases.updatephases); a pull from a publishing
// server that sends no phase-heads passes targetPhase: 0.
//
// Events: phases 'changesets', 'manifests', 'files'; progress (bytes of the source consumed,
// opts.totalBytes as the total when known); one batched files entry per filelog
// (`data/<path>.i`); debug logs 'adding changesets' / 'adding manifests' / 'adding file changes'.
// The caller emits the job's start event.

import { DEFAULT_NEW_REPO_REQUIREMENTS } from '../store/requirements';
import { createRepoSkeleton } from '../store/repo-layout';
import { Bundle2Reader } from '../format/bundle2';
import { ByteSource } from '../format/byte-source';
import type { JobContext } from '../context/job-context';
import { ProgressTracker } from '../context/progress';
import type { MarkerBlock } from '../repo/obsstore';
import { RepoWriteSession, type RepoLocks } from '../repo/write-session';
import {
  APPLY_PARTS,
  addChangegroup,
  applyBundle2Parts,
  type Bundle2ApplyOptions,
  type ChangegroupCounts,
  type ChangegroupProgress,
} from './add-changegroup';
import { openChangegroupBundle } from './changegroup-bundle-file';
import { ChangegroupReader, type ChangegroupVersion } from './reader';
import { SluiceError } from '../errors';

export type { ChangegroupCounts } from './add-changegroup';
export type { ChangegroupVersion } from './reader';
export { summarizeBundle, type BundleSummary, type BundleKind } from './changegroup-bundle-file';

export interface ApplyToRepoOptions {
  /** wait this long for a lock held by hg or another Sluice (default: ui.timeout, as hg reads it) */
  lockTimeoutMs?: number;
  /** the repository's locks when the caller already holds them (a pull: lockRepository) */
  heldLocks?: RepoLocks;
  /** phase of the added changesets before phase-heads apply (default 1 = draft, hg's default) */
  targetPhase?: number;
  /** bookmarks part: 'apply' (hg unbundle, default) or 'records' (hg pull: returned, not written) */
  bookmarks?: 'apply' | 'records';
  /** the source's size when known (progress total) */
  totalBytes?: number;
  /** what `hg rollback` calls the transaction (default `unbundle`; a pull: `pull\nURL`) */
  desc?: string;
  /**
   * obsmarkers part: 'merge' (the repository may create markers: obsolete.isenabled
   * createmarkers, or a clone asked for them), else 'ignore' (default): an advisory part is
   * skipped, a mandatory one aborts the transaction (bundle2.handleobsmarker → obsstore.add)
   */
  obsmarkers?: 'merge' | 'ignore';
  /**
   * markers that came outside the bundle (the `obsolete` listkeys namespace, as format-1 bytes),
   * added in the same transaction after its parts (exchange._pullobsolete)
   */
  listkeyMarkers?: MarkerBlock;
  /**
   * bytes after the bundle2 end marker: 'refuse' (default: the source ends with the bundle, as an
   * HTTP body or a file does) or 'ignore' (an ssh pipe, where the next reply follows)
   */
  trailing?: 'refuse' | 'ignore';
  /**
   * the text of a stored manifest the changegroup's first manifest delta likely applies to,
   * rebuilt by the caller while it waited (operations/pull/pull.ts): given to the manifest writer
   */
  manifestSeed?: Promise<ManifestSeed | undefined>;
}

/** A stored root manifest's node and text. */
export interface ManifestSeed {
  node: Uint8Array;
  text: Uint8Array;
}

export interface ApplyToRepoResult extends ChangegroupCounts {
  repo: string;
  /** bytes of the source consumed */
  bytes: number;
  /** heads before and after; newHeads = heads not there before (hex) */
  headsBefore: number;
  headsAfter: number;
  newHeads: string[];
  /** the bookmarks part ([name, hex or null = delete]) and phase-heads part ([phase, hex]) as received */
  bookmarks: [string, string | null][];
  phaseHeads: [number, string][];
}

export async function createEmptyRepository(
  repoRoot: string,
  opts: { requirements?: Iterable<string>; defaultPath?: string } = {},
): Promise<void> {
  await createRepoSkeleton(repoRoot, {
    requirements: opts.requirements ?? DEFAULT_NEW_REPO_REQUIREMENTS,
    ...(opts.defaultPath !== undefined ? { defaultPath: opts.defaultPath } : {}),
  });
}

type Body = (
  session: RepoWriteSession,
  src: ByteSource,
  progress: ChangegroupProgress,
) => Promise<{
  counts: ChangegroupCounts;
  bookmarks: [string, string | null][];
  phaseHeads: [number, string][];
}>;

async function inTransaction(
  repoRoot: string,
  src: ByteSource,
  ctx: JobContext,
  opts: ApplyToRepoOptions,
  body: Body,
): Promise<ApplyToRepoResult> {
  let session: RepoWriteSession | undefined;
  try {
    ctx.throwIfCancelled();
    session = await RepoWriteSession.open(repoRoot, {
      ...(opts.lockTimeoutMs !== undefined ? { lockTimeoutMs: opts.lockTimeoutMs } : {}),
      ...(opts.heldLocks ? { heldLocks: opts.heldLocks } : {}),
      signal: ctx.signal,
      log: (l, m) => ctx.log(l, m),
      ...(opts.desc !== undefined ? { desc: opts.desc } : {}),
      freeSpace: ctx.freeSpace,
    });
    session.setTargetPhase(opts.targetPhase ?? 1);
    const seed = await opts.manifestSeed;
    if (seed) session.manifest('').seed(seed.node, seed.text);
    const g0 = session.graph();
    const headsBefore = new Set(g0.headRevs().map((r) => g0.nodes[r]!));
    const tracker = new ProgressTracker(ctx, { bytes: opts.totalBytes ?? 0, files: 0 });
    const res = await body(session, src, { tracker, sourceOffset: () => src.offset });
    ctx.throwIfCancelled();
    const g1 = session.graph();
    const heads = g1.headRevs().map((r) => g1.nodes[r]!);
    ctx.phase('finalize');
    await session.commit();
    tracker.finish();
    return {
      repo: repoRoot,
      ...res.counts,
      bytes: src.offset,
      headsBefore: headsBefore.size,
      headsAfter: heads.length,
      newHeads: heads.filter((h) => !headsBefore.has(h)).map((h) => Buffer.from(h, 'latin1').toString('hex')),
      bookmarks: res.bookmarks,
      phaseHeads: res.phaseHeads,
    };
  } catch (e) {
    // a revision that did not hash to its node comes first (its check may still have been running)
    const mismatch =
      session && !(e instanceof SluiceError && e.code === 'CANCELLED')
        ? await session.firstCheckFailure()
        : undefined;
    await session?.abort();
    throw mismatch ?? e;
  } finally {
    await src.close();
  }
}

/** A bundle2 container's parts applied in a transaction's body, and what the result reports of them. */
async function bundle2Body(
  session: RepoWriteSession,
  bundle: Bundle2Reader,
  ctx: JobContext,
  opts: Bundle2ApplyOptions,
  progress: ChangegroupProgress,
  trailing: 'refuse' | 'ignore',
): ReturnType<Body> {
  const out = await applyBundle2Parts(session, bundle, ctx, opts, progress);
  // before the commit: a bundle that goes on past its end marker applies nothing
  if (trailing === 'refuse') await bundle.expectEnd();
  return { counts: out, bookmarks: out.bookmarks, phaseHeads: out.phaseHeads };
}

/** A bundle2 stream into the repository at repoRoot (see the header). */
export function applyBundle2ToRepo(
  repoRoot: string,
  source: AsyncIterable<Uint8Array>,
  ctx: JobContext,
  opts: ApplyToRepoOptions = {},
): Promise<ApplyToRepoResult> {
  return inTransaction(repoRoot, new ByteSource(source), ctx, opts, async (session, src, progress) => {
    const bundle = await Bundle2Reader.open(src, { knownParts: APPLY_PARTS });
    try {
      const out = await bundle2Body(
        session,
        bundle,
        ctx,
        { bookmarks: opts.bookmarks ?? 'apply', obsmarkers: opts.obsmarkers ?? 'ignore' },
        progress,
        opts.trailing ?? 'refuse',
      );
      if (opts.listkeyMarkers) {
        const added = session.addMarkers(opts.listkeyMarkers);
        if (added) ctx.log('info', `${added} new obsolescence markers`);
      }
      return out;
    } finally {
      await bundle.close();
    }
  });
}

/** A bare changegroup stream of `version` into the repository at repoRoot. */
export function applyChangegroupToRepo(
  repoRoot: string,
  source: AsyncIterable<Uint8Array>,
  version: ChangegroupVersion,
  ctx: JobContext,
  opts: ApplyToRepoOptions = {},
): Promise<ApplyToRepoResult> {
  return inTransaction(repoRoot, new ByteSource(source), ctx, opts, async (session, src, progress) => {
    const counts = await addChangegroup(session, new ChangegroupReader(src, version), ctx, progress);
    return { counts, bookmarks: [], phaseHeads: [] };
  });
}

/**
 * A changegroup bundle file's bytes (HG10UN/GZ/BZ or HG20) into the repository at repoRoot, as
 * `hg unbundle` does. A stream clone bundle is refused (BAD_MAGIC).
 */
export function applyBundleBytesToRepo(
  repoRoot: string,
  source: AsyncIterable<Uint8Array>,
  ctx: JobContext,
  opts: ApplyToRepoOptions = {},
): Promise<ApplyToRepoResult> {
  return inTransaction(repoRoot, new ByteSource(source), ctx, opts, async (session, src, progress) => {
    const opened = await openChangegroupBundle(src);
    try {
      if (opened.kind === 'bundle1') {
        const counts = await addChangegroup(session, opened.cg, ctx, progress);
        if (!(await opened.cg.atEof()))
          throw new SluiceError('MALFORMED', 'data after the end of the changegroup');
        return { counts, bookmarks: [], phaseHeads: [] };
      }
      return await bundle2Body(
        session,
        opened.bundle,
        ctx,
        { bookmarks: opts.bookmarks ?? 'apply', obsmarkers: opts.obsmarkers ?? 'ignore' },
        progress,
        'refuse',
      );
    } finally {
      await opened.close();
    }
  });
}
