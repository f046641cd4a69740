// A library row's fetch: what hg incoming and hg outgoing would count, from one discovery
// (setdiscovery.findcommonheads) against the repository's source, with nothing written. The
// incoming count is the getbundle reply's nbchanges (countIncoming); the outgoing count is
// discovery.findcommonoutgoing's missing set over the same common heads, so no second discovery.
// Both run on the `visible` repoview, as hg's do: changesets hidden by obsolescence markers are
// neither offered in discovery nor counted as outgoing.
// A previous fetch's answer is reused when both sides' heads are unchanged, and an HTTP server's
// capabilities are remembered for a while (CAPS_TTL_MS) by this process: a fetch that finds
// nothing new is then one request, the batch of `heads` + `known`. A fetch that fails with
// remembered capabilities forgets them and runs once more from the hello.

import { join, resolve } from 'node:path';
import { toSluiceError } from '../../errors';
import { STATE_FILE_MAX, readStateFile } from '../../repo/state-file';
import type { JobContext } from '../../context/job-context';
import { locateRepository } from '../../store/requirements';
import {
  ChangelogGraph,
  computePhases,
  hexNode,
  parsePhaseRoots,
  PHASE_SECRET,
} from '../../repo/changelog-graph';
import { countOutgoing, findCommonHeads } from '../../client/discovery';
import { clientBundleCaps, refuseRemoteRequirements } from '../../protocol/capabilities';
import { redactUrl } from '../../client/http-client';
import { HttpPeer } from '../../client/http-peer';
import { openPeer, openSession, splitPeerUrl } from '../open-peer';
import { countIncoming, pullSource } from '../pull/pull';
import { hiddenRevs } from '../serve/repo-state';

export interface FetchCounts {
  /** changesets the source has that the repository lacks (hg incoming) */
  incoming: number;
  /** local changesets the source lacks, secret and hidden (obsolete) ones left out (hg outgoing) */
  outgoing: number;
  /** the source's heads (hex, sorted) and the local heads (hex, sorted) this answer is for */
  remoteHeads: string[];
  localHeads: string[];
  /** the source, credentials removed */
  source: string;
}

export interface FetchRequest {
  repo: string;
  /** default: paths.default */
  source?: string;
  /** the previous answer: reused when both sides' heads are the same again */
  previous?: Pick<FetchCounts, 'incoming' | 'remoteHeads' | 'localHeads'>;
  caFile?: string;
  connectTimeoutMs?: number;
  idleTimeoutMs?: number;
}

/** How long an HTTP server's capabilities are trusted without asking again. */
const CAPS_TTL_MS = 10 * 60_000;
/** URL as given (credentials removed) -> the server's base URL and capabilities; bounded */
const knownCaps = new Map<string, { base: string; raw: string; at: number }>();
const MAX_KNOWN_CAPS = 1000;

export async function fetchCounts(req: FetchRequest, ctx: JobContext): Promise<FetchCounts> {
  const repo = resolve(req.repo);
  const rawSource = await pullSource({ repo, ...(req.source !== undefined && { source: req.source }) });
  try {
    return await fetchFrom(repo, rawSource, req, ctx, true);
  } catch (e) {
    if (!knownCaps.has(splitPeerUrl(rawSource).url) || ctx.signal.aborted) throw toSluiceError(e);
    knownCaps.delete(splitPeerUrl(rawSource).url);
    return fetchFrom(repo, rawSource, req, ctx, false);
  }
}

async function fetchFrom(
  repo: string,
  rawSource: string,
  req: FetchRequest,
  ctx: JobContext,
  useKnownCaps: boolean,
): Promise<FetchCounts> {
  const { session, url, opts } = openSession(rawSource, req, ctx);
  try {
    const loc = await locateRepository(repo);
    const full = await ChangelogGraph.read(loc.storeDir);
    const hidden = await hiddenRevs(loc, full);
    const visible = hidden ? full.filtered(hidden) : null;
    const local = visible?.graph ?? full;
    const known = useKnownCaps ? knownCaps.get(url) : undefined;
    const peer =
      known && Date.now() - known.at < CAPS_TTL_MS
        ? HttpPeer.withCapabilities(known.base, known.raw, session)
        : await openPeer(url, { ...opts, session, signal: ctx.signal, repo });
    if (peer instanceof HttpPeer && !known) {
      if (knownCaps.size >= MAX_KNOWN_CAPS) knownCaps.delete(knownCaps.keys().next().value!);
      knownCaps.set(url, { base: peer.url, raw: peer.caps.raw, at: Date.now() });
    }
    try {
      refuseRemoteRequirements(peer.caps);
      const disco = await findCommonHeads(local, peer, { log: (l, m) => ctx.log(l, m) });
      const remoteHeads = [...disco.remoteHeads].sort();
      const localHeads = headsOf(local);
      const prev = req.previous;
      const same =
        prev !== undefined &&
        sameList(prev.remoteHeads, remoteHeads) &&
        sameList(prev.localHeads, localHeads);
      // the incoming set is a function of both sides' heads; the outgoing count is local work
      const incoming = same
        ? prev.incoming
        : disco.anyIncoming
          ? await countIncoming(peer, {
              bundlecaps: clientBundleCaps({ obsmarkers: false }),
              common: disco.common,
              heads: disco.remoteHeads,
              cg: true,
            })
          : 0;
      const phase = computePhases(full, parsePhaseRoots(await readText(join(loc.storeDir, 'phaseroots'))));
      const fullRev = (r: number): number => (visible ? visible.original[r]! : r);
      const outgoing = countOutgoing(local, disco.common, (r) => phase[fullRev(r)]! >= PHASE_SECRET);
      return { incoming, outgoing, remoteHeads, localHeads, source: redactUrl(url) };
    } finally {
      await peer.close();
    }
  } catch (e) {
    throw toSluiceError(e);
  } finally {
    session.close();
  }
}

function headsOf(g: ChangelogGraph): string[] {
  const hasChild = new Uint8Array(g.length);
  for (let r = 0; r < g.length; r++) for (const p of [g.p1[r]!, g.p2[r]!]) if (p >= 0) hasChild[p] = 1;
  const out: string[] = [];
  for (let r = 0; r < g.length; r++) if (!hasChild[r]) out.push(hexNode(g.nodes[r]!));
  return out.sort();
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

async function readText(path: string): Promise<string> {
  return (
    (await readStateFile(path, { max: STATE_FILE_MAX.lines, followLink: true }))?.toString('latin1') ?? ''
  );
}
