// `sluice clone URL DEST`: a stream clone over hg's HTTP wire protocol, as hg 6.3.2 performs it
// (exchange.pull → _maybeapplyclonebundle, streamclone.maybeperformlegacystreamclone,
// _pullbundle2 with stream=1), applied through applyStream (atomic temp dir, closer, progress).
//
//   v2: capabilities → batch(heads, known) → getbundle(stream=1, bookmarks, listkeys=bookmarks)
//       = STREAM2 + BOOKMARKS + LISTKEYS parts; phases arrive as the streamed phaseroots.
//   v1: capabilities → stream_out → (before the rename) batch(heads, known) →
//       getbundle(cg=0, phases=1, bookmarks=1, listkeys=bookmarks) = BOOKMARKS/LISTKEYS/PHASE-HEADS;
//       with --obsmarkers also obsmarkers=1 (OBSMARKERS), or `listkeys obsolete` after it.
//   clone bundle: capabilities → clonebundles → download (resumable) → apply the bundle → the
//       same follow-up getbundle as v1 for bookmarks and phases.
//
// Phases after v1 / clone bundles: hg's client only ever *advances* phases from PHASE-HEADS, so
// over v1 everything ends up public even from a non-publishing server. Sluice writes the
// server's view instead (draft roots computed from PHASE-HEADS), which is what a v2 clone of the
// same server gives; for a publishing server (the default) both are "all public".

import { createReadStream } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { CloneRequest, ServerInfo } from '../../../../shared/jobs';
import { applyStream, type ApplyStats } from '../../streamclone/consume';
import { checkDestination, createScratchBeside, createTempDestination } from '../../repo/destination';
import { applyBundleBytesToRepo, createEmptyRepository } from '../../changegroup';
import { checkoutAfterClone } from '../update/update';
import { SluiceError, toSluiceError } from '../../errors';
import { Bundle2Reader, type Bundle2Part } from '../../format/bundle2';
import { decodeBinaryBookmarks, decodePhaseHeads } from '../../format/bundle2-marks';
import { openStreamBundleFile } from '../../format/stream-bundle-file';
import { ByteSource } from '../../format/byte-source';
import { readStreamOut } from '../../format/stream-v1';
import { STREAM2_PARAMS, STREAM2_PART, readStream2Part } from '../../format/stream2';
import type { StreamReader } from '../../format/stream-reader';
import type { JobContext } from '../../context/job-context';
import {
  DEFAULT_NEW_REPO_REQUIREMENTS,
  locateRepository,
  streamRequirementsError,
  UNREADABLE_REQUIREMENTS,
} from '../../store/requirements';
import {
  addMarkersV1,
  markersFromListkeys,
  obsolescenceEnabled,
  readMarkersAsV1,
  type MarkerBlock,
} from '../../repo/obsstore';
import { Capabilities, clientBundleCaps, refuseRemoteRequirements } from '../../protocol/capabilities';
import { ChangelogGraph, PHASE_DRAFT, PHASE_PUBLIC, binNode, hexNode } from '../../repo/changelog-graph';
import { chooseCloneBundle, parseCloneBundlesManifest } from './clone-bundles';
import { fetchCloneBundle, type BundleDownloadOptions, type FetchedBundle } from './bundle-download';
import type { HttpSession } from '../../client/http-client';
import { isLocalSource, localSourcePath } from '../local-peer';
import { openPeer, openSession, sessionFor, splitPeerUrl, type SessionOptions } from '../open-peer';
import type { WirePeer } from '../../client/peer';
import { pullFromPeer } from '../pull/pull';
import { readBookmarks } from '../serve/repo-state';
import { NULL_HEX, decodeKeys } from '../../protocol/wire-encoding';

export interface CloneOptions extends SessionOptions, BundleDownloadOptions {
  /** tests: passed to applyStream */
  closeImpl?: Parameters<typeof applyStream>[2]['closeImpl'];
}

