// repo/vfs.ts, the opener for repository files written in place: a file that shares its inode
// with another name (a hard-linked clone's store file) is copied and renamed over itself before
// the first write, so the other name keeps its bytes; nothing is opened through a symbolic link.
import {
  chmodSync,
  closeSync,
  linkSync,
  mkdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { mergeObsmarkers } from '../../../../src/main/engine/repo/obsstore';
import { Transaction } from '../../../../src/main/engine/repo/transaction';
import { checkNlink, openForUpdate, openReplacing, writeAtomic } from '../../../../src/main/engine/repo/vfs';
import { storePathEncoder } from '../../../../src/main/engine/store/encoding';
import { hgSync, missing, removeDir, skipNote, tempDirMaker } from '../../../support/env';

const work = tempDirMaker('vfs')('unit');
afterAll(() => removeDir(work));
let n = 0;

/** `a` and a hard link `b` to it holding `text`, in a directory of their own. */
function linkedPair(text: string): { a: string; b: string } {
  const dir = join(work, `pair${++n}`);
  mkdirSync(dir);
  const a = join(dir, 'a');
  const b = join(dir, 'b');
  writeFileSync(a, text);
  linkSync(a, b);
  expect(statSync(a).nlink).toBe(2);
  return { a, b };
}

describe('openForUpdate (vfs.__call__ in an append or update mode)', () => {
  it('gives a hard-linked file an inode of its own first: the other name keeps its bytes', () => {
    const { a, b } = linkedPair('source\n');
    chmodSync(b, 0o640);
    const fd = openForUpdate(b);
    try {
      writeSync(fd, Buffer.from('appended\n'), 0, 9, 7);
    } finally {
      closeSync(fd);
    }
    expect(readFileSync(a, 'latin1')).toBe('source\n');
    expect(readFileSync(b, 'latin1')).toBe('source\nappended\n');
    expect(statSync(a).nlink).toBe(1);
    expect(statSync(b).nlink).toBe(1);
    // util.mktempcopy copies the permission bits
    expect(statSync(b).mode & 0o777).toBe(0o640);
  });

  it('opens a file with one name in place, and creates a missing one with its directories', () => {
    const dir = join(work, `single${++n}`);
    mkdirSync(dir);
    const f = join(dir, 'f');
    writeFileSync(f, 'x');
    const ino = statSync(f).ino;
    closeSync(openForUpdate(f));
    expect(statSync(f).ino).toBe(ino);
    const fresh = join(dir, 'new', 'deeper', 'g');
    closeSync(openForUpdate(fresh));
    expect(statSync(fresh).size).toBe(0);
  });

  it('refuses a symbolic link: its target is neither written nor copied', () => {
    const { a } = linkedPair('target\n');
    const link = join(work, `link${++n}`);
    symlinkSync(a, link);
    expect(() => openForUpdate(link)).toThrow();
    expect(readFileSync(a, 'latin1')).toBe('target\n');
    expect(statSync(a).nlink).toBe(2);
  });
});

describe('the write modes replace the name, never write through it', () => {
  it('openReplacing and writeAtomic leave a hard link’s other name as it was', () => {
    const one = linkedPair('keep\n');
    closeSync(openReplacing(one.b));
    expect(readFileSync(one.a, 'latin1')).toBe('keep\n');
    expect(readFileSync(one.b, 'latin1')).toBe('');
    const two = linkedPair('keep\n');
    writeAtomic(two.b, Buffer.from('new\n'));
    expect(readFileSync(two.a, 'latin1')).toBe('keep\n');
    expect(readFileSync(two.b, 'latin1')).toBe('new\n');
  });

  it('checkNlink: this filesystem reports hard links (util.checknlink)', () => {
    expect(checkNlink(work)).toBe(true);
  });
});

describe.skipIf(missing('hg'))(`obsstore appended in a hard-linked store${skipNote('hg')}`, () => {
  const EVOLVE = ['--config', 'experimental.evolution=all'];
  const hg = (args: string[]): void => {
    const r = hgSync([...EVOLVE, ...args]);
    if (r.status !== 0) throw new Error(`hg ${args.join(' ')}: ${r.stderr}`);
  };

  it("the source's obsstore keeps its bytes; the clone's gets the new marker; a rollback restores it", async () => {
    const src = join(work, 'obs-src');
    const other = join(work, 'obs-other');
    hg(['init', src]);
    hg(['init', other]);
    hg(['-R', src, 'debugobsolete', '-d', '0 0', 'a'.repeat(40), 'b'.repeat(40)]);
    hg(['-R', other, 'debugobsolete', '-d', '0 0', 'c'.repeat(40), 'd'.repeat(40)]);
    const store = join(work, 'obs-clone', '.hg', 'store');
    mkdirSync(store, { recursive: true });
    linkSync(join(src, '.hg', 'store', 'obsstore'), join(store, 'obsstore'));
    const before = readFileSync(join(src, '.hg', 'store', 'obsstore'));
    // the bundle2 obsmarkers part's payload is what an obsstore holds: version byte, markers
    const payload = readFileSync(join(other, '.hg', 'store', 'obsstore'));
    const vfs = { hgDir: join(store, '..'), storeDir: store, encode: storePathEncoder(new Set(['store'])) };

    const aborted = Transaction.open(vfs, { undo: false });
    expect(mergeObsmarkers(store, aborted, payload)).toBe(1);
    await aborted.abort();
    expect(readFileSync(join(store, 'obsstore')).equals(before)).toBe(true);

    const kept = Transaction.open(vfs, { undo: false });
    expect(mergeObsmarkers(store, kept, payload)).toBe(1);
    await kept.close();
    expect(readFileSync(join(src, '.hg', 'store', 'obsstore')).equals(before)).toBe(true);
    expect(readFileSync(join(store, 'obsstore')).length).toBe(before.length + payload.length - 1);
  });
});
