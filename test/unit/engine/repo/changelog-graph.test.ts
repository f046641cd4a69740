// ChangelogGraph.filtered: a repoview's renumbered graph (hg's filtered changelog).

import { describe, expect, it } from 'vitest';
import { ChangelogGraph } from '../../../../src/main/engine/repo/changelog-graph';

const node = (i: number): string => String.fromCharCode(i).repeat(20);

/** 0 ← 1 ← 2, 1 ← 3, merge 4 of 2 and 3 (rev numbers: parents before children) */
function diamond(): ChangelogGraph {
  return new ChangelogGraph(
    [0, 1, 2, 3, 4].map(node),
    Int32Array.from([-1, 0, 1, 1, 2]),
    Int32Array.from([-1, -1, -1, -1, 3]),
  );
}

describe('ChangelogGraph.filtered', () => {
  it('drops the marked revs and renumbers parents into the kept ones', () => {
    const g = new ChangelogGraph(
      [0, 1, 2, 3].map(node),
      Int32Array.from([-1, 0, 1, 0]),
      Int32Array.from([-1, -1, -1, -1]),
    );
    const { graph, original } = g.filtered(Uint8Array.from([0, 0, 1, 0]));
    expect(graph.nodes).toEqual([node(0), node(1), node(3)]);
    expect([...graph.p1]).toEqual([-1, 0, 0]);
    expect([...original]).toEqual([0, 1, 3]);
    expect(graph.rev(node(3))).toBe(2);
    expect(graph.rev(node(2))).toBeUndefined();
    expect(graph.headRevs()).toEqual([1, 2]);
  });

  it('keeps a merge whose parents are both kept', () => {
    const { graph } = diamond().filtered(new Uint8Array(5));
    expect([...graph.p1]).toEqual([-1, 0, 1, 1, 2]);
    expect([...graph.p2]).toEqual([-1, -1, -1, -1, 3]);
  });

  it('refuses a drop set that holds the parent of a kept rev', () => {
    expect(() => diamond().filtered(Uint8Array.from([0, 0, 0, 1, 0]))).toThrow(/parent of a kept rev/);
  });
});
