// The changelog as a graph, read from its index only (revlog v1 entries, §8.1 of the format notes):
// node ids and parents are all a server needs for heads, `known`, ancestry and phases.
// (Branch names need revision texts; see repo-state.ts.)
//
// Validates what it relies on (entry size, parents < rev, unique nodes) and throws
// SluiceError('REVLOG') otherwise: a corrupt source repo must not make the server lie.

import { SluiceError } from '../errors';
import { STATE_FILE_MAX, readStateFile } from './state-file';

const ENTRY = 64;
const FLAG_INLINE = 1 << 16;

export class ChangelogGraph {
  /** node (20-byte latin1 string) of each rev */
  readonly nodes: string[];
  readonly p1: Int32Array;
  readonly p2: Int32Array;
  private readonly revByNode = new Map<string, number>();

  constructor(nodes: string[], p1: Int32Array, p2: Int32Array) {
    this.nodes = nodes;
    this.p1 = p1;
    this.p2 = p2;
    nodes.forEach((n, r) => this.revByNode.set(n, r));
  }

  get length(): number {
    return this.nodes.length;
  }

  static parse(index: Buffer, name = '00changelog'): ChangelogGraph {
    if (index.length === 0) return new ChangelogGraph([], new Int32Array(0), new Int32Array(0));
    if (index.length < 4)
      throw new SluiceError('REVLOG', `index ${name} is corrupted (${index.length} bytes)`);
    const header = index.readUInt32BE(0);
    const version = header & 0xffff;
    const flags = header & ~0xffff;
    if (version !== 1) throw new SluiceError('REVLOG', `unknown version (${version}) in revlog ${name}`);
    if (flags & ~(FLAG_INLINE | (1 << 17)))
      throw new SluiceError(
        'REVLOG',
        `unknown flags (0x${(flags >>> 16).toString(16)}) in version 1 revlog ${name}`,
      );
    const inline = (flags & FLAG_INLINE) !== 0;
    const nodes: string[] = [];
    const p1s: number[] = [];
    const p2s: number[] = [];
    let off = 0;
    while (off < index.length) {
      if (off + ENTRY > index.length) throw new SluiceError('REVLOG', `index ${name} is corrupted`);
      const rev = nodes.length;
      const compLen = index.readInt32BE(off + 8);
      const p1 = index.readInt32BE(off + 24);
      const p2 = index.readInt32BE(off + 28);
      if (compLen < 0)
        throw new SluiceError('REVLOG', `index ${name} is corrupted (negative length at rev ${rev})`);
      if (p1 < -1 || p1 >= rev || p2 < -1 || p2 >= rev) {
        throw new SluiceError('REVLOG', `index ${name} is corrupted (parent out of range at rev ${rev})`);
      }
      nodes.push(index.toString('latin1', off + 32, off + 52));
      p1s.push(p1);
      p2s.push(p2);
      off += ENTRY + (inline ? compLen : 0);
    }
    if (off !== index.length) throw new SluiceError('REVLOG', `index ${name} is corrupted`);
    const g = new ChangelogGraph(nodes, Int32Array.from(p1s), Int32Array.from(p2s));
    if (g.revByNode.size !== nodes.length)
      throw new SluiceError('REVLOG', `index ${name} has duplicate node ids`);
    return g;
  }

  static async read(storeDir: string): Promise<ChangelogGraph> {
    const buf = await readStateFile(`${storeDir}/00changelog.i`, { max: STATE_FILE_MAX.large });
    return ChangelogGraph.parse(buf ?? Buffer.alloc(0));
  }

  rev(node: string): number | undefined {
    return this.revByNode.get(node);
  }

  /** revs without children among `revs` (all revs when omitted), ascending (changelog.headrevs) */
  headRevs(filter?: (rev: number) => boolean): number[] {
    const n = this.length;
    const hasChild = new Uint8Array(n);
    for (let r = 0; r < n; r++) {
      if (filter && !filter(r)) continue;
      if (this.p1[r]! >= 0) hasChild[this.p1[r]!] = 1;
      if (this.p2[r]! >= 0) hasChild[this.p2[r]!] = 1;
    }
    const out: number[] = [];
    for (let r = 0; r < n; r++) if (!hasChild[r] && (!filter || filter(r))) out.push(r);
    return out;
  }

  /** marks every ancestor of `revs`, inclusive */
  ancestors(revs: Iterable<number>): Uint8Array {
    const mark = new Uint8Array(this.length);
    const stack: number[] = [];
    for (const r of revs) {
      if (r >= 0 && !mark[r]) {
        mark[r] = 1;
        stack.push(r);
      }
    }
    while (stack.length) {
      const r = stack.pop()!;
      for (const p of [this.p1[r]!, this.p2[r]!]) {
        if (p >= 0 && !mark[p]) {
          mark[p] = 1;
          stack.push(p);
        }
      }
    }
    return mark;
  }