export interface CloneResult extends ApplyStats {
  /** how the data came: the server's stream (v1/v2) or a clone bundle */
  via: 'stream-v1' | 'stream-v2' | 'clone-bundle' | 'pull';
  /** URL after redirects */
  url: string;
  bookmarks: number;
  /** draft roots written (0: everything public) */
  draftRoots: number;
  /** HTTP requests made (ssh: commands sent) */
  requests: number;
}

const PAYLOAD_LIMIT = 64 << 20;

async function readPayload(part: Bundle2Part): Promise<Buffer> {
  const parts: Buffer[] = [];
  let n = 0;
  for (;;) {
    const piece = await part.payload.readSome(1 << 20);
    if (!piece) break;
    n += piece.length;
    if (n > PAYLOAD_LIMIT)
      throw new SluiceError('LIMIT', `${part.type} part larger than ${PAYLOAD_LIMIT} bytes`);
    parts.push(Buffer.from(piece));
  }
  return Buffer.concat(parts, n);
}

/** What the follow-up parts carried. */
interface RemoteMarks {
  /** from the binary BOOKMARKS part (preferred) */
  bookmarks?: [string, string][];
  /** from LISTKEYS namespace=bookmarks */
  listkeyBookmarks?: [string, string][];
  /** PHASE-HEADS: [phase, hex node] */
  phaseHeads?: [number, string][];
  /** LISTKEYS namespace=phases (old servers) */
  listkeyPhases?: Map<string, string>;
  /** obsolescence markers (asked for: an OBSMARKERS part, or listkeys `obsolete`) */
  obsmarkers?: MarkerBlock;
}

export { decodeBinaryBookmarks, decodePhaseHeads };

const FOLLOW_UP_PARTS = { bookmarks: [], listkeys: ['namespace'], 'phase-heads': [] } as const;

/** Reads the parts after the stream (or a whole follow-up bundle) up to the end marker. */
async function readMarkParts(bundle: Bundle2Reader): Promise<RemoteMarks> {
  const marks: RemoteMarks = {};
  for (;;) {
    const part = await bundle.nextPart();
    if (!part) return marks;
    const data = await readPayload(part);
    if (part.type === 'bookmarks') marks.bookmarks = decodeBinaryBookmarks(data);
    else if (part.type === 'obsmarkers') marks.obsmarkers = readMarkersAsV1(data);
    else if (part.type === 'phase-heads') marks.phaseHeads = decodePhaseHeads(data);
    else if (part.type === 'listkeys') {
      const ns = part.params.get('namespace');
      const keys = decodeKeys(data.toString('latin1'));
      if (ns === 'bookmarks') marks.listkeyBookmarks = [...keys].map(([k, v]) => [k, v] as [string, string]);
      else if (ns === 'phases') marks.listkeyPhases = keys;
    } else if (part.type === STREAM2_PART) {
      throw new SluiceError('PROTOCOL', 'unexpected second stream2 part');
    }
  }
}

