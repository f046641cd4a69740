// hg's manifest fulltext cache (.hg/wcache/manifestfulltextcache) shared by `hg update` and Sluice's
// update, against real hg 6.3.2: Sluice builds its manifests from what hg cached (shown by a
// manifest revlog made unreadable: the update succeeds only through the cache), leaves the cache
// as hg would after the same updates, and ignores planted or damaged entries.
import { createHash } from 'node:crypto';
import { cpSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobContext } from '../../src/main/engine/context/job-context';
import { updateWorkingCopy, type UpdateStats } from '../../src/main/engine/operations/update/update';
import { hgSync, missing, removeDir, skipNote, tempDirMaker } from '../support/env';
import { workingCopyTree } from './working-copy-support';

function hg(args: string[], cwd: string): string {
  const r = hgSync(args, cwd);
  if (r.status !== 0) throw new Error(`hg ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

const cacheFile = (repo: string) => join(repo, '.hg', 'wcache', 'manifestfulltextcache');
const sluiceUpdate = (repo: string, rev: string): Promise<UpdateStats> =>
  updateWorkingCopy(repo, { rev }, new JobContext({ sink: () => {} }));
const NAMES = Array.from(
  { length: 200 },
  (_, i) => `${createHash('sha256').update(String(i)).digest('hex')}.txt`,
);
/**
 * Overwrites every revision's stored chunk of an inline revlog with 0xff (no compression header
 * hg or Sluice knows): the index stays readable, no text can be built from it.
 */
function spoilInlineChunks(path: string): void {
  const bytes = readFileSync(path);
  for (let at = 0; at < bytes.length;) {
    const length = bytes.readUInt32BE(at + 8);
    bytes.fill(0xff, at + 64, at + 64 + length);
    at += 64 + length;
  }
  writeFileSync(path, bytes);
}
/** `hg debugmanifestfulltextcache`: the cached nodes, most recent first, and their sizes */
const cacheListing = (repo: string) => hg(['debugmanifestfulltextcache'], repo);

describe.skipIf(missing('hg'))(`hg's manifest fulltext cache${skipNote('hg')}`, () => {
  const tempDir = tempDirMaker('mfcache');
  let work = '';
  /** revisions 0-4; the manifest revlog is inline (its chunks follow their entries in 00manifest.i) */
  let base = '';
  let n = 0;
  const copy = (): string => {
    const dest = join(work, `c${n++}`);
    cpSync(base, dest, { recursive: true, verbatimSymlinks: true });
    return dest;
  };

  beforeAll(() => {
    work = tempDir('repos');
    base = join(work, 'base');
    hg(['init', base], work);
    for (const [i, name] of NAMES.entries()) writeFileSync(join(base, name), `${i}\n`);
    hg(['commit', '-q', '-A', '-m', 'zero'], base);
    for (let r = 1; r <= 4; r++) {
      writeFileSync(join(base, NAMES[r]!), `changed in ${r}\n`);
      writeFileSync(join(base, `new-${r}.txt`), `${r}\n`);
      hg(['commit', '-q', '-A', '-m', `r${r}`], base);
    }
    expect(existsSync(join(base, '.hg', 'store', '00manifest.d'))).toBe(false);
    rmSync(cacheFile(base), { force: true });
    hg(['update', '-q', 'null'], base);
  }, 120_000);
  afterAll(() => removeDir(work));

  it('leaves the cache as hg does after the same updates; hg reads it', async () => {
    const byHg = copy();
    const bySluice = copy();
    for (const rev of ['3', '1', '4', '1', 'null', '2']) {
      hg(['update', '-q', '-r', rev], byHg);
      await sluiceUpdate(bySluice, rev);
      expect(readFileSync(cacheFile(bySluice))).toEqual(readFileSync(cacheFile(byHg)));
      expect(workingCopyTree(bySluice)).toEqual(workingCopyTree(byHg));
    }
    expect(cacheListing(bySluice)).toMatch(/^cache contains 4 manifest entries/);
    expect(cacheListing(bySluice)).toBe(cacheListing(byHg));
    hg(['update', '-q', '-r', '0'], bySluice);
    expect(hg(['status'], bySluice)).toBe('');
    hg(['verify', '-q'], bySluice);
  }, 60_000);

  it("builds its manifests from hg's cache: an unreadable manifest revlog is not read", async () => {
    const cached = copy();
    hg(['update', '-q', '-r', '1'], cached);
    hg(['update', '-q', '-r', '3'], cached);
    const uncached = copy();
    hg(['update', '-q', '-r', '3'], uncached);
    rmSync(cacheFile(uncached));
    const expected = copy();
    hg(['update', '-q', '-r', '1'], expected);
    for (const repo of [cached, uncached]) spoilInlineChunks(join(repo, '.hg', 'store', '00manifest.i'));
    // without the cache the same update has only the revlog's unreadable chunks
    await expect(sluiceUpdate(uncached, '1')).rejects.toThrow();
    const stats = await sluiceUpdate(cached, '1');
    expect(stats.manifestsFromCache).toBe(2);
    expect(workingCopyTree(cached)).toEqual(workingCopyTree(expected));
  }, 60_000);

  it('ignores a planted entry whose text is not its manifest, and writes the right one', async () => {
    const repo = copy();
    hg(['update', '-q', '-r', '2'], repo);
    const expected = copy();
    hg(['update', '-q', '-r', '4'], expected);
    // the entry of revision 4's manifest: a file node changed, the length kept
    const node4 = hg(['log', '-r', '4', '-T', '{manifest.node}'], repo);
    hg(['update', '-q', '-r', '4'], repo);
    hg(['update', '-q', '-r', '2'], repo);
    const bytes = readFileSync(cacheFile(repo));
    const listing = cacheListing(repo);
    expect(listing).toContain(node4);
    const text4 = Buffer.from(hg(['debugdata', '-m', '4'], repo), 'latin1');
    const at = bytes.indexOf(text4);
    expect(at).toBeGreaterThan(0);
    const line = bytes.indexOf(`${NAMES[1]}\0`, at) + NAMES[1]!.length + 1;
    bytes[line] = bytes[line] === 0x30 ? 0x31 : 0x30;
    writeFileSync(cacheFile(repo), bytes);
    const stats = await sluiceUpdate(repo, '4');
    expect(stats.manifestsFromCache).toBe(1); // revision 2's, not the planted one
    expect(workingCopyTree(repo)).toEqual(workingCopyTree(expected));
    expect(readFileSync(cacheFile(repo)).includes(text4)).toBe(true);
    expect(hg(['status'], repo)).toBe('');
    hg(['verify', '-q'], repo);
  }, 60_000);

  it('ignores a truncated or garbage cache file', async () => {
    for (const damage of [(b: Buffer) => b.subarray(0, 30), () => Buffer.from('garbage '.repeat(1000))]) {
      const repo = copy();
      hg(['update', '-q', '-r', '3'], repo);
      writeFileSync(cacheFile(repo), damage(readFileSync(cacheFile(repo))));
      const expected = copy();
      hg(['update', '-q', '-r', '1'], expected);
      const stats = await sluiceUpdate(repo, '1');
      expect(stats.manifestsFromCache).toBe(0);
      expect(workingCopyTree(repo)).toEqual(workingCopyTree(expected));
      expect(cacheListing(repo)).toMatch(/^cache contains 2 manifest entries/);
      expect(hg(['status'], repo)).toBe('');
    }
  }, 60_000);
});
