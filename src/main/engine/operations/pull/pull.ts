// `sluice pull REPO [SOURCE]`: bring a repository up to date with a server as hg 6.3.2's pull
// does (exchange.pull → _pulldiscovery (setdiscovery), _pullbundle2 → getbundle with common/heads,
// changegroup + phase-heads + bookmarks parts, bookmarks.updatefromremote). The changegroup is
// applied in one transaction by changegroup/index.ts; phases only ever advance (phase-heads);
// bookmarks follow hg's rules: new ones are added, one whose remote target descends from the
// local one advances, a diverged one is kept as NAME@default (or NAME@1…).
//
// `incoming` runs discovery and reads only the changegroup part's header (its nbchanges) before
// hanging up: what a pull would bring, without bringing it.

import { resolve } from 'node:path';
import type { PullRequest } from '../../../../shared/jobs';
import { withoutCredentials } from '../../../../shared/urls';
import { updateWorkingCopy } from '../update/update';
import { applyBundle2ToRepo, type ApplyToRepoResult, type ManifestSeed } from '../../changegroup';
import { SluiceError, toSluiceError } from '../../errors';
import { Bundle2Reader } from '../../format/bundle2';
import { prepareZstd } from '../../codec/zstd';
import { ByteSource } from '../../format/byte-source';
import type { JobContext } from '../../context/job-context';
import { readRepoConfig } from '../../store/hgrc';
import { markersFromListkeys, obsolescenceEnabled, type MarkerBlock } from '../../repo/obsstore';
import {
  commitBookmarkChanges,
  lockRepository,
  refuseUnwritable,
  type RepoLocks,
} from '../../repo/write-session';
import { locateRepository, type RepoLocation } from '../../store/requirements';
import { LocalRepo } from '../../repo/local-repo';
import { parseChangelogEntry } from '../../revlog/texts';
import { clientBundleCaps, refuseRemoteRequirements } from '../../protocol/capabilities';
import { isLocalSource, localSourcePath } from '../local-peer';
import { redactUrl } from '../../client/http-client';
import { openPeer, openSession, type SessionOptions } from '../open-peer';
import { ChangelogGraph, binNode } from '../../repo/changelog-graph';
import { findCommonHeads } from '../../client/discovery';
import type { WirePeer } from '../../client/peer';
import { bookmarkView, plainBookmarkView, readBookmarks, type BookmarkView } from '../serve/repo-state';

/**
 * Bytes of the getbundle reply (as sent: compressed) read ahead of the apply (client/read-ahead.ts):
 * room, with the ~5 MB the kernel holds on loopback, for what hg serve sends (~7.5 MB/s) while the
 * client rebuilds and hashes the medium corpus's manifest group (~1.2 s). More only costs peak RSS
 * when the client is the slower side all along (a loaded machine: the buffer stays full); 8 MiB
 * (with 1 MiB decoded pieces) held the realpast pull clone's peak RSS 7-19 MB higher.
 */
const PULL_READ_AHEAD = 2 << 20;

export interface PullOutcome {
  /** URL pulled from (after redirects) */
  url: string;
  changesets: number;
  manifests: number;
  files: number;
  revisions: number;
  /** bytes of the getbundle reply consumed */
  bytes: number;
  /** the remote had nothing new */
  upToDate: boolean;
  /** incoming mode: changesets the remote would send (its nbchanges) */
  incoming?: number;
  /** bookmarks added, advanced or stored as divergent */
  bookmarksChanged: number;
  newHeads: string[];
}

/**
 * exchange.pull's SOURCE: the argument, else the repository's paths.default. A local one comes
 * back absolute: an argument resolved against the current directory, paths.default against the
 * repository root (ui.readconfig's [paths]).
 */
export async function pullSource(req: Pick<PullRequest, 'repo' | 'source'>): Promise<string> {
  if (req.source) return isLocalSource(req.source) ? localSourcePath(req.source, process.cwd()) : req.source;
  const config = await readRepoConfig(resolve(req.repo));
  const dflt = config.get('paths', 'default');
  if (!dflt)
    throw new SluiceError('USAGE', 'default repository not configured!', {
      hint: "see 'hg help config.paths'",
    });
  return isLocalSource(dflt) ? localSourcePath(dflt, resolve(req.repo)) : dflt;
}

/**
 * bookmarks.updatefromremote (merging_from_remote over comparebookmarks) for a pull of every
 * remote head: the changes to make to the local bookmarks, with the lines hg prints.
 */