/** Writes bookmarks and phaseroots into the new repository (tmp root) as hg's pull would. */
async function writeMarks(
  root: string,
  requirements: readonly string[],
  marks: RemoteMarks,
  publishingFallback: boolean,
  log: (level: 'debug' | 'info' | 'warn', m: string) => void,
): Promise<{ bookmarks: number; draftRoots: number }> {
  const store = join(root, '.hg', 'store');
  const g = await ChangelogGraph.read(store);

  // bookmarks: the binary part when present, listkeys otherwise (exchange._pullbundle2)
  const remote = marks.bookmarks ?? marks.listkeyBookmarks ?? [];
  const kept = new Map<string, string>();
  for (const [name, hex] of remote) {
    if (!/^[0-9a-f]{40}$/.test(hex))
      throw new SluiceError('MALFORMED', `bookmark ${JSON.stringify(name)} has an invalid node`);
    if (!name || /[\n\r\0]/.test(name) || name.trim() !== name) {
      log('warn', `ignoring remote bookmark with an invalid name ${JSON.stringify(name)}`);
      continue;
    }
    if (g.rev(binNode(hex)) === undefined) {
      log('warn', `remote bookmark ${name} points to locally missing ${hex.slice(0, 12)}`);
      continue;
    }
    kept.set(name, hex);
  }
  if (kept.size) {
    // bmstore._write: sorted by name, `<hex> <name>\n`
    const text = [...kept]
      .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
      .map(([n, h]) => `${h} ${n}\n`)
      .join('');
    const path = requirements.includes('bookmarksinstore')
      ? join(store, 'bookmarks')
      : join(root, '.hg', 'bookmarks');
    await writeFile(path, Buffer.from(text, 'latin1'));
  }

  // phases: only when the stream did not carry them (PHASE-HEADS or listkeys phases arrived)
  let draftRoots = 0;
  let draftRevs: number[] | null = null;
  if (marks.phaseHeads) {
    const pub: number[] = [];
    const draft: number[] = [];
    for (const [phase, hex] of marks.phaseHeads) {
      const r = g.rev(binNode(hex));
      if (r === undefined) continue;
      if (phase === PHASE_PUBLIC) pub.push(r);
      else if (phase === PHASE_DRAFT) draft.push(r);
      else throw new SluiceError('PROTOCOL', `the server sent phase ${phase} in phase-heads`);
    }
    if (draft.length) {
      const isPublic = g.ancestors(pub);
      const isDraft = g.ancestors(draft);
      draftRevs = [];
      for (let r = 0; r < g.length; r++) if (isDraft[r] && !isPublic[r]) draftRevs.push(r);
    }
  } else if (marks.listkeyPhases && !marks.listkeyPhases.has('publishing') && !publishingFallback) {
    const roots: number[] = [];
    for (const [hex, v] of marks.listkeyPhases) {
      const r = /^[0-9a-f]{40}$/.test(hex) && v === '1' ? g.rev(binNode(hex)) : undefined;
      if (r !== undefined) roots.push(r);
    }
    if (roots.length) {
      const d = g.descendants(roots);
      draftRevs = [];
      for (let r = 0; r < g.length; r++) if (d[r]) draftRevs.push(r);
    }
  }
  if (draftRevs && draftRevs.length) {
    const isDraft = new Uint8Array(g.length);
    for (const r of draftRevs) isDraft[r] = 1;
    const roots: string[] = [];
    for (const r of draftRevs) {
      const p1 = g.p1[r]!;
      const p2 = g.p2[r]!;
      if (!(p1 >= 0 && isDraft[p1]) && !(p2 >= 0 && isDraft[p2])) roots.push(g.nodes[r]!);
    }
    roots.sort();
    draftRoots = roots.length;
    await writeFile(join(store, 'phaseroots'), roots.map((n) => `${PHASE_DRAFT} ${hexNode(n)}\n`).join(''));
  }
  return { bookmarks: kept.size, draftRoots };
}

interface StreamPlan {
  version: 'v1' | 'v2';
  requirements: string[];
}

/** streamclone.canperformstreamclone + the v1/v2 choice of _pullbundle2 / maybeperformlegacystreamclone. */
export function planStream(caps: Capabilities, want: 'auto' | 'v1' | 'v2'): StreamPlan {
  const requirements = caps.streamRequirements();
  if (requirements === null) {
    throw new SluiceError(
      'NO_STREAM',
      'the server allows no stream clone (it advertises neither stream nor streamreqs: server.uncompressed is off or the repository has secret changesets)',
    );
  }
  const refused = streamRequirementsError(requirements);
  if (refused) throw refused;
  const v2 = caps.has('getbundle') && (caps.bundle2().get('stream') ?? []).includes('v2');
  if (want === 'v2' && !v2)
    throw new SluiceError('NO_STREAM', 'the server does not offer stream clone v2 (bundle2 stream=v2)');
  return { version: want === 'v1' || !v2 ? 'v1' : 'v2', requirements };
}

