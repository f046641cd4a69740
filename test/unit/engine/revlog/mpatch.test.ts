import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { isSluiceError } from '../../../../src/main/engine/errors';
import {
  applyDelta,
  applyDeltas,
  foldDeltas,
  FoldedStream,
  fullReplaceDelta,
  patchText,
  patchedSize,
  trivialDeltaText,
} from '../../../../src/main/engine/revlog/mpatch';
import { HG_PYTHON, missing, prng, simpleDelta, skipNote } from '../../../support/revlog';

const hunk = (start: number, end: number, data: string): Buffer => {
  const h = Buffer.alloc(12);
  h.writeInt32BE(start, 0);
  h.writeInt32BE(end, 4);
  h.writeInt32BE(Buffer.byteLength(data, 'latin1'), 8);
  return Buffer.concat([h, Buffer.from(data, 'latin1')]);
};
const s = (b: Uint8Array): string => Buffer.from(b).toString('latin1');

describe('mpatch', () => {
  it('trivialDeltaText: the text of a delta that inserts it whole into the empty text, else undefined', () => {
    expect(s(trivialDeltaText(hunk(0, 0, 'whole text\n'))!)).toBe('whole text\n');
    expect(s(trivialDeltaText(hunk(0, 0, ''))!)).toBe('');
    expect(trivialDeltaText(hunk(0, 3, 'abc'))).toBeUndefined(); // replaces a base's bytes
    expect(trivialDeltaText(hunk(1, 1, 'abc'))).toBeUndefined();
    expect(trivialDeltaText(Buffer.concat([hunk(0, 0, 'a'), hunk(0, 0, 'b')]))).toBeUndefined(); // two hunks
    expect(trivialDeltaText(hunk(0, 0, 'abc').subarray(0, 14))).toBeUndefined(); // length lies
    expect(trivialDeltaText(Buffer.alloc(8))).toBeUndefined();
  });

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

  describe('FoldedStream: a folded chain applied to a base that arrives in pieces', () => {
    const MiB = 1 << 20;
    /** deterministic bytes, distinct per offset block so a misplaced copy shows */
    const baseText = (n: number): Buffer => {
      const b = Buffer.alloc(n);
      for (let i = 0; i < n; i++) b[i] = (Math.imul(i, 2654435761) >>> 24) ^ (i >>> 16);
      return b;
    };
    /**
     * Streams base through a FoldedStream in pieces of `piece` bytes, each piece in ONE reused
     * buffer overwritten after its push (a stream that kept views of the base would emit garbage),
     * and returns the output with the largest piece emitted.
     */
    const stream = (base: Buffer, deltas: Buffer[], piece: number): { out: Buffer; largest: number } => {
      const parts: Buffer[] = [];
      let largest = 0;
      const fs = new FoldedStream(foldDeltas(base.length, deltas), base.length, (p) => {
        largest = Math.max(largest, p.length);
        parts.push(Buffer.from(p));
      });
      const reused = Buffer.alloc(piece);
      for (let off = 0; off < base.length; off += piece) {
        const n = base.copy(reused, 0, off, Math.min(base.length, off + piece));
        fs.push(reused.subarray(0, n));
        reused.fill(0xee);
      }
      const size = fs.end();
      const out = Buffer.concat(parts);
      expect(size).toBe(out.length);
      return { out, largest };
    };

    it('crafted chain: hunks across the 1 MiB piece boundaries, insertions at start and end, the same text as applying the deltas', () => {
      const base = baseText(3 * MiB + 123);
      const deltas = [
        // replace across the first boundary, insert at the very start, delete across the second
        Buffer.concat([
          hunk(0, 0, 'HEAD'),
          hunk(MiB - 10, MiB + 10, 'across-1'),
          hunk(2 * MiB - 5, 2 * MiB + 700_000, ''),
        ]),
        // a long insertion replacing most of the first MiB
        hunk(500, MiB, 'x'.repeat(70_000)),
      ];
      let t = applyDelta(applyDelta(base, deltas[0]!), deltas[1]!);
      // a small replacement, and the text's last 5000 bytes (base bytes past a boundary) deleted
      deltas.push(Buffer.concat([hunk(10, 20, 'mid'), hunk(t.length - 5000, t.length, '')]));
      t = applyDelta(t, deltas[2]!);
      deltas.push(hunk(t.length, t.length, 'TAIL')); // an insertion at the very end
      const want = applyDeltas(base, deltas);
      for (const piece of [MiB, 4096, 7, 3 * MiB + 123]) {
        const { out, largest } = stream(base, deltas, piece);
        expect(out.equals(Buffer.from(want))).toBe(true);
        // what is emitted is a slice of one base piece or of one delta hunk, never more
        expect(largest).toBeLessThanOrEqual(Math.max(piece, 70_000));
      }
      expect(s(want.subarray(0, 4))).toBe('HEAD');
      expect(s(want.subarray(want.length - 4))).toBe('TAIL');
    });

    it('deleting everything, an empty base, and random chains in random piece sizes', () => {
      const base = baseText(MiB + 3);
      expect(stream(base, [hunk(0, base.length, '')], MiB).out.length).toBe(0);
      expect(s(stream(base, [hunk(0, base.length, 'all new')], 1000).out)).toBe('all new');
      expect(s(stream(Buffer.alloc(0), [hunk(0, 0, 'from nothing')], MiB).out)).toBe('from nothing');
      const rnd = prng(11);
      for (let round = 0; round < 60; round++) {
        const b = baseText(Math.floor(rnd() * 50_000));
        const deltas: Buffer[] = [];
        let text: Uint8Array = b;
        for (let i = 0, n = 1 + Math.floor(rnd() * 6); i < n; i++) {
          const cuts = Array.from({ length: Math.floor(rnd() * 6) * 2 }, () =>
            Math.floor(rnd() * (text.length + 1)),
          ).sort((x, y) => x - y);
          const hunks: Buffer[] = [];
          for (let j = 0; j < cuts.length; j += 2)
            hunks.push(hunk(cuts[j]!, cuts[j + 1]!, rnd() < 0.3 ? '' : `ins${round}.${i}.${j}`));
          const d = Buffer.concat(hunks);
          deltas.push(d);
          text = applyDelta(text, d);
        }
        const piece = 1 + Math.floor(rnd() * 9000);
        expect(stream(b, deltas, piece).out.equals(Buffer.from(text))).toBe(true);
      }
    });

    it('a base longer or shorter than the patch expects is refused (bad-delta)', () => {
      const base = baseText(1000);
      const make = (): FoldedStream =>
        new FoldedStream(foldDeltas(1000, [hunk(10, 20, 'x')]), 1000, () => {});
      const long = make();
      long.push(base);
      expect(() => long.push(base.subarray(0, 1))).toThrow(/invalid patch/);
      const short = make();
      short.push(base.subarray(0, 999));
      expect(() => short.end()).toThrow(/invalid patch/);
    });
  });
});