export function bookmarkChanges(
  local: ReadonlyMap<string, string>,
  remote: readonly [string, string | null][],
  g: ChangelogGraph,
  divergentSuffix: string,
  log: (message: string) => void,
  view: BookmarkView = plainBookmarkView(g),
): Map<string, string> {
  const changes = new Map<string, string>();
  const revOf = (hex: string): number | undefined => g.rev(binNode(hex));
  for (const [name, hex] of remote) {
    if (hex === null) continue; // a deletion is never pulled
    const r = revOf(hex);
    const mine = local.get(name);
    if (mine === undefined) {
      // addsrc: only for a changeset the repository has and shows (`scid in repo`)
      if (r === undefined || !view.visible(r)) continue;
      changes.set(name, hex);
      log(`adding remote bookmark ${name}`);
      continue;
    }
    if (mine === hex) continue;
    const m = revOf(mine);
    // comparebookmarks' `differ`: either side unknown or hidden here, left as it is
    if (r === undefined || m === undefined || !view.visible(r) || !view.visible(m)) continue;
    if (r < m && view.validdest(r, m)) continue; // advdst: the local one is ahead, kept
    if (r > m && view.validdest(m, r)) {
      changes.set(name, hex);
      log(`updating bookmark ${name}`);
      continue;
    }
    // bookmarks._diverge: @alias of the path pulled from, else the first free @1..@99
    const b = name === '@' ? '' : name;
    let div: string | undefined = divergentSuffix ? `${b}@${divergentSuffix}` : undefined;
    for (let i = 1; !div && i < 100; i++) {
      const n = `${b}@${i}`;
      if (!local.has(n) || local.get(n) === hex) div = n;
    }
    if (!div || local.get(div) === hex) continue;
    changes.set(div, hex);
    log(`divergent bookmark ${name} stored as ${div}`);
  }
  return changes;
}

/** changegroup.apply's `(+N heads)`: an empty repository counts as one head (the null revision). */
function headsNote(before: number, after: number): string {
  const dh = after - Math.max(1, before);
  return dh > 0 ? ` (+${dh} heads)` : dh < 0 ? ` (${dh} heads)` : '';
}

/**
 * The root manifest of the local tip (its node and text), for the apply's manifest writer: a
 * pull's first manifest delta is against it in a linear history (hg sends each manifest as a
 * delta on its p1's), and its chain can be long (a repository filled by pulls stores each
 * manifest as a delta on the one before: the bench's base clone rebuilds it from 704 deltas,
 * ~0.1 s of a 1 s pull). Built while the server prepares the reply, not after it arrived.
 * Undefined for an empty repository, or when it cannot be read (the apply then rebuilds what it
 * needs and reports what is wrong).
 */
async function tipManifest(loc: RepoLocation): Promise<ManifestSeed | undefined> {
  const repo = LocalRepo.fromLocation(loc);
  try {
    const cl = await repo.changelog();
    try {
      if (cl.length === 0) return undefined;
      const node = parseChangelogEntry(await cl.revision(cl.length - 1, { check: false })).manifest;
      const ml = await repo.manifestlog();
      try {
        const rev = ml.index.rev(node);
        if (rev === undefined || rev < 0) return undefined;
        return { node, text: await ml.revision(rev, { check: false }) };
      } finally {
        await ml.close();
      }
    } finally {
      await cl.close();
    }
  } catch {
    return undefined;
  }
}

/**
 * hg incoming's count without the changesets: the getbundle reply's changegroup part says how
 * many it holds (nbchanges) in its header; the rest is never read.
 */
export async function countIncoming(
  peer: WirePeer,
  args: Parameters<WirePeer['getbundle']>[0],
): Promise<number> {
  const resp = await peer.getbundle(args);
  const bundle = await Bundle2Reader.open(new ByteSource(resp.body), {
    knownParts: { changegroup: ['version', 'nbchanges'] },
  });
  try {
    const part = await bundle.nextPart();
    const n = Number(part?.params.get('nbchanges') ?? NaN);
    if (!part || part.type !== 'changegroup' || !Number.isInteger(n))
      throw new SluiceError(
        'PROTOCOL',
        'the server did not say how many changesets it would send (nbchanges)',
      );
    return n;
  } finally {
    resp.discard();
    await bundle.close().catch(() => undefined);
  }
}