/** The follow-up pull of v1 and clone bundles: bookmarks and phases for what is now local. */
async function fetchMarks(
  peer: WirePeer,
  localHeads: string[],
  log: (l: 'debug' | 'info' | 'warn', m: string) => void,
  /** the server's obsolescence markers too (clone --obsmarkers) */
  obsmarkers = false,
): Promise<RemoteMarks> {
  const { heads, known } = await peer.headsAndKnown(localHeads);
  const local = new Set(localHeads);
  if (heads.some((h) => !local.has(h)))
    log('debug', 'the server got new changesets since the stream; they are not part of this clone');
  if (known.some((k) => !k)) log('warn', 'the server no longer has some of the streamed heads');
  const b2 = peer.caps.bundle2();
  // exchange._pullbundle2's obsmarkers argument when the server has a format both speak, else
  // _pullobsolete's listkeys after the bundle (wirepeer.listkeys: only with pushkey)
  const b2Markers =
    obsmarkers &&
    peer.caps.has('bundle2') &&
    (b2.get('obsmarkers') ?? []).some((v) => v === 'V0' || v === 'V1');
  const listkeyMarkers = async (marks: RemoteMarks): Promise<RemoteMarks> => {
    if (obsmarkers && !b2Markers && peer.caps.has('pushkey')) {
      log('debug', 'fetching remote obsolete markers');
      const block = markersFromListkeys(await peer.listkeys('obsolete'));
      if (block) marks.obsmarkers = block;
    }
    return marks;
  };
  if (!peer.caps.has('bundle2') || !peer.caps.has('getbundle')) {
    // pre-bundle2 servers: listkeys (exchange._pullbookmarkbundle1, _pullphase)
    return listkeyMarkers({
      listkeyBookmarks: [...(await peer.listkeys('bookmarks'))],
      listkeyPhases: await peer.listkeys('phases'),
    });
  }
  const resp = await peer.getbundle({
    bundlecaps: clientBundleCaps({ obsmarkers: b2Markers }),
    ...(b2Markers ? { obsmarkers: true } : {}),
    cg: false,
    common: localHeads.length ? localHeads : [NULL_HEX],
    heads: localHeads.length ? localHeads : [NULL_HEX],
    ...((b2.get('phases') ?? []).includes('heads') ? { phases: true } : {}),
    ...(b2.has('bookmarks') ? { bookmarks: true } : {}),
    listkeys: b2.has('listkeys')
      ? b2.get('phases')?.includes('heads')
        ? ['bookmarks']
        : ['phases', 'bookmarks']
      : [],
  });
  const bundle = await Bundle2Reader.open(new ByteSource(resp.body), {
    knownParts: b2Markers ? { ...FOLLOW_UP_PARTS, obsmarkers: [] } : FOLLOW_UP_PARTS,
  });
  try {
    const marks = await readMarkParts(bundle);
    if (!b2.get('phases')?.includes('heads') && !marks.listkeyPhases)
      marks.listkeyPhases = await peer.listkeys('phases');
    return await listkeyMarkers(marks);
  } finally {
    await bundle.close();
  }
}

function localHeadHexes(g: ChangelogGraph): string[] {
  return g.headRevs().map((r) => hexNode(g.nodes[r]!));
}

/** A clone bundle older than the server (applyStream wraps what beforeCommit throws, so a tagged SluiceError). */
function staleBundle(message: string): SluiceError {
  return new SluiceError('PROTOCOL', message, { staleCloneBundle: true });
}

/**
 * Clones `req.url` into `req.dest` with a stream clone. Nothing is left at DEST on failure
 * (applyStream's atomic temporary directory); every error is a SluiceError.
 */
