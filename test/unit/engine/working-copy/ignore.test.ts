// The ignore-pattern translation: match.py's _globre / _regex outputs (their doctests), readpatternfile's
// syntax handling, and the Python → JavaScript regex differences python-regex.ts covers or refuses.
import { describe, expect, it } from 'vitest';
import {
  globRe,
  parsePatternFile,
  patternRegex,
  pythonNormpath,
} from '../../../../src/main/engine/working-copy/ignore';
import { pythonRegexToJs, UntranslatableRegex } from '../../../../src/main/engine/working-copy/python-regex';

describe('globRe (match._globre doctests)', () => {
  it.each([
    ['?', '.'],
    ['*', '[^/]*'],
    ['**', '.*'],
    ['**/a', '(?:.*/)?a'],
    ['a/**/b', 'a/(?:.*/)?b'],
    ['[a*?!^][^b][!c]', '[a*?!^][\\^b][^c]'],
    ['{a,b}', '(?:a|b)'],
    ['.\\*\\?', '\\.\\*\\?'],
  ])('%s → %s', (glob, re) => expect(globRe(glob)).toBe(re));
});

describe('patternRegex (match._regex)', () => {
  it('relglob, rootglob, relre with and without ^, leading flags', () => {
    expect(patternRegex('relglob', '*.o', '(?:/|$)').regex).toBe('.*\\.o(?:/|$)');
    expect(patternRegex('relglob', 'build', '(?:/|$)').regex).toBe('(?:|.*/)build(?:/|$)');
    expect(patternRegex('rootglob', 'a/*.c', '(?:/|$)').regex).toBe('a/[^/]*\\.c(?:/|$)');
    expect(patternRegex('relre', 'foo', '').regex).toBe('.*foo');
    expect(patternRegex('relre', '^foo', '').regex).toBe('^foo');
    expect(patternRegex('relre', '(?i)\\.bak$', '')).toEqual({ regex: '.*\\.bak$', flags: 'i' });
  });
});

describe('parsePatternFile (match.readpatternfile)', () => {
  it('syntax lines, prefixes, escaped and trailing comments, invalid syntax warned', () => {
    const warnings: string[] = [];
    const pats = parsePatternFile(
      'a.*\nsyntax: glob\n*.o # comment\nre:^x\\#y\nrootglob:top\ninclude:other\nsyntax: bogus\n\n',
      '/r/.hgignore',
      (m) => warnings.push(m),
    );
    expect(pats).toEqual(['relre:a.*', 'relglob:*.o', 'relre:^x#y', 'rootglob:top', 'include:other']);
    expect(warnings).toEqual(["/r/.hgignore: ignoring invalid syntax 'bogus'\n"]);
  });

  it('pythonNormpath is posixpath.normpath', () => {
    expect(pythonNormpath('')).toBe('.');
    expect(pythonNormpath('a//b/./c/')).toBe('a/b/c');
    expect(pythonNormpath('a/../../b')).toBe('../b');
    expect(pythonNormpath('//x')).toBe('//x');
  });
});

describe('pythonRegexToJs', () => {
  const match = (py: string, s: string): boolean => new RegExp(`^(?:${pythonRegexToJs(py)})`).test(s);
  it('translates \\A \\Z, named groups, comments, a leading ] in a class, {,n}, bytes-mode \\s', () => {
    expect(match('\\Afoo\\Z', 'foo')).toBe(true);
    expect(match('\\Afoo\\Z', 'foox')).toBe(false);
    expect(match('(?P<n>a)(?P=n)', 'aa')).toBe(true);
    expect(match('a(?#note)b', 'ab')).toBe(true);
    expect(match('[]x]+', ']x]')).toBe(true);
    expect(match('[^]]', ']')).toBe(false);
    expect(match('a{,2}$', 'aa')).toBe(true);
    expect(match('a\\sb', 'a\xa0b')).toBe(false); // U+00A0 is the latin1 byte 0xa0, not whitespace in bytes mode
    expect(match('a\\sb', 'a b')).toBe(true);
  });

  it('refuses what JavaScript cannot express', () => {
    for (const py of ['a*+', '(?>a)', '(?(1)a|b)', 'a(?i)b', '(?x: a )'])
      expect(() => pythonRegexToJs(py)).toThrow(UntranslatableRegex);
  });
});