/** Pulls everything `peer` has into the repository at repoRoot. */
export async function pullFromPeer(
  repoRoot: string,
  peer: WirePeer,
  ctx: JobContext,
  /** obsmarkers: take the server's markers whatever REPO's config says (clone --obsmarkers) */
  opts: PullOptions = {},
): Promise<PullOutcome> {
  if (opts.incoming) return pullLocked(repoRoot, peer, ctx, opts);
  // exchange.pull: both locks before discovery, held to the last transaction, so a repository
  // that is locked, read-only or of a format Sluice cannot write is refused before any transfer
  const locks = await lockRepository(repoRoot, { signal: ctx.signal, log: (l, m) => ctx.log(l, m) });
  try {
    return await pullLocked(repoRoot, peer, ctx, { ...opts, locks });
  } finally {
    locks.release();
  }
}

interface PullOptions {
  incoming?: boolean;
  isDefaultPath?: boolean;
  obsmarkers?: boolean;
}

async function pullLocked(
  repoRoot: string,
  peer: WirePeer,
  ctx: JobContext,
  opts: PullOptions & { locks?: RepoLocks },
): Promise<PullOutcome> {
  const log = (level: 'debug' | 'info' | 'warn', m: string): void => ctx.log(level, m);
  const loc = await locateRepository(repoRoot);
  // the zstd decoder compiles while discovery waits for the server (the first manifest's base
  // is rebuilt from zstd chunks: loaded there, it stalled that rebuild 0.1-0.45 s, loaded VM)
  if (loc.requirements.has('revlog-compression-zstd')) void prepareZstd();
  const local = await ChangelogGraph.read(loc.storeDir);
  ctx.phase('discovery');
  const disco = await findCommonHeads(local, peer, { log });
  const base = { url: peer.url, changesets: 0, manifests: 0, files: 0, revisions: 0, bytes: 0 };
  if (!disco.anyIncoming) log('info', 'no changes found');
  const b2 = peer.caps.bundle2();
  if (!peer.caps.has('getbundle') || !b2.has('changegroup'))
    throw new SluiceError('PROTOCOL', 'the server speaks no bundle2 getbundle (hg 3.2 or later is needed)');
  const binaryPhases = (b2.get('phases') ?? []).includes('heads');
  // exchange._pullbundle2: markers only with evolution's exchange on; in the getbundle when the
  // server has a bundle2 format both speak (obsolete.commonversion), else through the `obsolete`
  // listkeys namespace (_pullobsolete; a server without pushkey has none: wirepeer.listkeys)
  const wantMarkers =
    !opts.incoming && (opts.obsmarkers ?? (await obsolescenceEnabled(repoRoot, 'exchange')));
  const obsmarkers = wantMarkers && (b2.get('obsmarkers') ?? []).some((v) => v === 'V0' || v === 'V1');
  // asked before the getbundle (hg asks after it, in the same transaction): a malformed dump fails
  // the pull before anything is written; the reply is bounded as every small reply is (64 MiB)
  let listkeyMarkers: MarkerBlock | undefined;
  if (wantMarkers && !obsmarkers && peer.caps.has('pushkey')) {
    log('debug', 'fetching remote obsolete markers');
    listkeyMarkers = markersFromListkeys(await peer.listkeys('obsolete'));
  }
  const args = {
    bundlecaps: clientBundleCaps({ obsmarkers }),
    ...(obsmarkers ? { obsmarkers: true } : {}),
    common: disco.common,
    heads: disco.remoteHeads,
    cg: disco.anyIncoming,
    ...(binaryPhases ? { phases: true } : {}),
    ...(b2.has('bookmarks') ? { bookmarks: true } : {}),
    listkeys: b2.has('listkeys') ? [...(binaryPhases ? [] : ['phases']), 'bookmarks'] : [],
  };

  if (opts.incoming) {
    if (!disco.anyIncoming)
      return { ...base, upToDate: true, incoming: 0, bookmarksChanged: 0, newHeads: [] };
    const n = await countIncoming(peer, { ...args, phases: false, bookmarks: false, listkeys: [] });
    log('info', `${n} incoming changesets`);
    return { ...base, upToDate: n === 0, incoming: n, bookmarksChanged: 0, newHeads: [] };
  }

  if (disco.anyIncoming) log('info', 'adding changesets');
  const reply = peer.getbundle(args, { readAhead: PULL_READ_AHEAD });
  // once the request is out (the event loop turned), while the server prepares the reply
  const manifestSeed = disco.anyIncoming
    ? new Promise<void>((r) => setImmediate(r)).then(() => tipManifest(loc))
    : undefined;
  const resp = await reply;
  let applied: ApplyToRepoResult;
  try {
    applied = await applyBundle2ToRepo(repoRoot, resp.body, ctx, {
      ...(manifestSeed ? { manifestSeed } : {}),
      ...(opts.locks ? { heldLocks: opts.locks } : {}),
      bookmarks: 'records',
      desc: `pull\n${redactUrl(peer.url)}`,
      // obsstore.readonly (createmarkers off) unless markers were asked for: an unasked
      // mandatory part aborts the pull as it aborts hg's
      obsmarkers: wantMarkers || (await obsolescenceEnabled(repoRoot, 'createmarkers')) ? 'merge' : 'ignore',
      ...(listkeyMarkers ? { listkeyMarkers } : {}),
      // an ssh reply has no end of its own on the pipe
      trailing: resp.mediaType === 'ssh' ? 'ignore' : 'refuse',
    });
  } catch (e) {
    resp.discard();
    throw e;
  }
  if (applied.changesets)
    log(
      'info',
      `added ${applied.changesets} changesets with ${applied.revisions} changes to ${applied.files} files${headsNote(applied.headsBefore, applied.headsAfter)}`,
    );

  // bookmarks.updatefromremote, in a second transaction of its own
  let bookmarksChanged = 0;
  if (applied.bookmarks.length) {
    const g = await ChangelogGraph.read(loc.storeDir);
    const local = await readBookmarks(loc);
    const localMarks = new Map(local);
    const changes = bookmarkChanges(
      localMarks,
      applied.bookmarks,
      g,
      opts.isDefaultPath ? 'default' : '',
      (m) => log('info', m),
      await bookmarkView(loc, g, local),
    );
    if (changes.size) {
      // part of the pull for `hg rollback`: the changegroup's undo files (bookmarks as before) stay
      await commitBookmarkChanges(repoRoot, changes, {
        signal: ctx.signal,
        log,
        undo: false,
        ...(opts.locks ? { heldLocks: opts.locks } : {}),
      });
      bookmarksChanged = changes.size;
    }
  }
  return {
    ...base,
    changesets: applied.changesets,
    manifests: applied.manifests,
    files: applied.files,
    revisions: applied.revisions,
    bytes: applied.bytes,
    upToDate: !disco.anyIncoming,
    bookmarksChanged,
    newHeads: applied.newHeads,
  };
}