export async function cloneFromUrl(
  req: CloneRequest,
  ctx: JobContext,
  explicit: CloneOptions = {},
): Promise<CloneResult> {
  const dest = resolve(req.dest);
  await checkDestination(dest);
  // a local source is recorded as hg clone records it: an absolute path
  const rawUrl = isLocalSource(req.url) ? localSourcePath(req.url, process.cwd()) : req.url;
  const { session, url, opts } = openSession(rawUrl, req, ctx, explicit);
  const log = (level: 'debug' | 'info' | 'warn', m: string): void => ctx.log(level, m);
  let opened: WirePeer | null = null;
  const leftovers: FetchedBundle[] = [];
  let failure: unknown;
  try {
    ctx.phase('connect');
    const peer = await openPeer(url, { ...opts, session, signal: ctx.signal, log });
    opened = peer;
    log('debug', `capabilities: ${peer.caps.raw}`);
    refuseRemoteRequirements(peer.caps);
    if (req.update === true && req.updateRev !== undefined)
      await refuseUnknownRevision(peer, req.updateRev, log);
    // hg clone --pull, or a server that allows no stream clone: clone with the pull protocol
    if (req.pull || peer.caps.streamRequirements() === null) {
      if (!req.pull) log('info', 'the server offers no stream clone: cloning with the pull protocol');
      return await pullClone(req, peer, session, dest, ctx, opts);
    }
    const plan = planStream(peer.caps, req.stream ?? 'auto');
    // the checkout would read the streamed store (LocalRepo.open): refuse before the transfer
    const unreadable = plan.requirements.filter((r) => UNREADABLE_REQUIREMENTS.includes(r));
    if (req.update === true && unreadable.length)
      throw new SluiceError(
        'UNSUPPORTED_REQUIREMENTS',
        `sluice cannot check out a repository that requires ${unreadable.join(', ')}: clone it without a working copy (-U)`,
        { unsupported: unreadable },
      );
    const source = url; // credentials already split off; never written to hgrc
    const applyOpts = {
      kind: 'clone' as const,
      source,
      ...(req.closer ? { closer: req.closer } : {}),
      ...(opts.closeImpl ? { closeImpl: opts.closeImpl } : {}),
      ...(req.update === true ? { checkout: req.updateRev !== undefined ? { rev: req.updateRev } : {} } : {}),
    };

    if (req.cloneBundles !== false && peer.caps.has('clonebundles')) {
      const viaBundle = await tryCloneBundle(peer, session, req, dest, plan, applyOpts, ctx, opts, leftovers);
      if (viaBundle) return { ...viaBundle, requests: peer.requests };
    }

    if (plan.version === 'v2') {
      log('info', 'streaming all changes');
      const { heads } = await peer.headsAndKnown([]);
      // Markers travel inside the stream (the obsstore file); the `obsmarkers` getbundle argument,
      // which would add a mandatory part with the same markers again, is never sent.
      const resp = await peer.getbundle({
        bundlecaps: clientBundleCaps({ obsmarkers: req.obsmarkers === true }),
        cg: false,
        common: [NULL_HEX],
        heads: heads.length ? heads : [NULL_HEX],
        listkeys: ['bookmarks'],
        bookmarks: true,
        stream: true,
        ...(peer.caps.has('clonebundles') ? { cbattempted: req.cloneBundles !== false } : {}),
      });
      const bundle = await Bundle2Reader.open(new ByteSource(resp.body), {
        knownParts: { [STREAM2_PART]: STREAM2_PARAMS, ...FOLLOW_UP_PARTS },
      });
      let result: { bookmarks: number; draftRoots: number } = { bookmarks: 0, draftRoots: 0 };
      try {
        const first = await nextPartOrNoStream(bundle);
        if (!first || first.type !== STREAM2_PART) {
          throw new SluiceError(
            'PROTOCOL',
            `the server answered a stream request without a stream2 part${first ? ` (got ${first.type})` : ''}`,
          );
        }
        const reader = readStream2Part(first, bundle.compression);
        const stats = await applyStream(
          reader,
          dest,
          {
            ...applyOpts,
            beforeCommit: async (root) => {
              const marks = await readMarkParts(bundle);
              result = await writeMarks(root, reader.header.requirements, marks, true, log);
            },
          },
          ctx,
        );
        return { ...stats, via: 'stream-v2', url: peer.url, ...result, requests: peer.requests };
      } finally {
        await bundle.close();
      }
    }

    // v1: stream_out, then the follow-up getbundle for phases and bookmarks
    log('info', 'streaming all changes (legacy stream_out)');
    const resp = await peer.streamOut();
    const src = new ByteSource(resp.body);
    let reader: StreamReader;
    try {
      reader = await readStreamOut(src);
    } catch (e) {
      await src.close();
      throw e;
    }
    let result = { bookmarks: 0, draftRoots: 0 };
    try {
      const stats = await applyStream(
        reader,
        dest,
        {
          ...applyOpts,
          requirements: plan.requirements,
          beforeCommit: async (root) => {
            const g = await ChangelogGraph.read(join(root, '.hg', 'store'));
            const marks = await fetchMarks(peer, localHeadHexes(g), log, req.obsmarkers === true);
            result = await writeMarks(root, [...plan.requirements], marks, false, log);
            // stream v1 carries no obsstore: hg's pull after it brings the markers
            if (marks.obsmarkers) addMarkersV1(join(root, '.hg', 'store'), null, marks.obsmarkers);
          },
        },
        ctx,
      );
      return { ...stats, via: 'stream-v1', url: peer.url, ...result, requests: peer.requests };
    } finally {
      await reader.close();
    }
  } catch (e) {
    failure = e;
    throw toSluiceError(e);
  } finally {
    for (const l of leftovers) await l.settle(failure);
    await opened?.close();
    session.close();
  }
}

