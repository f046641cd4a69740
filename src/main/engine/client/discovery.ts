// Finding what a remote has that this repository lacks, as hg 6.3.2 does it (setdiscovery.py
// `findcommonheads`, `partialdiscovery`, `_updatesample`): one batch of `heads` + `known` for all
// local heads, then, when that does not settle it, rounds of `known` on samples of the undecided
// changesets (their heads and roots, then ancestors and descendants at power-of-two distances,
// topped up at random) until every local changeset is known to be common or missing.

import { SluiceError } from '../errors';
import type { ParentGraph } from '../changegroup/emit';
import { encodeNodeList } from '../protocol/wire-encoding';

/** What discovery needs from a peer (any transport). */
export interface DiscoveryPeer {
  headsAndKnown(nodes: string[]): Promise<{ heads: string[]; known: boolean[] }>;
  call(cmd: string, args: Record<string, string>): Promise<string>;
}

/** The local changelog: parents plus node ids. */
export interface LocalGraph extends ParentGraph {
  /** node (20-byte latin1 string) of each rev */
  readonly nodes: readonly string[];
  rev(node: string): number | undefined;
}

export interface DiscoveryResult {
  /** heads of the common set, hex (the null node when nothing is common) */
  common: string[];
  /** the remote has changesets this repository lacks */
  anyIncoming: boolean;
  /** the remote's heads, hex */
  remoteHeads: string[];
  /** `known` round trips after the first batch */
  queries: number;
}

export interface DiscoveryOptions {
  /** devel.discovery.sample-size (default 200) */
  sampleSize?: number;
  /** random source for the top-up (default Math.random) */
  random?: () => number;
  log?: (level: 'debug' | 'info', message: string) => void;
}

const NULL_HEX = '0'.repeat(40);
const UNDECIDED = 0;
const COMMON = 1;
const MISSING = 2;
/** not an ancestor of a local head: outside discovery */
const IRRELEVANT = 3;

function hex(node: string): string {
  return Buffer.from(node, 'latin1').toString('hex');
}

function decodeKnown(reply: string, count: number): boolean[] {
  if (reply.length !== count || /[^01]/.test(reply))
    throw new SluiceError('PROTOCOL', `unexpected response to known: ${JSON.stringify(reply.slice(0, 80))}`);
  return [...reply].map((c) => c === '1');
}

/** setdiscovery.partialdiscovery over typed arrays: each local rev is common, missing or undecided. */
export class PartialDiscovery {
  readonly state: Uint8Array;
  private children: Int32Array[] | null = null;

  constructor(
    private readonly g: ParentGraph,
    heads: readonly number[],
  ) {
    this.state = new Uint8Array(g.length).fill(IRRELEVANT);
    const stack = [...heads];
    for (const h of heads) this.state[h] = UNDECIDED;
    while (stack.length) {
      const r = stack.pop()!;
      for (const p of [g.p1[r]!, g.p2[r]!])
        if (p >= 0 && this.state[p] === IRRELEVANT) {
          this.state[p] = UNDECIDED;
          stack.push(p);
        }
    }
  }

  /** addcommons: revs and their ancestors are common */
  addCommons(revs: Iterable<number>): void {
    const stack: number[] = [];
    for (const r of revs)
      if (this.state[r] !== COMMON) {
        this.state[r] = COMMON;
        stack.push(r);
      }
    while (stack.length) {
      const r = stack.pop()!;
      for (const p of [this.g.p1[r]!, this.g.p2[r]!])
        if (p >= 0 && this.state[p] !== COMMON) {
          this.state[p] = COMMON;
          stack.push(p);
        }
    }
  }

  /** addmissings: revs and their (undecided) descendants are missing on the remote */
  addMissings(revs: Iterable<number>): void {
    let min = Infinity;
    for (const r of revs) {
      if (this.state[r] === UNDECIDED) this.state[r] = MISSING;
      min = Math.min(min, r);
    }
    for (let r = min + 1; r < this.g.length; r++) {
      if (this.state[r] !== UNDECIDED) continue;
      const p1 = this.g.p1[r]!;
      const p2 = this.g.p2[r]!;
      if ((p1 >= 0 && this.state[p1] === MISSING) || (p2 >= 0 && this.state[p2] === MISSING))
        this.state[r] = MISSING;
    }
  }

