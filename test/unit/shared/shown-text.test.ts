import { describe, expect, it } from 'vitest';
import { CONTROL_OR_BIDI, shownText, withoutBidi } from '../../../src/shared/shown-text';

const RLO = '\u202e';

describe('shownText', () => {
  it('replaces controls and bidi overrides, keeps tabs as spaces and right-to-left letters', () => {
    expect(shownText(`a\tb\u0007c${RLO}d\u2066e\u009bf`, 100)).toBe('a b\ufffdc\ufffdd\ufffde\ufffdf');
    expect(shownText('שלום עולם', 100)).toBe('שלום עולם');
  });

  it('cuts at max characters, never inside a surrogate pair', () => {
    expect(shownText('abcdef', 4)).toBe('abc…');
    expect(shownText('ab\u{1f600}cd', 4)).toBe('ab…');
    expect(shownText('abcd', 4)).toBe('abcd');
  });
});

describe('CONTROL_OR_BIDI', () => {
  it('matches controls and bidi formatting, not right-to-left letters or marks', () => {
    for (const c of ['\0', '\n', '\x1b', '\x7f', '\x85', '\u2028', '\u202a', RLO, '\u2066', '\u2069'])
      expect(CONTROL_OR_BIDI.test(`a${c}b`), JSON.stringify(c)).toBe(true);
    for (const s of ['שלום', 'مرحبا', 'a\u200fb', 'plain']) expect(CONTROL_OR_BIDI.test(s), s).toBe(false);
  });
});

describe('withoutBidi', () => {
  it('replaces embeddings, overrides and isolates, keeps newlines, tabs and other text', () => {
    expect(withoutBidi('a\u202ab\u202ec\u2066d\u2069\n\te é 漢')).toBe(
      'a\ufffdb\ufffdc\ufffdd\ufffd\n\te é 漢',
    );
  });
});
