// verify.py's verifier._checkentry: a revision's linkrev, parents and duplicates.
import { shortNode } from '../../revlog/revlog-error';
import type { Revlog } from '../../revlog/revlog';
import { isNullNode, type RevlogIndex } from '../../revlog/index';
import { NULL_REV } from '../../revlog/constants';
import { parseChangelogEntry, parseManifest } from '../../revlog/texts';
import type { Sink } from './verify-output';

/** Checks entries of any revlog against the changelog (and its manifests for hg's hints). */
export class EntryChecks {
  private readonly ctxCache = new Map<number, Map<string, string> | null>();

  /** havecl: the changelog has revisions (linkrevs are then checked against it) */
  constructor(
    private readonly cl: Revlog,
    private readonly mf: Revlog,
    private readonly havecl: boolean,
  ) {}

  /**
   * verifier._checkentry; returns the linkrev to blame (null when it cannot be trusted).
   * Synchronous (no promise per revision) unless the linkrev is wrong and hg's " (expected …)"
   * hint needs manifests read.
   */
  check(
    rl: { index: RevlogIndex },
    i: number,
    seen: Map<string, number>,
    linkrevs: readonly number[],
    linkrevSet: ReadonlySet<number> | null,
    label: string,
    sink: Sink,
  ): number | null | Promise<number | null> {
    const idx = rl.index;
    const lr = idx.link(i);
    const known = linkrevSet ? linkrevSet.has(lr) : linkrevs.includes(lr);
    if (lr < 0 || (this.havecl && !known)) return this.checkBadLinkrev(idx, i, seen, linkrevs, label, sink);
    return this.checkParents(idx, i, seen, lr, label, sink);
  }

  /** _checkentry's wrong-linkrev report, then the rest of its checks with the linkrev untrusted. */
  private async checkBadLinkrev(
    idx: RevlogIndex,
    i: number,
    seen: Map<string, number>,
    linkrevs: readonly number[],
    label: string,
    sink: Sink,
  ): Promise<number | null> {
    const lr = idx.link(i);
    const nonexistent = lr < 0 || lr >= this.cl.length;
    sink.err(null, `rev ${i} points to ${nonexistent ? 'nonexistent' : 'unexpected'} changeset ${lr}`, label);
    if (linkrevs.length) {
      let shown: readonly number[] = linkrevs;
      if (label && linkrevs.length > 1) shown = await this.filterLinkrevs(linkrevs, label, idx.node(i));
      sink.warn(` (expected ${shown.join(' ')})`);
    }
    return this.checkParents(idx, i, seen, null, label, sink);
  }

  /** _checkentry's parent and duplicate checks (node strings from the index: no view per call). */
  private checkParents(
    idx: RevlogIndex,
    i: number,
    seen: Map<string, number>,
    lr: number | null,
    label: string,
    sink: Sink,
  ): number | null {
    const p1 = idx.p1(i);
    const p2 = idx.p2(i);
    const n = idx.length;
    if (p1 < NULL_REV || p1 >= n || p2 < NULL_REV || p2 >= n) {
      sink.err(lr, `checking parents of ${shortNode(idx.node(i))}: revlog index out of range`, label);
    } else {
      if (p1 !== NULL_REV && !seen.has(idx.nodeKey(p1)) && !idx.isNullAt(p1))
        sink.err(lr, `unknown parent 1 ${shortNode(idx.node(p1))} of ${shortNode(idx.node(i))}`, label);
      if (p2 !== NULL_REV && !seen.has(idx.nodeKey(p2)) && !idx.isNullAt(p2))
        sink.err(lr, `unknown parent 2 ${shortNode(idx.node(p2))} of ${shortNode(idx.node(i))}`, label);
    }
    const key = idx.nodeKey(i);
    const dup = seen.get(key);
    if (dup !== undefined) sink.err(lr, `duplicate revision ${i} (${dup})`, label);
    seen.set(key, i);
    return lr;
  }

  /** The " (expected …)" filter of _checkentry: keep changesets whose manifest has f at node. */
  private async filterLinkrevs(linkrevs: readonly number[], f: string, node: Uint8Array): Promise<number[]> {
    const out: number[] = [];
    const hex = Buffer.from(node).toString('hex');
    try {
      for (const lr of linkrevs) {
        const files = await this.manifestAt(lr);
        const fn = files.get(f);
        if (fn === undefined) throw new Error('not found');
        if (fn === hex) out.push(lr);
      }
    } catch {
      // hg: `except Exception: pass`, keeping what was filtered so far
    }
    return out;
  }

  /** path -> filenode hex of changeset lr's manifest (rare path: wrong linkrevs only). */
  private async manifestAt(lr: number): Promise<Map<string, string>> {
    if (this.ctxCache.has(lr)) {
      const m = this.ctxCache.get(lr);
      if (!m) throw new Error('unreadable');
      return m;
    }
    this.ctxCache.set(lr, null);
    const entry = parseChangelogEntry(await this.cl.revision(lr));
    const files = new Map<string, string>();
    if (!isNullNode(entry.manifest)) {
      const mrev = this.mf.index.rev(entry.manifest);
      if (mrev === undefined || mrev < 0) throw new Error('unknown manifest');
      parseManifest(await this.mf.revision(mrev), (e) => files.set(e.path, e.nodeHex));
    }
    if (this.ctxCache.size > 64) this.ctxCache.clear();
    this.ctxCache.set(lr, files);
    return files;
  }
}