  addInfo(sample: readonly number[], known: readonly boolean[]): void {
    this.addCommons(sample.filter((_, i) => known[i]));
    this.addMissings(sample.filter((_, i) => !known[i]));
  }

  undecided(): number[] {
    const out: number[] = [];
    for (let r = 0; r < this.state.length; r++) if (this.state[r] === UNDECIDED) out.push(r);
    return out;
  }

  /** heads of the common set (basesheads), ascending */
  commonHeads(): number[] {
    const hasChild = new Uint8Array(this.g.length);
    for (let r = 0; r < this.g.length; r++) {
      if (this.state[r] !== COMMON) continue;
      if (this.g.p1[r]! >= 0) hasChild[this.g.p1[r]!] = 1;
      if (this.g.p2[r]! >= 0) hasChild[this.g.p2[r]!] = 1;
    }
    const out: number[] = [];
    for (let r = 0; r < this.g.length; r++) if (this.state[r] === COMMON && !hasChild[r]) out.push(r);
    return out;
  }

  /** takefullsample: heads and roots of the undecided set, spread both ways, topped up at random */
  takeFullSample(size: number, random: () => number): number[] {
    const revs = this.undecided();
    if (revs.length <= size) return revs;
    const inRevs = (r: number): boolean => r >= 0 && this.state[r] === UNDECIDED;
    const parents = (r: number): number[] => [this.g.p1[r]!, this.g.p2[r]!];
    const children = (r: number): number[] => Array.from(this.childrenOf()[r] ?? []);
    const hasUndecidedChild = new Uint8Array(this.g.length);
    for (const r of revs) for (const p of parents(r)) if (inRevs(p)) hasUndecidedChild[p] = 1;
    const heads = revs.filter((r) => !hasUndecidedChild[r]);
    const roots = revs.filter((r) => !parents(r).some(inRevs));
    const sample = new Set<number>(heads);
    updateSample(inRevs, heads, sample, parents);
    updateSample(inRevs, roots, sample, children);
    let out = [...sample];
    if (out.length > size) out = randomSubset(out, size, random);
    else if (out.length < size) {
      const rest = revs.filter((r) => !sample.has(r));
      out.push(...randomSubset(rest, size - out.length, random));
    }
    return out;
  }

  private childrenOf(): Int32Array[] {
    if (this.children) return this.children;
    const lists: number[][] = Array.from({ length: this.g.length }, () => []);
    for (let r = 0; r < this.g.length; r++)
      for (const p of [this.g.p1[r]!, this.g.p2[r]!]) if (p >= 0) lists[p]!.push(r);
    this.children = lists.map((l) => Int32Array.from(l));
    return this.children;
  }
}

/** setdiscovery._updatesample: walk from `from`, sampling at distances 1, 2, 4, 8… */
function updateSample(
  inRevs: (r: number) => boolean,
  from: readonly number[],
  sample: Set<number>,
  next: (r: number) => number[],
): void {
  const dist = new Map<number, number>();
  const seen = new Set<number>();
  const visit = [...from];
  let factor = 1;
  for (let i = 0; i < visit.length; i++) {
    const curr = visit[i]!;
    if (seen.has(curr)) continue;
    let d = dist.get(curr);
    if (d === undefined) dist.set(curr, (d = 1));
    if (d > factor) factor *= 2;
    if (d === factor) sample.add(curr);
    seen.add(curr);
    for (const p of next(curr))
      if (inRevs(p)) {
        if (!dist.has(p)) dist.set(p, d + 1);
        visit.push(p);
      }
  }
}

