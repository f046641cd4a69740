import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SluiceError } from '../errors.js';
import { parseFncache, serializeFncache } from './fncache.js';
import { missing, skipNote, FIXTURES, hex, runHgPython, unhex } from './test-support.js';

const b = (s: string): Buffer => Buffer.from(s, 'latin1');

function malformed(fn: () => unknown): SluiceError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(SluiceError);
    expect((e as SluiceError).code).toBe('MALFORMED');
    return e as SluiceError;
  }
  throw new Error('expected MALFORMED');
}

describe('parseFncache', () => {
  it('decodes the fixture fncaches (encodedir on disk, raw names out)', () => {
    const names = parseFncache(readFileSync(join(FIXTURES, 'default', 'fncache')));
    expect(names).toContain('data/dir.hg/file.txt.i');
    expect(names).toContain('data/foo.i/bar.i');
    expect(names).toContain('data/big.bin.d');
    expect(names).not.toContain('data/dir.hg.hg/file.txt.i');
    expect(new Set(names).size).toBe(names.length);
  });

  it('splits like bytes.splitlines and drops duplicates', () => {
    expect(parseFncache(b('data/a.i\ndata/b.i\r\ndata/c.i\rdata/a.i\n'))).toEqual([
      'data/a.i',
      'data/b.i',
      'data/c.i',
    ]);
    expect(parseFncache(b(''))).toEqual([]);
    const whole = Uint8Array.from(b('xxdata/a.i\nyy'));
    expect(parseFncache(new Uint8Array(whole.buffer, 2, 9))).toEqual(['data/a.i']);
  });

  it('rejects a missing final newline and empty lines like hg', () => {
    expect(malformed(() => parseFncache(b('data/a.i\ndata/b.i'))).message).toMatch(/newline/);
    expect(malformed(() => parseFncache(b('data/a.i\n\ndata/b.i\n'))).message).toMatch(/line 2/);
    expect(malformed(() => parseFncache(b('\n'))).message).toMatch(/line 1/);
  });

  it('keeps arbitrary bytes', () => {
    const names = ['data/caf\xc3\xa9.i', 'data/\xff\x01.d', 'data/x.hg/y.i', 'meta/a.d/00manifest.i'];
    expect(parseFncache(serializeFncache(names))).toEqual(names);
  });
});

describe('serializeFncache', () => {
  it('writes encodedir lines with a final newline (store.fncache.write)', () => {
    expect(serializeFncache(['data/foo.i/bar.i', 'data/x.hg/y.d']).toString('latin1')).toBe(
      'data/foo.i.hg/bar.i\ndata/x.hg.hg/y.d\n',
    );
    expect(serializeFncache([]).length).toBe(0);
  });
});

describe.skipIf(missing('hg-python'))(`vs Mercurial store.fncache${skipNote('hg-python')}`, () => {
  it('reads the fixture fncaches to the same set as hg', () => {
    const script = `
import sys
from mercurial import store, vfs as vfsmod
v = vfsmod.vfs(sys.stdin.readline().strip().encode())
f = store.fncache(v)
f.ensureloaded()
for e in sorted(f.entries):
    print(e.hex())
`;
    for (const repo of ['default', 'legacy']) {
      const theirs = runHgPython(script, [join(FIXTURES, repo)]).map(unhex);
      const ours = parseFncache(readFileSync(join(FIXTURES, repo, 'fncache'))).sort();
      expect(ours.map(hex)).toEqual(theirs.map(hex));
    }
  });
});