/**
 * `-u REV` asked of the server before anything is transferred (as hg clone does for `-r` with
 * srcpeer.lookup): a name the server does not know cannot name a changeset of the clone, so the
 * clone fails at once, with hg's message and nothing at DEST. Only "unknown" is final: a hidden
 * changeset, for one, may still be checked out of a clone that takes no markers.
 */
async function refuseUnknownRevision(
  peer: WirePeer,
  rev: string,
  log: (level: 'debug', m: string) => void,
): Promise<void> {
  if (!peer.caps.has('lookup')) return;
  const answer = await peer.lookup(rev);
  if ('node' in answer) {
    log('debug', `the server resolves ${rev} to ${answer.node}`);
    return;
  }
  if (answer.error.startsWith('unknown revision'))
    throw new SluiceError('USAGE', `unknown revision '${rev}'`, { symbol: rev, checkedOn: 'server' });
  log('debug', `the server's lookup of ${rev}: ${answer.error}`);
}

/**
 * hg clone --pull: a new repository (hg's default requirements) in a temporary beside DEST, a
 * changegroup clone bundle applied first when the server lists one, then a pull of everything
 * (or of what the bundle lacks); renamed into place at the end.
 */
async function pullClone(
  req: CloneRequest,
  peer: WirePeer,
  session: HttpSession,
  dest: string,
  ctx: JobContext,
  opts: CloneOptions,
): Promise<CloneResult> {
  const log = (level: 'debug' | 'info' | 'warn', m: string): void => ctx.log(level, m);
  const tmp = await createTempDestination(dest);
  const leftovers: FetchedBundle[] = [];
  let failure: unknown;
  try {
    ctx.emit({
      type: 'start',
      kind: 'clone',
      format: 'changegroup',
      files: 0,
      bytes: 0,
      requirements: [...DEFAULT_NEW_REPO_REQUIREMENTS],
      source: peer.url,
      dest,
    });
    await createEmptyRepository(tmp.root, { defaultPath: peer.url });
    let via: CloneResult['via'] = 'pull';
    if (req.cloneBundles !== false && peer.caps.has('clonebundles')) {
      const choice = chooseCloneBundle(
        parseCloneBundlesManifest(await peer.clonebundles()),
        'changegroup',
        (m) => log('debug', m),
      );
      if (choice) {
        const scratch = await createScratchBeside(dest);
        try {
          const scratchFile = join(scratch.dir, 'clone-bundle.hg');
          const fetched = await fetchCloneBundle(session, choice, scratchFile, dest, ctx, opts);
          const file = fetched.file;
          if (!file) leftovers.push(fetched);
          else {
            let applyFailure: unknown;
            try {
              // a mandatory OBSMARKERS part needs a repository that may hold markers, as for hg
              const obsmarkers =
                req.obsmarkers || (await obsolescenceEnabled(tmp.root, 'createmarkers')) ? 'merge' : 'ignore';
              await applyBundleBytesToRepo(tmp.root, createReadStream(file), ctx, {
                bookmarks: 'records',
                obsmarkers,
              });
            } catch (e) {
              applyFailure = e;
              throw e;
            } finally {
              await fetched.settle(applyFailure);
            }
            log('info', 'finished applying clone bundle');
            via = 'clone-bundle';
          }
        } finally {
          await scratch.remove();
        }
      }
    }
    log('info', via === 'clone-bundle' ? 'searching for changes' : 'requesting all changes');
    const pulled = await pullFromPeer(tmp.root, peer, ctx, {
      isDefaultPath: true,
      ...(req.obsmarkers ? { obsmarkers: true } : {}),
    });
    // hg clone without -U: the working copy, before the rename (as applyStream does it)
    if (req.update === true)
      await checkoutAfterClone(
        tmp.root,
        {
          ...(req.updateRev !== undefined ? { rev: req.updateRev } : {}),
          ...(req.closer ? { closer: req.closer } : {}),
        },
        ctx,
      );
    ctx.phase('finalize');
    const loc = await locateRepository(tmp.root);
    const draftRoots = (await readFile(join(loc.storeDir, 'phaseroots'), 'latin1').catch(() => ''))
      .split('\n')
      .filter((l) => l.startsWith('1 ')).length;
    const bookmarks = (await readBookmarks(loc)).length;
    await tmp.commit();
    return {
      format: 'changegroup',
      dest,
      files: pulled.files,
      bytes: pulled.bytes,
      requirements: [...loc.requirements].sort(),
      close: { background: false, threads: 0, backgroundClosed: 0, syncClosed: 0, writerWaitMs: 0 },
      via,
      url: peer.url,
      bookmarks,
      draftRoots,
      requests: peer.requests,
    };
  } catch (e) {
    failure = e;
    ctx.phase('cleanup');
    await tmp.discard();
    throw e;
  } finally {
    for (const l of leftovers) await l.settle(failure);
  }
}

