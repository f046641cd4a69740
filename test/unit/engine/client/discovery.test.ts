import { describe, expect, it } from 'vitest';
import { prng } from '../../../support/env';
import {
  findCommonHeads,
  type DiscoveryPeer,
  type LocalGraph,
} from '../../../../src/main/engine/client/discovery';

/** A random DAG: each rev has p1 among recent revs, sometimes a p2 (merges), sometimes a new root. */
function randomDag(n: number, rand: () => number): { p1: number[]; p2: number[] } {
  const p1: number[] = [];
  const p2: number[] = [];
  for (let r = 0; r < n; r++) {
    if (r === 0 || rand() < 0.01) {
      p1.push(-1);
      p2.push(-1);
      continue;
    }
    const a = Math.max(0, r - 1 - Math.floor(rand() * Math.min(r, 8)));
    p1.push(a);
    const b = rand() < 0.1 ? Math.floor(rand() * r) : -1;
    p2.push(b === a ? -1 : b);
  }
  return { p1, p2 };
}

function node(i: number): string {
  return Buffer.from(i.toString(16).padStart(40, '0'), 'hex').toString('latin1');
}

/** The subgraph of `keep` (closed under ancestors), renumbered, as a LocalGraph. */
function subgraph(dag: { p1: number[]; p2: number[] }, keep: Uint8Array): LocalGraph & { ids: number[] } {
  const ids: number[] = [];
  const map = new Map<number, number>();
  for (let r = 0; r < keep.length; r++)
    if (keep[r]) {
      map.set(r, ids.length);
      ids.push(r);
    }
  const p1 = Int32Array.from(ids.map((r) => (dag.p1[r]! >= 0 ? map.get(dag.p1[r]!)! : -1)));
  const p2 = Int32Array.from(ids.map((r) => (dag.p2[r]! >= 0 ? map.get(dag.p2[r]!)! : -1)));
  const nodes = ids.map(node);
  const byNode = new Map(nodes.map((n, i) => [n, i]));
  return { length: ids.length, p1, p2, nodes, rev: (n) => byNode.get(n), ids };
}

function ancestorsOf(dag: { p1: number[]; p2: number[] }, heads: number[]): Uint8Array {
  const m = new Uint8Array(dag.p1.length);
  const st = [...heads];
  for (const h of heads) m[h] = 1;
  while (st.length) {
    const r = st.pop()!;
    for (const p of [dag.p1[r]!, dag.p2[r]!])
      if (p >= 0 && !m[p]) {
        m[p] = 1;
        st.push(p);
      }
  }
  return m;
}

function peerOf(remote: LocalGraph & { ids: number[] }): DiscoveryPeer & { knownCalls: number } {
  const has = new Set(remote.nodes.map((n) => Buffer.from(n, 'latin1').toString('hex')));
  const heads = (): string[] => {
    const child = new Uint8Array(remote.length);
    for (let r = 0; r < remote.length; r++)
      for (const p of [remote.p1[r]!, remote.p2[r]!]) if (p >= 0) child[p] = 1;
    const out: string[] = [];
    for (let r = remote.length - 1; r >= 0; r--)
      if (!child[r]) out.push(Buffer.from(remote.nodes[r]!, 'latin1').toString('hex'));
    return out.length ? out : ['0'.repeat(40)];
  };
  const known = (nodes: string[]): boolean[] => nodes.map((n) => has.has(n));
  const peer = {
    knownCalls: 0,
    async headsAndKnown(nodes: string[]) {
      return { heads: heads(), known: known(nodes) };
    },
    async call(cmd: string, args: Record<string, string>) {
      expect(cmd).toBe('known');
      peer.knownCalls++;
      const nodes = args.nodes ? args.nodes.split(' ') : [];
      return known(nodes)
        .map((k) => (k ? '1' : '0'))
        .join('');
    },
  };
  return peer;
}

describe('findCommonHeads (setdiscovery)', () => {
  it('finds exactly the heads of the common set on random DAGs, in few round trips', async () => {
    for (let seed = 1; seed <= 25; seed++) {
      const rand = prng(seed);
      const n = 50 + Math.floor(rand() * 1500);
      const dag = randomDag(n, rand);
      const pick = (): number[] =>
        Array.from({ length: 1 + Math.floor(rand() * 4) }, () => Math.floor(rand() * n));
      const localSet = ancestorsOf(dag, pick());
      const remoteSet = ancestorsOf(dag, pick());
      const local = subgraph(dag, localSet);
      const remote = subgraph(dag, remoteSet);
      const peer = peerOf(remote);
      const res = await findCommonHeads(local, peer, { random: rand }).catch((e: Error) => e);
      const both = new Uint8Array(n);
      for (let r = 0; r < n; r++) both[r] = localSet[r]! & remoteSet[r]!;
      const bothCount = both.reduce((a, b) => a + b, 0);
      if (bothCount === 0) {
        expect(res).toMatchObject({ code: 'UNRELATED' });
        continue;
      }
      if (res instanceof Error) throw res;
      // heads of the intersection, as hex
      const child = new Uint8Array(n);
      for (let r = 0; r < n; r++)
        if (both[r]) for (const p of [dag.p1[r]!, dag.p2[r]!]) if (p >= 0) child[p] = 1;
      const want: string[] = [];
      for (let r = 0; r < n; r++)
        if (both[r] && !child[r]) want.push(Buffer.from(node(r), 'latin1').toString('hex'));
      // discovery may stop early with remote heads it knows (all of them common) or local heads
      const closure = (hexes: string[]): string => {
        const revs = hexes.map((h) => Number(BigInt('0x' + h)));
        return [...ancestorsOf(dag, revs)].join('');
      };
      expect(closure(res.common)).toBe(closure(want));
      const remoteHasMore = [...remoteSet].some((v, r) => v && !localSet[r]);
      if (remoteHasMore) expect(res.anyIncoming).toBe(true);
      if (!remoteHasMore) expect(res.common.length).toBeGreaterThan(0);
      expect(peer.knownCalls).toBeLessThan(20);
    }
  });

  it('an empty local repository asks one batch and reports the null node as common', async () => {
    const dag = randomDag(30, prng(3));
    const remote = subgraph(dag, ancestorsOf(dag, [29]));
    const local = subgraph(dag, new Uint8Array(30));
    const peer = peerOf(remote);
    const res = await findCommonHeads(local, peer);
    expect(res).toMatchObject({ common: ['0'.repeat(40)], anyIncoming: true, queries: 0 });
    expect(peer.knownCalls).toBe(0);
  });

  it('a known-everything pull is settled by the first batch', async () => {
    const dag = randomDag(200, prng(9));
    const all = ancestorsOf(dag, [199]);
    const peer = peerOf(subgraph(dag, all));
    const res = await findCommonHeads(subgraph(dag, all), peer);
    expect(res.anyIncoming).toBe(false);
    expect(peer.knownCalls).toBe(0);
  });

  it('a truncated known reply is a protocol error', async () => {
    const dag = randomDag(100, prng(5));
    const local = subgraph(dag, ancestorsOf(dag, [99, 60]));
    const remote = subgraph(dag, ancestorsOf(dag, [50]));
    const peer = peerOf(remote);
    const bad: DiscoveryPeer = { headsAndKnown: (n) => peer.headsAndKnown(n), call: async () => '1' };
    await expect(findCommonHeads(local, bad)).rejects.toMatchObject({ code: 'PROTOCOL' });
  });
});
