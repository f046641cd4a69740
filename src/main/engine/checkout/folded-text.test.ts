import { describe, expect, it } from 'vitest';
import { applyDelta } from '../revlog/mpatch';
import { prng } from '../test-support';
import { foldDelta, Fragments } from './folded-text';

/** A random valid delta against a text of `len` bytes. */
function randomDelta(rand: () => number, len: number): Buffer {
  const parts: Buffer[] = [];
  let pos = 0;
  while (pos <= len && rand() < 0.8) {
    const start = pos + Math.floor(rand() * Math.min(50, len - pos + 1));
    if (start > len) break;
    const end = start + Math.floor(rand() * Math.min(20, len - start + 1));
    const data = Buffer.from(Array.from({ length: Math.floor(rand() * 10) }, () => Math.floor(rand() * 256)));
    const h = Buffer.alloc(12);
    h.writeInt32BE(start, 0);
    h.writeInt32BE(end, 4);
    h.writeInt32BE(data.length, 8);
    parts.push(h, data);
    pos = end;
    if (rand() < 0.2) break;
  }
  return Buffer.concat(parts);
}

function whole(f: Fragments): Buffer {
  return Buffer.concat(f.bufs.map((b, i) => b.subarray(f.offs[i], f.offs[i]! + f.lens[i]!)));
}

describe('foldDelta', () => {
  it('folds a chain into the same text as applying each delta (mdiff.patches)', () => {
    const rand = prng(7);
    for (let round = 0; round < 200; round++) {
      let text: Buffer = Buffer.from(Array.from({ length: Math.floor(rand() * 300) }, (_, i) => i & 0xff));
      let frags = new Fragments();
      frags.push(text, 0, text.length);
      for (let d = 0; d < 1 + Math.floor(rand() * 12); d++) {
        const delta = randomDelta(rand, text.length);
        text = applyDelta(text, delta);
        frags = foldDelta(frags, delta);
        expect(frags.length).toBe(text.length);
      }
      expect(whole(frags)).toEqual(text);
    }
  });

  it('rejects an invalid hunk like mpatch (REVLOG bad-delta)', () => {
    const f = new Fragments();
    f.push(Buffer.from('hello'), 0, 5);
    const h = Buffer.alloc(12);
    h.writeInt32BE(3, 0);
    h.writeInt32BE(9, 4); // end beyond the text
    h.writeInt32BE(0, 8);
    expect(() => foldDelta(f, h)).toThrow(/invalid patch/);
  });
});