  /**
   * The graph without the revs `drop` marks, renumbered, as a repoview sees it (hg's filtered
   * changelog), and each kept rev's number in this graph. `drop` must hold no parent of a kept rev
   * (a hidden set is closed under descendants: repoview._revealancestors).
   */
  filtered(drop: Uint8Array): { graph: ChangelogGraph; original: Int32Array } {
    const renumbered = new Int32Array(this.length).fill(-1);
    const original: number[] = [];
    for (let r = 0; r < this.length; r++) if (!drop[r]) renumbered[r] = original.push(r) - 1;
    const parent = (p: number): number => {
      if (p >= 0 && renumbered[p]! < 0)
        throw new SluiceError('REVLOG', `filtered rev ${p} is the parent of a kept rev`);
      return p >= 0 ? renumbered[p]! : -1;
    };
    const graph = new ChangelogGraph(
      original.map((r) => this.nodes[r]!),
      Int32Array.from(original, (r) => parent(this.p1[r]!)),
      Int32Array.from(original, (r) => parent(this.p2[r]!)),
    );
    return { graph, original: Int32Array.from(original) };
  }

  /** marks every descendant of `revs`, inclusive (parents always precede children) */
  descendants(revs: Iterable<number>): Uint8Array {
    const mark = new Uint8Array(this.length);
    let min = this.length;
    for (const r of revs) {
      if (r >= 0 && r < this.length) {
        mark[r] = 1;
        min = Math.min(min, r);
      }
    }
    for (let r = min + 1; r < this.length; r++) {
      const p1 = this.p1[r]!;
      const p2 = this.p2[r]!;
      if ((p1 >= 0 && mark[p1]) || (p2 >= 0 && mark[p2])) mark[r] = 1;
    }
    return mark;
  }
}

export const PHASE_PUBLIC = 0;
export const PHASE_DRAFT = 1;
export const PHASE_SECRET = 2;
/** phases.allphases: public, draft, secret, archived (32), internal (96); hg knows no other. */
export const ALL_PHASES: readonly number[] = [PHASE_PUBLIC, PHASE_DRAFT, PHASE_SECRET, 32, 96];

/** phaseroots file (phases.py `_readroots`): `<phase> <hex root>\n` lines. */
export function parsePhaseRoots(text: string): Map<number, string[]> {
  const roots = new Map<number, string[]>();
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const m = /^\s*(\d+)\s+([0-9a-f]{40})\s*$/.exec(line);
    if (!m)
      throw new SluiceError('MALFORMED', `malformed phaseroots line: ${JSON.stringify(line.slice(0, 80))}`);
    const phase = Number(m[1]);
    const list = roots.get(phase) ?? [];
    list.push(m[2]!);
    roots.set(phase, list);
  }
  return roots;
}

/** phase of every rev from the roots (a rev takes the highest phase among the roots it descends from). */
export function computePhases(g: ChangelogGraph, roots: Map<number, string[]>): Uint8Array {
  const phase = new Uint8Array(g.length);
  for (const [p, hexes] of [...roots.entries()].sort((a, b) => a[0] - b[0])) {
    if (p === PHASE_PUBLIC) continue;
    const revs: number[] = [];
    for (const h of hexes) {
      const r = g.rev(Buffer.from(h, 'hex').toString('latin1'));
      if (r !== undefined) revs.push(r);
    }
    if (!revs.length) continue;
    const d = g.descendants(revs);
    // archived (32) and internal (96) hide changesets like secret does; keep them distinct
    const value = Math.min(p, 255);
    for (let r = 0; r < g.length; r++) if (d[r] && phase[r]! < value) phase[r] = value;
  }
  return phase;
}

/** phases.py `_write` for the draft roots of `phase`: `1 <hex>\n` lines sorted by node. */
export function draftRootsText(g: ChangelogGraph, phase: Uint8Array): string {
  const roots: string[] = [];
  for (let r = 0; r < g.length; r++) {
    if (phase[r] !== PHASE_DRAFT) continue;
    const p1 = g.p1[r]!;
    const p2 = g.p2[r]!;
    const parentDraft = (p1 >= 0 && phase[p1] === PHASE_DRAFT) || (p2 >= 0 && phase[p2] === PHASE_DRAFT);
    if (!parentDraft) roots.push(g.nodes[r]!);
  }
  roots.sort();
  return roots.map((n) => `${PHASE_DRAFT} ${Buffer.from(n, 'latin1').toString('hex')}\n`).join('');
}

export function hexNode(node: string): string {
  return Buffer.from(node, 'latin1').toString('hex');
}

export function binNode(hex: string): string {
  return Buffer.from(hex, 'hex').toString('latin1');
}
