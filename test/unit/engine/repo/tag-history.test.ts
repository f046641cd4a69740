import { describe, expect, it } from 'vitest';
import { mergeTagLines, readTagLines, type TagHistory } from '../../../../src/main/engine/repo/tag-history';

const n = (d: string): string => d.repeat(40);
const merged = (...files: string[]): Map<string, TagHistory> => {
  const all = new Map<string, TagHistory>();
  for (const f of files) mergeTagLines(readTagLines(f), all);
  return all;
};

describe('tag history (tags._readtags, _updatetags)', () => {
  it('reads each name as its last node and the nodes before it; malformed lines are skipped', () => {
    const t = readTagLines(`${n('a')} v\r\n${n('B')} v\nnot a tag\n${n('c')}  w \n${n('d')}\n`);
    expect([...t]).toEqual([
      ['v', { node: n('b'), hist: [n('a')] }],
      ['w', { node: n('c'), hist: [] }],
    ]);
  });

  it('a later file wins unless the earlier node supersedes it', () => {
    // later file knows nothing of the earlier node: later wins
    expect(merged(`${n('a')} v\n`, `${n('b')} v\n`).get('v')!.node).toBe(n('b'));
    // the earlier moved v away from the later's node: earlier wins
    expect(merged(`${n('b')} v\n${n('a')} v\n`, `${n('b')} v\n`).get('v')!.node).toBe(n('a'));
    // each supersedes the other: the longer history wins, a tie goes to the later file
    const longer = merged(
      `${n('a')} v\n${n('b')} v\n${n('a')} v\n${n('b')} v\n`,
      `${n('b')} v\n${n('a')} v\n`,
    );
    expect(longer.get('v')).toEqual({ node: n('b'), hist: [n('b'), n('a')] });
    expect(merged(`${n('a')} v\n${n('b')} v\n`, `${n('b')} v\n${n('a')} v\n`).get('v')!.node).toBe(n('a'));
  });
});
