import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../../../src/main/engine/errors.js';
import {
  FncacheAdditions,
  parseFncache,
  serializeFncache,
} from '../../../../src/main/engine/store/fncache.js';
import { missing, skipNote, FIXTURES, hex, runHgPython, unhex } from '../../../support/store.js';

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

describe('FncacheAdditions (append mode)', () => {
  it('finds names in the bytes (encodedir lines, first and later lines) and appends only new ones', () => {
    const raw = b('data/a.i\ndata/dir.hg.hg/x.i\ndata/foo.i.hg/bar.i\n');
    const f = new FncacheAdditions(raw);
    expect(f.add('data/a.i')).toBe(false);
    expect(f.add('data/dir.hg/x.i')).toBe(false);
    expect(f.add('data/foo.i/bar.i')).toBe(false);
    // a prefix or suffix of an entry is not the entry
    expect(f.add('data/a')).toBe(true);
    expect(f.add('ata/a.i')).toBe(true);
    expect(f.changed).toBe(true);
    expect(f.add('data/new.hg/y.i')).toBe(true);
    expect(f.add('data/new.hg/y.i')).toBe(false);
    const out = f.serialize();
    expect(out.subarray(0, raw.length).equals(raw)).toBe(true);
    expect(out.subarray(raw.length).toString('latin1')).toBe('data/a\nata/a.i\ndata/new.hg.hg/y.i\n');
    expect(new Set(parseFncache(out))).toEqual(
      new Set(['data/a.i', 'data/dir.hg/x.i', 'data/foo.i/bar.i', 'data/a', 'ata/a.i', 'data/new.hg/y.i']),
    );
  });

  it('answers like the parsed set past its scan budget, with CRLF lines, and for an empty file', () => {
    const names = Array.from({ length: 100 }, (_, i) => `data/f${i}.i`);
    const f = new FncacheAdditions(serializeFncache(names));
    for (const n of names) expect(f.add(n)).toBe(false);
    expect(f.add('data/f100.i')).toBe(true);
    const crlf = new FncacheAdditions(b('data/a.i\r\ndata/b.i\n'));
    expect(crlf.add('data/a.i')).toBe(false);
    expect(crlf.changed).toBe(false);
    const empty = new FncacheAdditions(Buffer.alloc(0));
    expect(empty.add('data/a.i')).toBe(true);
    expect(empty.serialize().toString('latin1')).toBe('data/a.i\n');
  });

  it('refuses what store.fncache._load refuses', () => {
    malformed(() => new FncacheAdditions(b('data/a.i')));
    malformed(() => new FncacheAdditions(b('data/a.i\n\ndata/b.i\n')));
  });
});
