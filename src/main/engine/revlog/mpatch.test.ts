import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { isSluiceError } from '../errors';
import { applyDelta, applyDeltas, foldDeltas, fullReplaceDelta, patchText, patchedSize } from './mpatch';
import { HG_PYTHON, missing, prng, simpleDelta, skipNote } from './test-support';

const hunk = (start: number, end: number, data: string): Buffer => {
  const h = Buffer.alloc(12);
  h.writeInt32BE(start, 0);
  h.writeInt32BE(end, 4);
  h.writeInt32BE(Buffer.byteLength(data, 'latin1'), 8);
  return Buffer.concat([h, Buffer.from(data, 'latin1')]);
};
const s = (b: Uint8Array): string => Buffer.from(b).toString('latin1');

describe('mpatch', () => {
  it('applies hunks: insert, replace, delete, append (hg-stream-formats.md §8.1 README rev2)', () => {
    const base = Buffer.from('hello\nrevision 1\n');
    expect(s(applyDelta(base, hunk(17, 17, 'revision 2\n')))).toBe('hello\nrevision 1\nrevision 2\n');
    expect(s(applyDelta(base, Buffer.concat([hunk(0, 5, 'HELLO'), hunk(6, 17, '')])))).toBe('HELLO\n');
    expect(s(applyDelta(base, Buffer.alloc(0)))).toBe(s(base));
    expect(s(applyDelta(Buffer.alloc(0), hunk(0, 0, 'new')))).toBe('new');
    expect(s(applyDeltas(base, [hunk(0, 0, 'a'), hunk(1, 1, 'b')]))).toBe('ab' + s(base));
    expect(s(applyDelta(base, fullReplaceDelta(base.length, Buffer.from('x'))))).toBe('x');
    expect(patchedSize(base.length, hunk(17, 17, 'revision 2\n'))).toBe(28);
    expect(s(patchText(Buffer.concat([hunk(0, 1, 'ab'), hunk(3, 4, 'cd')])))).toBe('abcd');
  });

  it('rejects what mpatch.c rejects: overlapping or descending hunks, ends past the base, truncated data', () => {
    const base = Buffer.from('0123456789');
    const bad = [
      Buffer.concat([hunk(5, 6, 'x'), hunk(4, 5, 'y')]), // descending
      Buffer.concat([hunk(2, 6, 'x'), hunk(5, 7, 'y')]), // overlap
      hunk(3, 2, ''), // start > end
      hunk(0, 11, ''), // end past base
      hunk(-1, 2, ''),
      hunk(0, 1, 'abc').subarray(0, 13), // data cut short
      hunk(0, 1, '').subarray(0, 11), // header cut short
    ];
    for (const d of bad) {
      try {
        applyDelta(base, d);
        expect.unreachable('accepted a bad delta');
      } catch (e) {
        expect(isSluiceError(e) && e.code).toBe('REVLOG');
        expect(isSluiceError(e) && (e.details as { problem: string }).problem).toBe('bad-delta');
      }
    }
    const neg = hunk(0, 0, '');
    neg.writeInt32BE(-1, 8);
    expect(() => patchText(neg)).toThrow(/patch cannot be decoded/);
  });

  it.skipIf(missing('hg-python'))(
    `applies deltas made by hg mdiff.textdiff, and hg applies ours (differential)${skipNote('hg-python')}`,
    () => {
      const rnd = prng(42);
      const lines = (n: number): string =>
        Array.from(
          { length: n },
          () => `line ${Math.floor(rnd() * 50)} ${'z'.repeat(Math.floor(rnd() * 30))}\n`,
        ).join('');
      const pairs: [string, string][] = [];
      for (let i = 0; i < 60; i++) pairs.push([lines(Math.floor(rnd() * 40)), lines(Math.floor(rnd() * 40))]);
      const script = `
import sys
from mercurial import mdiff
from mercurial.pure import mpatch
out = []
for line in sys.stdin.read().split('\\n'):
    if not line: continue
    a, b, ours = [bytes.fromhex(x) for x in line.split(' ')]
    d = mdiff.textdiff(a, b)
    assert mpatch.patches(a, [ours]) == b
    out.append(d.hex())
print('\\n'.join(out))
`;
      const input = pairs
        .map(
          ([a, b]) =>
            `${Buffer.from(a).toString('hex')} ${Buffer.from(b).toString('hex')} ${simpleDelta(Buffer.from(a), Buffer.from(b)).toString('hex')}`,
        )
        .join('\n');
      const res = spawnSync(HG_PYTHON, ['-c', script], { input, encoding: 'utf8', maxBuffer: 64 << 20 });
      expect(res.status, res.stderr).toBe(0);
      const deltas = res.stdout.split('\n').filter((l) => l !== '' || false);
      // empty deltas print as empty lines: rebuild by position
      const all = res.stdout.replace(/\n$/, '').split('\n');
      expect(all.length).toBe(pairs.length);
      all.forEach((hex, i) => {
        const [a, b] = pairs[i]!;
        expect(s(applyDelta(Buffer.from(a), Buffer.from(hex, 'hex')))).toBe(b);
      });
      expect(deltas.length).toBeGreaterThan(0);
    },
  );

  it('a folded chain (mpatch_fold) builds the same text as applying its deltas one by one', () => {
    const rnd = prng(7);
    /** a random valid delta against a text of len bytes: ascending, non-overlapping hunks */
    const randomDelta = (len: number): Buffer => {
      const cuts = Array.from({ length: Math.floor(rnd() * 8) * 2 }, () => Math.floor(rnd() * (len + 1)));
      cuts.sort((a, b) => a - b);
      const hunks: Buffer[] = [];
      for (let i = 0; i < cuts.length; i += 2) {
        const data = 'abcdefghij'.slice(0, Math.floor(rnd() * 11)) + String(i);
        hunks.push(hunk(cuts[i]!, cuts[i + 1]!, rnd() < 0.2 ? '' : data));
      }
      return Buffer.concat(hunks);
    };
    for (let round = 0; round < 300; round++) {
      const base = Buffer.from('0123456789'.repeat(Math.floor(rnd() * 8)));
      const deltas: Buffer[] = [];
      let text: Uint8Array = base;
      const chain = 1 + Math.floor(rnd() * 40);
      for (let i = 0; i < chain; i++) {
        const d = randomDelta(text.length);
        deltas.push(d);
        text = applyDelta(text, d);
      }
      expect(s(applyDeltas(base, deltas))).toBe(s(text));
      expect(foldDeltas(base.length, deltas).size).toBe(text.length);
    }
    // a delta that does not fit the text it applies to is refused inside a chain as well
    const base = Buffer.from('0123456789');
    expect(() => applyDeltas(base, [hunk(0, 10, 'ab'), hunk(0, 3, '')])).toThrow(/invalid patch/);
  });
});
