import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  decodeDir,
  decodeFilename,
  encodeDir,
  encodeFilename,
  encodeStorePath,
  encodeStorePathPlain,
  storePathEncoder,
} from '../../../../src/main/engine/store/encoding.js';
import { missing, skipNote, FIXTURES, hex, prng, runHgPython, unhex } from '../../../support/store.js';

const golden = readFileSync(join(FIXTURES, 'store-names.tsv'), 'utf8')
  .split('\n')
  .filter((l) => l && !l.startsWith('#'))
  .map((l) => l.split('\t').map(unhex) as [string, string, string]);

describe('store-names.tsv (hg 6.3.2 golden)', () => {
  it('has the hard names', () => {
    expect(golden.length).toBeGreaterThan(100);
  });
  it.each(golden.map((g) => [hex(g[0]), ...g] as const))('%s', (_h, path, dirEncoded, onDisk) => {
    expect(encodeDir(path)).toBe(dirEncoded);
    expect(decodeDir(dirEncoded)).toBe(path);
    expect(encodeStorePath(path)).toBe(onDisk);
  });
});

describe('documented examples (store.py doctests, hg-stream-formats.md §7)', () => {
  it('encodedir / decodedir', () => {
    expect(encodeDir('data/foo.i')).toBe('data/foo.i');
    expect(encodeDir('data/foo.i/bla.i')).toBe('data/foo.i.hg/bla.i');
    expect(encodeDir('data/foo.i.hg/bla.i')).toBe('data/foo.i.hg.hg/bla.i');
    expect(encodeDir('data/x.hg.hg/y.i')).toBe('data/x.hg.hg.hg/y.i');
    expect(decodeDir('data/foo.i.hg.hg/bla.i')).toBe('data/foo.i.hg/bla.i');
    expect(decodeDir('data/foo.i.hg/bla.i')).toBe('data/foo.i/bla.i');
  });
  it('encodefilename / decodefilename', () => {
    expect(encodeFilename('foo.i/bar.d/bla.hg/hi:world?/HELLO')).toBe(
      'foo.i.hg/bar.d.hg/bla.hg.hg/hi~3aworld~3f/_h_e_l_l_o',
    );
    expect(decodeFilename('foo.i.hg/bar.d.hg/bla.hg.hg/hi~3aworld~3f/_h_e_l_l_o')).toBe(
      'foo.i/bar.d/bla.hg/hi:world?/HELLO',
    );
    expect(decodeFilename('the~07quick~adshot')).toBe('the\x07quick\xadshot');
    expect(decodeFilename('Upper')).toBeNull(); // capitals never appear encoded
    expect(decodeFilename('bad~zz')).toBeNull();
  });
  it('aux/dot rules: dotencode vs plain', () => {
    expect(encodeStorePath('data/.foo/aux.txt/txt.aux/con/prn/nul/foo..i')).toBe(
      'data/~2efoo/au~78.txt/txt.aux/co~6e/pr~6e/nu~6c/foo..i',
    );
    expect(encodeStorePathPlain('data/.com1com2/lpt9.lpt4.lpt1/conprn/com0/lpt0/foo./x.i')).toBe(
      'data/.com1com2/lp~749.lpt4.lpt1/conprn/com0/lpt0/foo~2e/x.i',
    );
    expect(encodeStorePath('data/foo. /x.i')).toBe('data/foo.~20/x.i');
    expect(encodeStorePath('data/ .foo/x.i')).toBe('data/~20.foo/x.i');
    expect(encodeStorePath('data/./x.i')).toBe('data/~2e/x.i');
    expect(encodeStorePathPlain('data/./x.i')).toBe('data/~2e/x.i');
    expect(encodeStorePathPlain('data/../x.i')).toBe('data/.~2e/x.i');
  });
  it('top-level store files pass through', () => {
    for (const name of [
      '00changelog.i',
      '00manifest.d',
      'phaseroots',
      'undo.backup.fncache',
      'meta/a/00manifest.i',
    ]) {
      expect(encodeStorePath(name)).toBe(name);
    }
  });
  it('rejects strings that are not byte strings', () => {
    expect(() => encodeStorePath('data/\u20ac.i')).toThrowError(/byte string/);
  });
  it('storePathEncoder follows localrepo.makestore', () => {
    const p = 'data/A./b.i';
    expect(storePathEncoder(new Set(['store', 'fncache', 'dotencode']))(p)).toBe('data/_a~2e/b.i');
    expect(storePathEncoder(new Set(['store', 'fncache']))(p)).toBe('data/_a~2e/b.i');
    expect(storePathEncoder(new Set(['store', 'fncache']))('data/.b.i')).toBe('data/.b.i');
    expect(storePathEncoder(new Set(['store']))(p)).toBe('data/_a./b.i');
    expect(storePathEncoder(new Set(['revlogv1']))('data/A.i/b.i')).toBe('data/A.i.hg/b.i');
  });
});