/**
 * The pull job: SOURCE (default paths.default) into REPO, then `-u` (the checkout's update of a
 * clean working copy when changesets came in). Every error is a SluiceError.
 */
export async function pullFromUrl(
  req: PullRequest,
  ctx: JobContext,
  explicit: SessionOptions = {},
): Promise<PullOutcome & { repo: string }> {
  const repo = resolve(req.repo);
  const rawSource = await pullSource(req);
  if (!/^(https?|ssh):\/\//i.test(rawSource) && !isLocalSource(rawSource))
    throw new SluiceError(
      'USAGE',
      `sluice pull takes http(s), ssh and local sources (got '${withoutCredentials(rawSource)}')`,
    );
  const config = await readRepoConfig(repo);
  const isDefaultPath = !req.source || req.source === config.get('paths', 'default');
  const { session, url, opts } = openSession(rawSource, req, ctx, { ...explicit, repoConfig: config });
  try {
    const loc = await locateRepository(repo);
    // localrepo.ensurerequirementsrecognized runs as hg opens the repository: before connecting
    refuseUnwritable(loc);
    ctx.emit({
      type: 'start',
      kind: 'pull',
      format: 'changegroup',
      files: 0,
      bytes: 0,
      requirements: [...loc.requirements].sort(),
      source: url,
      dest: repo,
    });
    ctx.phase('connect');
    ctx.log('info', `pulling from ${redactUrl(url)}`);
    const peer = await openPeer(url, {
      ...opts,
      session,
      signal: ctx.signal,
      log: (level, m) => ctx.log(level, m),
      repo,
    });
    try {
      refuseRemoteRequirements(peer.caps);
      const out = await pullFromPeer(repo, peer, ctx, { incoming: req.incoming === true, isDefaultPath });
      if (req.update && !req.incoming && out.changesets > 0) await updateWorkingCopy(repo, {}, ctx);
      return { ...out, repo };
    } finally {
      await peer.close();
    }
  } catch (e) {
    throw toSluiceError(e);
  } finally {
    session.close();
  }
}