/** The first part of a stream reply; the abort hg sends for a refused stream becomes NO_STREAM. */
async function nextPartOrNoStream(bundle: Bundle2Reader): Promise<Bundle2Part | null> {
  try {
    return await bundle.nextPart();
  } catch (e) {
    if (
      e instanceof SluiceError &&
      e.code === 'REMOTE_ABORT' &&
      /stream data requested but server does not allow/.test(e.message)
    ) {
      throw new SluiceError('NO_STREAM', `the server refused the stream clone: ${e.message}`, e.details);
    }
    throw e;
  }
}

async function tryCloneBundle(
  peer: WirePeer,
  session: HttpSession,
  req: CloneRequest,
  dest: string,
  plan: StreamPlan,
  applyOpts: { kind: 'clone'; source: string },
  ctx: JobContext,
  opts: CloneOptions,
  /** a bundle that could not be had, settled by the caller once the server clone ended */
  leftovers: FetchedBundle[],
): Promise<Omit<CloneResult, 'requests'> | null> {
  const log = (level: 'debug' | 'info' | 'warn', m: string): void => ctx.log(level, m);
  const entries = parseCloneBundlesManifest(await peer.clonebundles());
  if (!entries.length) {
    log('debug', 'no clone bundles available on remote; falling back to regular clone');
    return null;
  }
  const choice = chooseCloneBundle(entries, req.stream ?? 'auto', (m) => log('debug', m));
  if (!choice) {
    log('warn', 'no compatible clone bundles available on server; falling back to regular clone');
    return null;
  }
  // in an owned temporary beside DEST: a download cut by kill -9 is swept by the next run
  const scratch = await createScratchBeside(dest);
  let fetched: FetchedBundle | null = null;
  let failure: unknown;
  try {
    fetched = await fetchCloneBundle(session, choice, join(scratch.dir, 'clone-bundle.hg'), dest, ctx, opts);
    if (!fetched.file) {
      leftovers.push(fetched);
      fetched = null;
      return null;
    }
    const reader = await openStreamBundleFile(fetched.file);
    let result = { bookmarks: 0, draftRoots: 0 };
    try {
      const stats = await applyStream(
        reader,
        dest,
        {
          ...applyOpts,
          beforeCommit: async (root) => {
            const g = await ChangelogGraph.read(join(root, '.hg', 'store'));
            const localHeads = localHeadHexes(g);
            const remoteHeads = await peer.heads();
            const missing = remoteHeads.filter((h) => g.rev(binNode(h)) === undefined);
            if (missing.length)
              throw staleBundle(`the clone bundle lacks ${missing.length} of the server's heads`);
            const marks = await fetchMarks(peer, localHeads, log);
            result = await writeMarks(
              root,
              reader.header.requirements.length ? reader.header.requirements : plan.requirements,
              marks,
              false,
              log,
            );
          },
        },
        ctx,
      );
      log('info', 'finished applying clone bundle');
      return { ...stats, via: 'clone-bundle', url: peer.url, ...result };
    } catch (e) {
      if (e instanceof SluiceError && e.details?.staleCloneBundle === true) {
        // hg would pull the missing changesets; Sluice only streams, so it streams from the server
        log('warn', `${e.message}; cloning from the server's stream instead`);
        return null;
      }
      throw e;
    } finally {
      await reader.close();
    }
  } catch (e) {
    failure = e;
    throw e;
  } finally {
    await fetched?.settle(failure);
    await scratch.remove();
  }
}

