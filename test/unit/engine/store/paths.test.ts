import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../../../src/main/engine/errors.js';
import { decodeDir } from '../../../../src/main/engine/store/encoding.js';
import {
  assertSafeEntryName,
  FILEFLAGS_REVLOG_MAIN,
  FILEFLAGS_VOLATILE,
  FILETYPE_FILELOG_OTHER,
  isSafeEntryName,
  MAX_ENTRY_NAME_LENGTH,
  revlogType,
  type StreamVfs,
} from '../../../../src/main/engine/store/paths.js';
import {
  FIXTURES,
  readPacked1Fixture,
  readStreamOutFixture,
  readStreamV2Fixture,
  unhex,
} from '../../../support/store.js';

function fixtureNames(): Array<[StreamVfs, string]> {
  const names: Array<[StreamVfs, string]> = [];
  for (const repo of ['default', 'legacy']) {
    const dir = join(FIXTURES, repo);
    for (const f of ['stream-v2.hg', 'stream-v2-phases.hg']) {
      for (const e of readStreamV2Fixture(readFileSync(join(dir, f))).entries) names.push([e.vfs, e.name]);
    }
    for (const e of readStreamOutFixture(readFileSync(join(dir, 'stream_out.bin'))).entries)
      names.push(['s', decodeDir(e.name)]);
    for (const e of readPacked1Fixture(readFileSync(join(dir, 'packed1.hg'))).entries)
      names.push(['s', decodeDir(e.name)]);
    for (const line of readFileSync(join(dir, 'fncache'), 'latin1').split('\n'))
      if (line) names.push(['s', decodeDir(line)]);
  }
  for (const line of readFileSync(join(FIXTURES, 'store-names.tsv'), 'utf8').split('\n')) {
    if (line && !line.startsWith('#')) names.push(['s', unhex(line.split('\t')[0]!)]);
  }
  return names;
}

const LEGITIMATE: Array<[StreamVfs, string]> = [
  ['s', 'data/dir.hg/file.txt.i'],
  ['s', 'data/foo.i/bar.i'],
  ['s', 'data/foo.i.hg/bar.i'],
  ['s', 'data/sp ace/q:colon.i'],
  ['s', 'data/caf\xc3\xa9.i'],
  ['s', 'data/a~b.d'],
  ['s', 'data/trail..i'],
  ['s', 'data/enddot./f.i'],
  ['s', 'data/endsp /f.i'],
  ['s', 'data/ lead space.i'],
  ['s', 'data/.hgtags.i'],
  ['s', 'data/.hg/x.i'],
  ['s', 'data/...i'],
  ['s', 'data/..x/y.i'],
  ['s', 'data/aux.txt.i'],
  ['s', 'data/x:y|z.i'],
  ['s', 'data/tab\there.i'],
  ['s', 'data/big.bin.d'],
  ['s', 'meta/dir/00manifest.i'],
  ['s', 'meta/dir/sub/00manifest.d'],
  ['s', '00changelog.i'],
  ['s', '00changelog.d'],
  ['s', '00changelog.n'],
  ['s', '00changelog.nd'],
  ['s', '00changelog-3c8f5a1b.nd'],
  ['s', '00manifest.i'],
  ['s', '00manifest.d'],
  ['s', '00manifest.n'],
  ['s', 'undo.backup.00changelog.n'],
  ['s', 'phaseroots'],
  ['s', 'obsstore'],
  ['s', 'data/' + 'x'.repeat(MAX_ENTRY_NAME_LENGTH - 7) + '.i'],
  ['c', 'branch2'],
  ['c', 'branch2-served'],
  ['c', 'branch2-served.hidden'],
  ['c', 'branch2-visible-hidden'],
  ['c', 'rbc-names-v1'],
  ['c', 'rbc-revs-v1'],
  ['c', 'hgtagsfnodes1'],
  ['c', 'tags2-visible'],
  ['c', 'tags2'],
];