function randomSubset(items: number[], n: number, random: () => number): number[] {
  const a = [...items];
  for (let i = 0; i < n && i < a.length; i++) {
    const j = i + Math.floor(random() * (a.length - i));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a.slice(0, n);
}

/** setdiscovery.findcommonheads (abortwhenunrelated: a pull refuses an unrelated repository). */
export async function findCommonHeads(
  local: LocalGraph,
  peer: DiscoveryPeer,
  opts: DiscoveryOptions = {},
): Promise<DiscoveryResult> {
  const log = opts.log ?? (() => undefined);
  const random = opts.random ?? Math.random;
  const sampleSize = opts.sampleSize ?? 200;
  // ownheads: all local heads, asked about all at once (devel.discovery.exchange-heads)
  const hasChild = new Uint8Array(local.length);
  for (let r = 0; r < local.length; r++)
    for (const p of [local.p1[r]!, local.p2[r]!]) if (p >= 0) hasChild[p] = 1;
  const ownHeads: number[] = [];
  for (let r = 0; r < local.length; r++) if (!hasChild[r]) ownHeads.push(r);

  const first = await peer.headsAndKnown(ownHeads.map((r) => hex(local.nodes[r]!)));
  const remoteHeads = first.heads;
  const remoteEmpty = remoteHeads.length === 1 && remoteHeads[0] === NULL_HEX;
  if (local.length === 0) {
    return {
      common: [NULL_HEX],
      anyIncoming: !remoteEmpty && remoteHeads.length > 0,
      remoteHeads,
      queries: 0,
    };
  }
  log('info', 'searching for changes');
  const knownRemoteHeads: number[] = [];
  for (const h of remoteHeads) {
    if (h === NULL_HEX) continue;
    const r = local.rev(Buffer.from(h, 'hex').toString('latin1'));
    if (r !== undefined) knownRemoteHeads.push(r);
  }
  if (knownRemoteHeads.length === remoteHeads.length) {
    log('debug', 'all remote heads known locally');
    return { common: remoteHeads, anyIncoming: false, remoteHeads, queries: 0 };
  }
  if (first.known.every(Boolean)) {
    log('info', 'all local changesets known remotely');
    return { common: ownHeads.map((r) => hex(local.nodes[r]!)), anyIncoming: true, remoteHeads, queries: 0 };
  }
  const disco = new PartialDiscovery(local, ownHeads);
  disco.addCommons(knownRemoteHeads);
  disco.addInfo(ownHeads, first.known);
  let queries = 0;
  for (;;) {
    const undecided = disco.undecided().length;
    if (!undecided) break;
    const sample = disco.takeFullSample(sampleSize, random);
    queries++;
    log('debug', `query ${queries}; still undecided: ${undecided}, sample size is: ${sample.length}`);
    const reply = await peer.call('known', {
      nodes: encodeNodeList(sample.map((r) => hex(local.nodes[r]!))),
    });
    disco.addInfo(sample, decodeKnown(reply, sample.length));
  }
  log('debug', `${queries + 1} total queries`);
  const common = disco.commonHeads();
  if (!common.length && !remoteEmpty) throw new SluiceError('UNRELATED', 'repository is unrelated');
  return {
    common: common.length ? common.map((r) => hex(local.nodes[r]!)) : [NULL_HEX],
    anyIncoming: !remoteEmpty,
    remoteHeads,
    queries,
  };
}

/**
 * discovery.findcommonoutgoing's `missing`, counted: the local changesets that descend from none
 * of `commonHex` (discovery's common heads), among the ancestors of the heads that would be sent.
 * `excluded` marks revs hg leaves out (secret, and what descends from them: the `served` view's
 * heads are their ancestors, as `og.ancestorsof = repo.filtered(b"served").heads()`).
 */
export function countOutgoing(
  local: LocalGraph,
  commonHex: readonly string[],
  excluded?: (rev: number) => boolean,
): number {
  const n = local.length;
  const common = new Uint8Array(n);
  const stack: number[] = [];
  for (const h of commonHex) {
    if (h === NULL_HEX) continue;
    const r = local.rev(Buffer.from(h, 'hex').toString('latin1'));
    if (r !== undefined && !common[r]) {
      common[r] = 1;
      stack.push(r);
    }
  }
  while (stack.length) {
    const r = stack.pop()!;
    for (const p of [local.p1[r]!, local.p2[r]!])
      if (p >= 0 && !common[p]) {
        common[p] = 1;
        stack.push(p);
      }
  }
  // ancestors of the served heads = every rev that is not excluded (an excluded rev's descendants
  // are excluded too: phases only rise along descendants), minus the common ones
  let missing = 0;
  for (let r = 0; r < n; r++) if (!common[r] && !excluded?.(r)) missing++;
  return missing;
}
