// hg's manifest fulltext cache format on bytes hg 6.3.2 wrote (test/fixtures/hg/wcache: a repository
// of six linear commits, updated to revisions 2, 5, 5, null and 4; `hg debugmanifestfulltextcache`
// listed the nodes below, most recent first), and the LRU changes hg's reads make.
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ManifestFulltextCache } from '../../../../src/main/engine/repo/manifest-fulltext-cache';
import { FIXTURES } from '../../../support/env';

const HG_BYTES = readFileSync(join(FIXTURES, 'wcache', 'manifestfulltextcache'));
/** as hg listed them, most recent first, with their sizes */
const HG_LIST: [string, number][] = [
  ['2d75916dcf43c07c4d88559bd45c628dd9f4c460', 268],
  ['9958a70998ec9aeb25f2241b29efaab72a82c997', 312],
  ['02e21c858d2807047e92f34cb1684e7049e60f47', 180],
  ['2e29f3a3182a737c88e5bcd7d070eed93a64b9fc', 224],
];
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const node = (h: string) => Buffer.from(h, 'hex');
const listed = (c: ManifestFulltextCache) => c.list().map((e) => hex(e.node));

describe('ManifestFulltextCache', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it("reads hg's entries oldest first, and writes back the same bytes", () => {
    const c = ManifestFulltextCache.parse(HG_BYTES);
    expect(listed(c)).toEqual(HG_LIST.map(([n]) => n).reverse());
    expect(c.list().map((e) => e.load()!.length)).toEqual(HG_LIST.map(([, s]) => s).reverse());
    // a manifest text: `path\0hex-node[flag]\n` lines
    expect(Buffer.from(c.peek(node(HG_LIST[0]![0]))!).toString('latin1')).toMatch(/^common\0[0-9a-f]{40}\n/);
    expect(c.dirty).toBe(false);
    expect(Buffer.concat([...c.serialize()])).toEqual(HG_BYTES);
  });

  it('keeps the entries before a damaged one, as hg does, and reads garbage as empty', () => {
    // the last entry's text cut short: the three before it stay
    const cut = ManifestFulltextCache.parse(HG_BYTES.subarray(0, HG_BYTES.length - 1));
    expect(listed(cut)).toEqual(
      HG_LIST.slice(1)
        .map(([n]) => n)
        .reverse(),
    );
    // a length running far past the end
    const bad = Buffer.from(HG_BYTES);
    bad.writeUInt32BE(0xffffffff, 20);
    expect(listed(ManifestFulltextCache.parse(bad))).toEqual([]);
    expect(listed(ManifestFulltextCache.parse(Buffer.from('not a cache')))).toEqual([]);
  });

  it("changes its order as hg's reads do, dirty only when the order or content changed", () => {
    const c = ManifestFulltextCache.parse(HG_BYTES);
    c.touch(node(HG_LIST[0]![0])); // already the newest
    expect(c.dirty).toBe(false);
    c.touch(node(HG_LIST[2]![0]));
    expect(c.dirty).toBe(true);
    expect(listed(c).at(-1)).toBe(HG_LIST[2]![0]);
    const fresh = node('11'.repeat(20));
    c.insert(fresh, Buffer.from('a\0' + '22'.repeat(20) + '\n'));
    // the capacity (format.manifestcachesize: 4) pushes the oldest out
    expect(listed(c)).toEqual([HG_LIST[1]![0], HG_LIST[0]![0], HG_LIST[2]![0], '11'.repeat(20)]);
  });

  it('reads a text from the file when asked for it; a text gone meanwhile ends the new file', () => {
    const hgDir = mkdtempSync(join(tmpdir(), 'mfcache-'));
    dirs.push(hgDir);
    mkdirSync(join(hgDir, 'wcache'));
    const file = join(hgDir, 'wcache', 'manifestfulltextcache');
    writeFileSync(file, HG_BYTES);
    const c = ManifestFulltextCache.read(hgDir);
    expect(listed(c)).toEqual(HG_LIST.map(([n]) => n).reverse());
    // the newest entry's text cut off after the headers were read
    truncateSync(file, HG_BYTES.length - 10);
    expect(c.peek(node(HG_LIST[0]![0]))).toBeUndefined();
    expect(Buffer.from(c.peek(node(HG_LIST[3]![0]))!)).toEqual(
      Buffer.from(ManifestFulltextCache.parse(HG_BYTES).peek(node(HG_LIST[3]![0]))!),
    );
    expect(Buffer.concat([...c.serialize()])).toEqual(HG_BYTES.subarray(0, HG_BYTES.length - 268 - 24));
    // thousands of empty entries (node i): scanning stops after 1,024, the newest 4 of them kept
    const many = Buffer.alloc(24 * 5000);
    for (let i = 0; i < 5000; i++) many.writeUInt32BE(i, 24 * i);
    const kept = ManifestFulltextCache.parse(many).list();
    expect(kept.map((e) => Buffer.from(e.node).readUInt32BE(0))).toEqual([1020, 1021, 1022, 1023]);
  });

  it('stages its file only when dirty, renamed into place by commit, never through a link', () => {
    const hgDir = mkdtempSync(join(tmpdir(), 'mfcache-'));
    dirs.push(hgDir);
    const c = ManifestFulltextCache.parse(HG_BYTES);
    expect(c.stage(hgDir)).toBeUndefined();
    c.touch(node(HG_LIST[3]![0]));
    const staged = c.stage(hgDir)!;
    expect(readdirSync(join(hgDir, 'wcache'))).toHaveLength(1); // the temporary only
    staged.commit();
    expect(readdirSync(join(hgDir, 'wcache'))).toEqual(['manifestfulltextcache']);
    expect(listed(ManifestFulltextCache.read(hgDir))).toEqual(listed(c));
    // discarded: the file stays as it was
    c.touch(node(HG_LIST[2]![0]));
    c.stage(hgDir)!.discard();
    expect(readdirSync(join(hgDir, 'wcache'))).toEqual(['manifestfulltextcache']);
    // a rename that fails (a directory holds the name) is let go, its temporary removed
    rmSync(join(hgDir, 'wcache', 'manifestfulltextcache'));
    mkdirSync(join(hgDir, 'wcache', 'manifestfulltextcache', 'x'), { recursive: true });
    c.stage(hgDir)!.commit();
    expect(readdirSync(join(hgDir, 'wcache'))).toEqual(['manifestfulltextcache']);
    // wcache a symbolic link: not read, not written
    const other = mkdtempSync(join(tmpdir(), 'mfcache-'));
    dirs.push(other);
    symlinkSync(join(hgDir, 'wcache'), join(other, 'wcache'));
    expect(listed(ManifestFulltextCache.read(other))).toEqual([]);
    expect(c.stage(other)).toBeUndefined();
  });
});