/** "Test connection": what the server offers, without cloning. */
export async function probeServer(
  rawUrl: string,
  opts: CloneOptions & { caFile?: string; signal?: AbortSignal; heads?: boolean } = {},
): Promise<ServerInfo> {
  const { url, credentials } = splitPeerUrl(rawUrl);
  const session = sessionFor({ ...(opts.caFile ? { caFile: opts.caFile } : {}) }, null, opts.signal, opts);
  if (credentials) session.setUrlCredentials(url, credentials);
  let peer: WirePeer | null = null;
  try {
    try {
      peer = await openPeer(url, { ...opts, session, ...(opts.signal ? { signal: opts.signal } : {}) });
    } catch (e) {
      if (e instanceof SluiceError && e.code === 'AUTH') {
        return {
          url,
          streamV1: false,
          streamV2: false,
          streamRequirements: [],
          compression: [],
          cloneBundles: false,
          authRequired: true,
        };
      }
      throw e;
    }
    const caps = peer.caps;
    const reqs = caps.streamRequirements();
    const info: ServerInfo = {
      url: peer.url,
      streamV1: reqs !== null,
      streamV2: reqs !== null && caps.has('getbundle') && (caps.bundle2().get('stream') ?? []).includes('v2'),
      streamRequirements: reqs ?? [],
      compression: caps.compression(),
      cloneBundles: caps.has('clonebundles'),
    };
    if (opts.heads) info.heads = (await peer.heads()).length;
    info.authRequired = session.authChallenged;
    return info;
  } catch (e) {
    throw toSluiceError(e);
  } finally {
    await peer?.close();
    session.close();
  }
}
