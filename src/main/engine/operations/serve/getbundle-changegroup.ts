// The changegroup part of a getbundle reply (exchange._getbundlechangegrouppart,
// _computeoutgoing, changegroup.makestream): what the requested heads have beyond the client's
// common nodes, in the served view (secret changesets are neither sent nor accepted as heads),
// as the newest changegroup version both sides speak.

import {
  EMITTED_CG_VERSIONS,
  computeOutgoing,
  emitChangegroup,
  type ChangegroupVersion,
} from '../../changegroup/emit';
import type { ReplyPart } from './bundle2-reply';
import type { RepoSnapshot } from './repo-state';

export interface ChangegroupRequest {
  /** hex heads the client asked for; null: the served heads */
  heads: string[] | null;
  /** hex nodes the client has (unknown ones are ignored, as hg does) */
  common: string[];
  /** the client's bundle2 caps */
  b2caps: Map<string, string[]>;
}

export type ChangegroupPartResult =
  { part: ReplyPart | null; missing: number } | { abort: string; hint?: string };

/** null for a client that takes no version Sluice writes (cg1 only). */
export function chooseChangegroupVersion(b2caps: Map<string, string[]>): ChangegroupVersion | null {
  const offered = b2caps.get('changegroup') ?? [];
  const common = EMITTED_CG_VERSIONS.filter((v) => offered.includes(v));
  return common.length ? common[common.length - 1]! : null;
}

export function changegroupPart(
  snap: RepoSnapshot,
  req: ChangegroupRequest,
  signal?: AbortSignal,
  /** bundle2 frame size of the reply: the changegroup is written already framed */
  frame?: number,
): ChangegroupPartResult {
  const headRevs = req.heads ? req.heads.map((h) => snap.revOfHex(h)) : snap.headRevs();
  if (headRevs.some((r) => r === undefined)) return { abort: 'unknown revision requested' };
  const commonRevs = req.common.map((h) => snap.revOfHex(h)).filter((r): r is number => r !== undefined);
  const outgoing = computeOutgoing(snap.graph, commonRevs, headRevs as number[]);
  if (!outgoing.missing.length) return { part: null, missing: 0 };
  // changegroup.supportedoutgoingversions: a tree-manifest repository sends only cg3 with its
  // directory manifests, which emitChangegroup does not write (it would send the directories of
  // the root manifest as files); its stream clone is served
  if (snap.requirements.has('treemanifest'))
    return {
      abort: 'no common changegroup version',
      hint: 'sluice serve sends no changegroup of a tree-manifest repository (treemanifest): clone it with --stream',
    };
  const version = chooseChangegroupVersion(req.b2caps);
  if (!version)
    return {
      abort: 'no common changegroup version',
      hint: 'sluice serve sends changegroup versions 02 and 03 (hg 3.2 and later)',
    };
  // makestream's fastpathlinkrev: every head of the unfiltered repository is wanted, so each
  // file revision whose linkrev is sent is wanted too; otherwise read the manifests sent
  const allHeads = snap.graph.headRevs();
  const wanted = new Set(headRevs as number[]);
  const fastPathLinkrev = allHeads.length === wanted.size && allHeads.every((r) => wanted.has(r));
  const data = emitChangegroup(
    { storeDir: snap.storeDir, requirements: snap.requirements },
    outgoing,
    // sync reads: revlogs of a served repository are page-cache hot, and the thread pool's
    // per-read cost doubled the CPU of a pull clone (measured on the medium corpus)
    { version, fastPathLinkrev, io: 'sync', ...(signal ? { signal } : {}), ...(frame ? { frame } : {}) },
  );
  return {
    missing: outgoing.missing.length,
    part: {
      type: 'changegroup',
      mandatoryParams: [['version', version]],
      advisoryParams: [['nbchanges', String(outgoing.missing.length)]],
      data,
      ...(frame ? { framed: true } : {}),
    },
  };
}
