import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
  appendFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeStorePath } from '../../../../src/main/engine/store/encoding';
import { Transaction, rollbackJournal, type RepoVfs } from '../../../../src/main/engine/repo/transaction';

const work = mkdtempSync(join(tmpdir(), 'sluice-tx-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
let n = 0;

function repo(): RepoVfs {
  const hgDir = join(work, `r${n++}`, '.hg');
  mkdirSync(join(hgDir, 'store', 'data'), { recursive: true });
  return { hgDir, storeDir: join(hgDir, 'store'), encode: encodeStorePath };
}

describe('Transaction (hg journal format)', () => {
  it('journals lengths before appends; abort truncates, unlinks new files, restores backups', async () => {
    const vfs = repo();
    const old = join(vfs.storeDir, 'data/old.i');
    writeFileSync(old, 'OLD');
    writeFileSync(join(vfs.storeDir, 'phaseroots'), '1 ' + 'ab'.repeat(20) + '\n');
    const tx = Transaction.open(vfs);
    tx.add('data/old.i', 3);
    appendFileSync(old, 'NEW');
    tx.add('data/NEW.i', 0);
    writeFileSync(join(vfs.storeDir, encodeStorePath('data/NEW.i')), 'x');
    tx.addBackup('phaseroots');
    writeFileSync(join(vfs.storeDir, 'phaseroots'), '');
    // hg's own journal format
    expect(readFileSync(join(vfs.storeDir, 'journal'), 'latin1')).toBe('data/old.i\x003\ndata/NEW.i\x000\n');
    expect(readFileSync(join(vfs.storeDir, 'journal.backupfiles'), 'latin1')).toBe(
      '2\n\x00phaseroots\x00journal.backup.phaseroots\x000\n',
    );
    await tx.abort();
    expect(readFileSync(old, 'latin1')).toBe('OLD');
    expect(existsSync(join(vfs.storeDir, 'data/_n_e_w.i'))).toBe(false);
    expect(readFileSync(join(vfs.storeDir, 'phaseroots'), 'latin1')).toMatch(/^1 ab/);
    expect(existsSync(join(vfs.storeDir, 'journal'))).toBe(false);
    expect(existsSync(join(vfs.storeDir, 'journal.backup.phaseroots'))).toBe(false);
  });

  it('addDeferred lines reach the journal at flushJournal (or the next add/replace/close), in order', async () => {
    const vfs = repo();
    const journal = join(vfs.storeDir, 'journal');
    const tx = Transaction.open(vfs);
    tx.addDeferred('data/a.i', 0);
    tx.addDeferred('data/b.i', 0);
    expect(readFileSync(journal, 'latin1')).toBe('');
    tx.flushJournal();
    expect(readFileSync(journal, 'latin1')).toBe('data/a.i\x000\ndata/b.i\x000\n');
    tx.addDeferred('data/c.i', 0);
    tx.add('data/d.i', 0);
    expect(readFileSync(journal, 'latin1')).toBe(
      'data/a.i\x000\ndata/b.i\x000\ndata/c.i\x000\ndata/d.i\x000\n',
    );
    tx.addDeferred('data/e.i', 0);
    tx.replace('data/a.i', 7);
    expect(readFileSync(journal, 'latin1').endsWith('data/e.i\x000\ndata/a.i\x007\n')).toBe(true);
    tx.addDeferred('data/f.i', 0);
    await tx.close();
    expect(readFileSync(join(vfs.storeDir, 'undo'), 'latin1').endsWith('data/f.i\x000\n')).toBe(true);
  });

  it('abort removes the store directories the transaction created (a first file under data/x/), not older ones', async () => {
    const vfs = repo();
    mkdirSync(join(vfs.storeDir, 'data', 'empty-before'));
    const tx = Transaction.open(vfs);
    for (const f of ['data/new/deep/a.i', 'data/new/b.i', 'data/empty-before/c.i']) {
      tx.add(f, 0);
      const p = join(vfs.storeDir, encodeStorePath(f));
      mkdirSync(join(p, '..'), { recursive: true });
      writeFileSync(p, 'x');
    }
    await tx.abort();
    expect(existsSync(join(vfs.storeDir, 'data', 'new'))).toBe(false);
    expect(existsSync(join(vfs.storeDir, 'data', 'empty-before'))).toBe(true);
    expect(existsSync(join(vfs.storeDir, 'data'))).toBe(true);
  });

  it('close runs finalizers in category order and removes the journal', async () => {
    const vfs = repo();
    const tx = Transaction.open(vfs);
    const order: string[] = [];
    tx.addFinalize('flush-fncache', () => void order.push('fncache'));
    tx.addFinalize('cl-1', () => void order.push('changelog'));
    await tx.close();
    expect(order).toEqual(['changelog', 'fncache']);
    expect(existsSync(join(vfs.storeDir, 'journal'))).toBe(false);
  });

  it('close leaves undo files as hg (undo, undo.backupfiles, undo.backup.*, journal.* renamed); undo:false keeps the earlier ones', async () => {
    const vfs = repo();
    writeFileSync(join(vfs.storeDir, 'phaseroots'), 'old');
    writeFileSync(join(vfs.hgDir, 'journal.desc'), '3\nunbundle\n');
    const tx = Transaction.open(vfs);
    tx.add('data/x.i', 0);
    tx.addBackup('phaseroots');
    writeFileSync(join(vfs.storeDir, 'phaseroots'), 'new');
    await tx.close();
    expect(readFileSync(join(vfs.storeDir, 'undo'), 'latin1')).toBe('data/x.i\x000\n');
    expect(readFileSync(join(vfs.storeDir, 'undo.backupfiles'), 'latin1')).toBe(
      '2\n\x00phaseroots\x00undo.backup.phaseroots\x000\n',
    );
    expect(readFileSync(join(vfs.storeDir, 'undo.backup.phaseroots'), 'latin1')).toBe('old');
    expect(readFileSync(join(vfs.hgDir, 'undo.desc'), 'latin1')).toBe('3\nunbundle\n');
    for (const f of ['journal', 'journal.backupfiles', 'journal.backup.phaseroots'])
      expect(existsSync(join(vfs.storeDir, f)), f).toBe(false);
    expect(existsSync(join(vfs.hgDir, 'journal.desc'))).toBe(false);

    const follow = Transaction.open(vfs, { undo: false });
    follow.add('data/y.i', 0);
    await follow.close();
    expect(readFileSync(join(vfs.storeDir, 'undo'), 'latin1')).toBe('data/x.i\x000\n');
    expect(existsSync(join(vfs.storeDir, 'journal'))).toBe(false);
  });

  it('refuses to start over an abandoned journal; rollbackJournal plays it back', () => {
    const vfs = repo();
    const f = join(vfs.storeDir, 'data/f.i');
    writeFileSync(f, '0123456789');
    writeFileSync(join(vfs.storeDir, 'journal'), 'data/f.i\x004\n');
    expect(() => Transaction.open(vfs)).toThrow(/abandoned transaction/);
    expect(rollbackJournal(vfs)).toBe(true);
    expect(readFileSync(f, 'latin1')).toBe('0123');
    expect(rollbackJournal(vfs)).toBe(false);
  });

  it('a hostile journal cannot reach outside the store', () => {
    const vfs = repo();
    const outside = join(work, 'victim');
    writeFileSync(outside, 'keep me');
    writeFileSync(join(vfs.storeDir, 'journal'), `../../../victim\x000\n/${outside}\x001\n`);
    rollbackJournal(vfs);
    expect(readFileSync(outside, 'latin1')).toBe('keep me');
  });
});