// ---------------------------------------------------------------------------------------------
// Differential test against the installed Mercurial (C pathencode and the pure-Python functions).

const SEGMENTS = [
  'aux',
  'AUX',
  'con',
  'con.txt',
  'prn',
  'nul',
  'com1',
  'com0',
  'com10',
  'lpt9',
  'lpt9.log',
  'LPT1',
  'auxx',
  'au',
  'a',
  '.hg',
  'x.hg',
  'x.i',
  'x.d',
  'y.i.hg',
  '.i',
  '.d',
  '.',
  '..',
  '...',
  ' ',
  ' x',
  'x ',
  'x.',
  '.x',
  'x. ',
  ' .x',
  'Upper',
  'MiXeD_Case',
  '_',
  '__',
  '~',
  'a~b',
  'q:colon',
  'sp ace',
  'tab\t',
  'caf\xc3\xa9',
  '\xff\xfe',
  '%20',
  'data',
  'meta',
  'dh',
  '00changelog.i',
  'fncache',
  'very-long-directory-name-that-exceeds-eight',
];

function randomName(rand: () => number): string {
  const pick = <T>(a: readonly T[]): T => a[Math.floor(rand() * a.length)]!;
  const depth = 1 + Math.floor(rand() * (rand() < 0.2 ? 30 : 6));
  const parts: string[] = [];
  for (let d = 0; d < depth; d++) {
    const r = rand();
    if (r < 0.45) parts.push(pick(SEGMENTS));
    else if (r < 0.75) {
      // random printable-ish bytes
      let s = '';
      const n = 1 + Math.floor(rand() * 12);
      for (let i = 0; i < n; i++) s += String.fromCharCode(0x20 + Math.floor(rand() * 0x5f));
      parts.push(s.replaceAll('/', '_'));
    } else if (r < 0.9) {
      // random bytes (NUL excluded: it cannot occur in hg file names, and the C encoder treats it
      // as a terminator; '/' excluded to keep segments non-empty)
      let s = '';
      const n = 1 + Math.floor(rand() * 10);
      for (let i = 0; i < n; i++) {
        let c = 1 + Math.floor(rand() * 255);
        if (c === 0x2f) c = 0x2e;
        s += String.fromCharCode(c);
      }
      parts.push(s);
    } else {
      parts.push('L'.repeat(1 + Math.floor(rand() * 200)));
    }
  }
  const suffix = pick(['.i', '.d', '.i', '.d', '', '.n', '.nd', '.sda', '.i.tmpcensored']);
  return pick(['data/', 'data/', 'data/', 'meta/']) + parts.join('/') + suffix;
}

const PY_ENCODERS = `
import sys
from mercurial import store
for line in sys.stdin:
    p = bytes.fromhex(line.strip())
    out = [
        store._pathencode(p),                  # C pathencode (what hg runs)
        store._hybridencode(p, True),          # pure-Python dotencode
        store._plainhybridencode(p),           # fncache without dotencode
        store.encodefilename(p),               # plain store
        store.encodedir(p),
        store.decodedir(p),
        store.decodefilename(store.encodefilename(p)),
    ]
    print(' '.join(x.hex() for x in out))
`;

describe.skipIf(missing('hg-python'))(
  `differential vs installed Mercurial store.py${skipNote('hg-python')}`,
  () => {
    it('matches C pathencode, _hybridencode, _plainhybridencode, encodefilename, encodedir for 6000 names', () => {
      const rand = prng(0x5eed);
      const names = new Set<string>();
      for (const g of golden) names.add(g[0]);
      while (names.size < 6000) names.add(randomName(rand));
      const list = [...names];
      const lines = runHgPython(PY_ENCODERS, list.map(hex));
      expect(lines.length).toBe(list.length);
      const mismatches: string[] = [];
      list.forEach((name, i) => {
        const [cPath, pyPath, plain, fname, dir, undir, roundTrip] = lines[i]!.split(' ').map(unhex);
        const ours = [
          encodeStorePath(name),
          encodeStorePath(name),
          encodeStorePathPlain(name),
          encodeFilename(name),
          encodeDir(name),
          decodeDir(name),
          decodeFilename(encodeFilename(name)),
        ];
        const theirs = [cPath, pyPath, plain, fname, dir, undir, roundTrip];
        ours.forEach((o, k) => {
          if (o !== theirs[k])
            mismatches.push(
              `${k} ${JSON.stringify(name)}: ours ${JSON.stringify(o)} hg ${JSON.stringify(theirs[k])}`,
            );
        });
      });
      expect(mismatches.slice(0, 10)).toEqual([]);
    });
  },
);
