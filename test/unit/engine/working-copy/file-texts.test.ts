import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../../../src/main/engine/errors';
import { metaStripper, stripFilelogMeta } from '../../../../src/main/engine/working-copy/file-texts';

/** Feeds text to a metaStripper cut at the given positions; returns what it wrote. */
function streamed(text: Buffer, cuts: number[]): Buffer {
  const out: Buffer[] = [];
  const s = metaStripper((p) => out.push(Buffer.from(p)));
  let from = 0;
  for (const c of [...cuts, text.length]) {
    s.push(text.subarray(from, c));
    from = c;
  }
  s.end();
  return Buffer.concat(out);
}

describe('metaStripper', () => {
  const texts = [
    Buffer.from('\x01\ncopy: a\ncopyrev: 0123456789012345678901234567890123456789\n\x01\nfile data\n'),
    Buffer.from('\x01\n\x01\n\x01\nstarts like metadata\n'),
    Buffer.from('plain data \x01\n with a marker later\n'),
    Buffer.from('\x01'),
    Buffer.from(''),
  ];
  it('writes what stripFilelogMeta keeps, whatever the pieces', () => {
    for (const text of texts) {
      const want = Buffer.from(stripFilelogMeta(text));
      for (let a = 0; a <= text.length; a++) {
        expect(streamed(text, [a])).toEqual(want);
        for (let b = a; b <= text.length; b++) expect(streamed(text, [a, b])).toEqual(want);
      }
    }
  });
  it('refuses an unterminated block as stripFilelogMeta does', () => {
    const text = Buffer.from('\x01\ncopy: a\nno end');
    expect(() => stripFilelogMeta(text)).toThrow(SluiceError);
    expect(() => streamed(text, [3, 7])).toThrow(SluiceError);
  });
});
