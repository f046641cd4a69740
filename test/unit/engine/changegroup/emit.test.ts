// emit.ts's computed deltas (sent when the receiver lacks the stored delta's base): a manifest's
// cut at line boundaries, as hg's bdiff cuts them, since hg stores a received delta as is and
// reads a stored manifest delta back as manifest lines (manifestctx.readdelta, `hg verify`).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyDelta, onLineBoundaries } from '../../../../src/main/engine/revlog/mpatch';
import { prefixSuffixDelta } from '../../../../src/main/engine/changegroup/emit';

const line = fc
  .tuple(fc.constantFrom('a', 'b', 'dir/c', 'dir/d', 'e'), fc.stringMatching(/^[0-9a-f]{40}$/))
  .map(([p, h]) => `${p}\0${h}\n`);
const manifest = fc.array(line, { maxLength: 8 }).map((ls) => Buffer.from(ls.join(''), 'latin1'));

describe('prefixSuffixDelta', () => {
  it('with lines: rebuilds the text and cuts both texts at line boundaries, whatever they share', () => {
    fc.assert(
      fc.property(manifest, manifest, (base, text) => {
        const delta = Buffer.concat(prefixSuffixDelta(base, text, true));
        expect(applyDelta(base, delta)).toEqual(text);
        expect(onLineBoundaries(base, delta)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('without: the tightest hunk, mid-line when a node changes (fine for a filelog)', () => {
    const base = Buffer.from(`a\0${'1'.repeat(40)}\nb\0${'2'.repeat(40)}\n`, 'latin1');
    const text = Buffer.from(`a\0${'1'.repeat(40)}\nb\0${'2'.repeat(39)}3\n`, 'latin1');
    const bytes = Buffer.concat(prefixSuffixDelta(base, text));
    expect(applyDelta(base, bytes)).toEqual(text);
    expect(bytes.readInt32BE(8)).toBe(1);
    expect(onLineBoundaries(base, bytes)).toBe(false);
    const lines = Buffer.concat(prefixSuffixDelta(base, text, true));
    expect(lines.subarray(12).toString('latin1')).toBe(`b\0${'2'.repeat(39)}3\n`);
  });
});