const HOSTILE: Array<[StreamVfs, string, RegExp]> = [
  ['s', '', /empty/],
  ['s', '/etc/passwd.i', /absolute/],
  ['s', '/data/x.i', /absolute/],
  ['s', '../x.i', /'\.' or '\.\.'/],
  ['s', 'data/../../x.i', /'\.' or '\.\.'/],
  ['s', 'data/a/../../../hgrc.i', /'\.' or '\.\.'/],
  ['s', 'data/./x.i', /'\.' or '\.\.'/],
  ['s', 'data/..', /'\.' or '\.\.'/],
  ['s', 'data//x.i', /empty path segment/],
  ['s', 'data/x/', /empty path segment/],
  ['s', 'data\\..\\x.i', /backslash/],
  ['s', 'data/a\\b.i', /backslash/],
  ['s', 'data/a\0b.i', /NUL/],
  ['s', 'data/a\nb.i', /line break/],
  ['s', 'data/a\rb.i', /line break/],
  ['s', 'C:/x.i', /drive letter/],
  ['s', 'c:x.i', /drive letter/],
  ['s', 'data/x.txt', /not a revlog/],
  ['s', 'data/x', /not a revlog/],
  ['s', 'data', /not a revlog/],
  ['s', 'dh/x.i', /subdirectory/],
  ['s', 'store/00changelog.i', /subdirectory/],
  ['s', '.hg/hgrc', /subdirectory/],
  ['s', 'fncache', /not a revlog/],
  ['s', 'requires', /not a revlog/],
  ['s', 'lock', /not a revlog/],
  ['s', 'bookmarks', /not a revlog/],
  ['s', 'hgrc', /not a revlog/],
  ['s', 'x y.i', /limited/],
  ['s', '00changelog.i:stream', /limited/],
  ['s', 'data/\u20ac.i', /byte string/],
  ['s', 'data/' + 'x'.repeat(MAX_ENTRY_NAME_LENGTH) + '.i', /longer/],
  ['c', '', /empty/],
  ['c', '..', /'\.' or '\.\.'/],
  ['c', '.', /'\.' or '\.\.'/],
  ['c', '../hgrc', /'\.' or '\.\.'/],
  ['c', 'sub/branch2', /single/],
  ['c', '/tmp/x', /absolute/],
  ['c', 'branch2 served', /limited/],
  ['c', 'ab:c', /limited/],
  ['c', 'branch2.', /dot/],
  ['c', '.hidden', /dot/],
  ['c', 'con', /device/],
  ['c', 'AUX.txt', /device/],
  ['c', 'lpt1', /device/],
  ['c', 'c:', /drive letter/],
  ['c', 'caf\xc3\xa9', /limited/],
];

describe('assertSafeEntryName', () => {
  it('accepts every name in the hg-made fixture streams, fncaches and store-names.tsv', () => {
    const names = fixtureNames();
    expect(names.length).toBeGreaterThan(150);
    const rejected = names.filter(([vfs, n]) => !isSafeEntryName(vfs, n));
    expect(rejected).toEqual([]);
  });

  it.each(LEGITIMATE)('accepts %s %j', (vfs, name) => {
    expect(() => assertSafeEntryName(vfs, name)).not.toThrow();
  });

  it.each(HOSTILE)('rejects %s %j', (vfs, name, reason) => {
    let error: unknown;
    try {
      assertSafeEntryName(vfs, name);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SluiceError);
    const e = error as SluiceError;
    expect(e.code).toBe('UNSAFE_PATH');
    expect(e.message).toMatch(reason);
    expect(e.details).toMatchObject({ vfs, name });
  });

  it('names the entry in the message, readable when UTF-8', () => {
    expect(() => assertSafeEntryName('s', 'data/caf\xc3\xa9/../x.i')).toThrowError('"data/café/../x.i"');
    expect(() => assertSafeEntryName('c', '\xff/x')).toThrowError('"\xff/x"');
  });
});

describe('revlogType (store.revlog_type)', () => {
  it('classifies suffixes like hg', () => {
    expect(revlogType('00changelog.i')).toBe(FILEFLAGS_REVLOG_MAIN);
    expect(revlogType('data/x.i.tmpcensored')).toBe(FILEFLAGS_REVLOG_MAIN);
    expect(revlogType('00changelog.d')).toBe(FILETYPE_FILELOG_OTHER);
    expect(revlogType('00changelog.n')).toBe(FILETYPE_FILELOG_OTHER | FILEFLAGS_VOLATILE);
    expect(revlogType('00changelog-abcd.nd')).toBe(FILETYPE_FILELOG_OTHER | FILEFLAGS_VOLATILE);
    expect(revlogType('x.sda')).toBe(FILETYPE_FILELOG_OTHER);
    expect(revlogType('phaseroots')).toBeNull();
    expect(revlogType('fncache')).toBeNull();
  });
});
