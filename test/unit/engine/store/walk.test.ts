import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../../../src/main/engine/errors.js';
import { encodeDir, encodeStorePath } from '../../../../src/main/engine/store/encoding.js';
import { serializeFncache } from '../../../../src/main/engine/store/fncache.js';
import {
  CACHE_FILES_TO_COPY,
  listStreamFiles,
  type StoreFile,
} from '../../../../src/main/engine/store/walk.js';
import {
  missing,
  skipNote,
  extractFixtureRepo,
  FIXTURES,
  hg,
  scratchArea,
  prng,
  readPacked1Fixture,
  readStreamOutFixture,
  readStreamV2Fixture,
  type FixtureEntry,
} from '../../../support/store.js';

const { dir: freshDir } = scratchArea('walk');

const triple = (f: StoreFile | FixtureEntry): [string, string, number] => [f.vfs, f.name, f.size];
const v1Wire = (f: StoreFile): [string, string, number] => [f.vfs, encodeDir(f.name), f.size];

describe.each(['default', 'legacy'] as const)(
  'fixture repo %s: same entries as the hg-made streams',
  (shape) => {
    const fixture = (f: string): Buffer => readFileSync(join(FIXTURES, shape, f));

    it('v2 (publishing) = stream-v2.hg', async () => {
      const repo = extractFixtureRepo(shape, freshDir(shape));
      const expected = readStreamV2Fixture(fixture('stream-v2.hg'));
      const ours = await listStreamFiles(repo, { version: 'v2' });
      expect(ours.files.map(triple)).toEqual(expected.entries.map(triple));
      expect(ours.bytes).toBe(expected.bytes);
      expect(ours.requirements).toEqual(expected.requirements);
      // every listed path is the file on disk with that size
      for (const f of ours.files) expect(readFileSync(f.path).length).toBe(f.size);
      expect(ours.files.filter((f) => f.full).map((f) => f.vfs)).toEqual(
        ours.files.filter((f) => f.vfs === 'c').map(() => 'c'),
      );
    });

    it('v2 with phases.publish=false in the repo hgrc = stream-v2-phases.hg', async () => {
      const repo = extractFixtureRepo(shape, freshDir(shape));
      writeFileSync(join(repo, '.hg', 'hgrc'), '[phases]\npublish = false\n');
      const expected = readStreamV2Fixture(fixture('stream-v2-phases.hg'));
      const ours = await listStreamFiles(repo, { version: 'v2' });
      expect(ours.files.map(triple)).toEqual(expected.entries.map(triple));
      expect(ours.bytes).toBe(expected.bytes);
      expect(ours.files.find((f) => f.name === 'phaseroots')).toMatchObject({ vfs: 's', full: true });
      // the option overrides the config
      const published = await listStreamFiles(repo, { version: 'v2', publishing: true });
      expect(published.files.map(triple)).toEqual(
        readStreamV2Fixture(fixture('stream-v2.hg')).entries.map(triple),
      );
    });

    it("v1 = stream_out.bin and packed1.hg (names encodedir'd on the wire)", async () => {
      const repo = extractFixtureRepo(shape, freshDir(shape));
      writeFileSync(join(repo, '.hg', 'hgrc'), '[phases]\npublish = false\n'); // v1 ignores phases
      const ours = await listStreamFiles(repo, { version: 'v1' });
      const streamOut = readStreamOutFixture(fixture('stream_out.bin'));
      const packed1 = readPacked1Fixture(fixture('packed1.hg'));
      expect(ours.files.map(v1Wire)).toEqual(streamOut.entries.map(triple));
      expect(ours.files.map(v1Wire)).toEqual(packed1.entries.map(triple));
      expect(ours.bytes).toBe(streamOut.bytes);
      expect(ours.bytes).toBe(packed1.bytes);
      expect(ours.requirements).toEqual(packed1.requirements);
      expect(ours.files.every((f) => f.vfs === 's' && !f.full)).toBe(true);
    });
  },
);

describe('store edge cases (fixture copy)', () => {
  it('skips fncache entries whose file is missing or empty, and stray top-level files', async () => {
    const repo = extractFixtureRepo('default', freshDir('edge'));
    const store = join(repo, '.hg', 'store');
    rmSync(join(store, encodeStorePath('data/aux.txt.i')));
    truncateSync(join(store, encodeStorePath('data/con.txt.i')), 0);
    writeFileSync(join(store, 'copy of 00manifest.i'), 'junk'); // hg would send it; no client accepts it
    writeFileSync(join(store, 'undo.backup.00changelog.i'), 'x'); // hg sends this one too (issue6542)
    writeFileSync(join(store, '00manifest.n'), 'docket');
    symlinkSync(join(store, '00manifest.i'), join(store, 'link.i')); // not a regular file: skipped (lstat kind)
    const ours = await listStreamFiles(repo, { version: 'v1' });
    const names = ours.files.map((f) => f.name);
    expect(names).not.toContain('data/aux.txt.i');
    expect(names).not.toContain('data/con.txt.i');
    expect(names).not.toContain('copy of 00manifest.i');
    expect(names).not.toContain('link.i');
    // volatile first (reversed tuple sort), then .i files reversed by name
    expect(names.slice(-4)).toEqual([
      '00manifest.n',
      'undo.backup.00changelog.i',
      '00manifest.i',
      '00changelog.i',
    ]);
    expect(ours.files.find((f) => f.name === '00manifest.n')!.full).toBe(true);
  });

  it('refuses a fncache entry no receiver may accept, and a corrupt fncache', async () => {
    const repo = extractFixtureRepo('default', freshDir('edge'));
    const store = join(repo, '.hg', 'store');
    const hostile = 'data/../../hgrc.i';
    mkdirSync(join(store, 'data', '~2e~2e', '~2e~2e'), { recursive: true });
    writeFileSync(join(store, encodeStorePath(hostile)), 'x');
    writeFileSync(
      join(store, 'fncache'),
      Buffer.concat([readFileSync(join(store, 'fncache')), serializeFncache([hostile])]),
    );
    await expect(listStreamFiles(repo, { version: 'v2' })).rejects.toMatchObject({ code: 'UNSAFE_PATH' });
    writeFileSync(join(store, 'fncache'), 'data/a.i');
    await expect(listStreamFiles(repo, { version: 'v2' })).rejects.toMatchObject({ code: 'MALFORMED' });
  });

  it('lists nothing but caches for an empty repository, and reports obsstore', async () => {
    const repo = freshDir('empty');
    mkdirSync(join(repo, '.hg', 'store'), { recursive: true });
    mkdirSync(join(repo, '.hg', 'cache'));
    writeFileSync(join(repo, '.hg', 'requires'), 'dotencode\nfncache\nrevlogv1\nstore\n');
    writeFileSync(join(repo, '.hg', 'cache', 'tags2'), '');
    writeFileSync(join(repo, '.hg', 'cache', 'unknown-cache'), 'x');
    writeFileSync(join(repo, '.hg', 'store', 'obsstore'), '\x01marker');
    const v2 = await listStreamFiles(repo, { version: 'v2', includeObsmarkers: true });
    expect(v2.files.map(triple)).toEqual([
      ['s', 'obsstore', 7],
      ['c', 'tags2', 0], // exists: streamed even when empty
    ]);
    expect(v2.obsstoreSize).toBe(7);
    expect((await listStreamFiles(repo, { version: 'v1' })).files).toEqual([]);
    expect((await listStreamFiles(repo, { version: 'v2' })).files.map((f) => f.name)).toEqual(['tags2']);
  });

  it('lists the same with the async stat pool as with sliced sync stats', async () => {
    const repo = extractFixtureRepo('default', freshDir('strategy'));
    writeFileSync(join(repo, '.hg', 'hgrc'), '[phases]\npublish = false\n');
    for (const version of ['v1', 'v2'] as const) {
      const auto = await listStreamFiles(repo, { version });
      for (const concurrency of [1, 3, 64]) {
        expect(await listStreamFiles(repo, { version, statStrategy: 'async', concurrency })).toEqual(auto);
      }
    }
  });

  it('reports NOT_A_REPO and honours an aborted signal', async () => {
    await expect(listStreamFiles(freshDir('none'), { version: 'v1' })).rejects.toBeInstanceOf(SluiceError);
    const repo = extractFixtureRepo('default', freshDir('abort'));
    const ac = new AbortController();
    ac.abort();
    await expect(listStreamFiles(repo, { version: 'v1', signal: ac.signal })).rejects.toMatchObject({
      code: 'CANCELLED',
    });
    await expect(
      listStreamFiles(repo, { version: 'v1', signal: ac.signal, statStrategy: 'async' }),
    ).rejects.toMatchObject({ code: 'CANCELLED' });
  });

  it('knows cacheutil.cachetocopy', () => {
    expect(CACHE_FILES_TO_COPY).toEqual([
      'branch2',
      'branch2-visible',
      'branch2-visible-hidden',
      'branch2-served.hidden',
      'branch2-served',
      'branch2-immutable',
      'branch2-base',
      'rbc-names-v1',
      'rbc-revs-v1',
      'tags2',
      'tags2-visible',
      'tags2-visible-hidden',
      'tags2-served.hidden',
      'tags2-served',
      'tags2-immutable',
      'tags2-base',
      'hgtagsfnodes1',
    ]);
  });
});

// ---------------------------------------------------------------------------------------------
// Live hg: repositories the fixtures do not cover (split changelog and manifest, persistent
// nodemap, every cache file, treemanifest, the old store layouts), compared with what hg streams.

/** Files with long random names: a manifest and changelog big enough to be split into .i + .d. */
function populate(dir: string, count: number, seed: number): void {
  const rand = prng(seed);
  const hexName = (n: number): string =>
    Array.from({ length: n }, () => Math.floor(rand() * 16).toString(16)).join('');
  for (let i = 0; i < count; i++) {
    const sub = join(dir, `Dir${i % 7}`, `sub.i`, i % 3 === 0 ? 'x.hg' : 'y');
    mkdirSync(sub, { recursive: true });
    writeFileSync(join(sub, `${hexName(i % 5 === 0 ? 150 : 60)} Name~${i}.TXT`), `${i}\n`);
  }
}

function hgStreamEntries(
  repo: string,
  extraConfig: string[] = [],
): { v1: FixtureEntry[]; v2: FixtureEntry[]; v1reqs: string[] } {
  const packed = join(repo, '..', 'packed1.hg');
  const v2 = join(repo, '..', 'v2.hg');
  hg(['debugcreatestreamclonebundle', '-q', ...extraConfig, packed], { cwd: repo });
  // cg.version=03 only satisfies `hg bundle`'s changegroup check for treemanifest repositories;
  // the bundle holds nothing but the stream2 part either way.
  const requires = [join(repo, '.hg', 'requires'), join(repo, '.hg', 'store', 'requires')];
  const tree = requires.some((f) => existsSync(f) && readFileSync(f, 'latin1').includes('treemanifest'));
  hg(['bundle', '-q', '-a', '-t', `none-v2;stream=v2${tree ? ';cg.version=03' : ''}`, ...extraConfig, v2], {
    cwd: repo,
  });
  const p = readPacked1Fixture(readFileSync(packed));
  return { v1: p.entries, v2: readStreamV2Fixture(readFileSync(v2)).entries, v1reqs: p.requirements };
}

async function expectSameAsHg(repo: string, extraConfig: string[] = []): Promise<StoreFile[]> {
  const theirs = hgStreamEntries(repo, extraConfig);
  const v1 = await listStreamFiles(repo, { version: 'v1' });
  const v2 = await listStreamFiles(repo, {
    version: 'v2',
    publishing: !extraConfig.includes('phases.publish=false'),
  });
  expect(v1.files.map(v1Wire)).toEqual(theirs.v1.map(triple));
  expect(v1.requirements).toEqual(theirs.v1reqs);
  expect(v2.files.map(triple)).toEqual(theirs.v2.map(triple));
  return v2.files;
}

describe.skipIf(missing('hg'))(`vs hg 6.3.2 on live repositories${skipNote('hg')}`, () => {
  it('split changelog and manifest (.d files), hashed names, every cache file, persistent nodemap', async () => {
    const parent = freshDir('split');
    const repo = join(parent, 'repo');
    // Revlogs split into .i + .d past revlog._maxinline (128 KiB); an extension lowers it so a
    // small repository has split changelog, manifest and filelogs. Without the Rust extensions hg
    // refuses persistent-nodemap unless the slow path is allowed.
    writeFileSync(join(parent, 'smallinline.py'), 'from mercurial import revlog\nrevlog._maxinline = 512\n');
    const slowPath = ['--config', 'storage.revlog.persistent-nodemap.slow-path=allow'];
    hg(['init', '--config', 'format.use-persistent-nodemap=yes', ...slowPath, repo]);
    writeFileSync(
      join(repo, '.hg', 'hgrc'),
      `[storage]\nrevlog.persistent-nodemap.slow-path = allow\n[extensions]\nsmallinline = ${join(parent, 'smallinline.py')}\n`,
    );
    populate(repo, 80, 11);
    hg(['commit', '-q', '-A', '-m', 'many files', '-d', '1700000000 0'], { cwd: repo });
    for (let i = 1; i <= 4; i++) {
      writeFileSync(join(repo, 'Dir0', 'changed'), 'x'.repeat(300 * i));
      hg(['commit', '-q', '-A', '-m', `commit ${i}`, '-d', `170000000${i} 0`], { cwd: repo });
    }
    hg(['tag', '-q', '-d', '1700000002 0', 'v1'], { cwd: repo });
    hg(['phase', '-q', '--draft', '--force', '-r', 'tip'], { cwd: repo });
    hg(['debugupdatecaches', '-q'], { cwd: repo });
    const store = readdirSync(join(repo, '.hg', 'store'));
    expect(store).toEqual(
      expect.arrayContaining(['00changelog.d', '00manifest.d', '00changelog.n', '00manifest.n']),
    );
    const files = await expectSameAsHg(repo);
    const top = files.filter((f) => f.vfs === 's' && !f.name.includes('/')).map((f) => f.name);
    expect(top.slice(0, 2).every((n) => n.endsWith('.n') || n.endsWith('.nd'))).toBe(true);
    expect(top.slice(-4)).toEqual(['00manifest.d', '00changelog.d', '00manifest.i', '00changelog.i']);
    expect(files.some((f) => f.name.endsWith('.nd') && f.full)).toBe(true);
    expect(files.filter((f) => f.vfs === 'c').length).toBeGreaterThan(4);
    await expectSameAsHg(repo, ['--config', 'phases.publish=false']);
  });

  it('treemanifest (meta/ revlogs)', async () => {
    const repo = join(freshDir('tree'), 'repo');
    hg(['init', '--config', 'experimental.treemanifest=1', repo]);
    populate(repo, 40, 3);
    hg(['commit', '-q', '-A', '-m', 'tree', '-d', '1700000000 0'], { cwd: repo });
    const files = await expectSameAsHg(repo);
    expect(files.some((f) => f.name.startsWith('meta/') && f.name.endsWith('/00manifest.i'))).toBe(true);
  });

  it.each([
    ['store without fncache', ['--config', 'format.usefncache=false']],
    ['fncache without dotencode', ['--config', 'format.dotencode=false']],
    ['no store (pre-0.9.2 layout)', ['--config', 'format.usestore=false']],
  ])('%s', async (_label, initConfig) => {
    const repo = join(freshDir('layout'), 'repo');
    hg(['init', ...initConfig, repo]);
    populate(repo, 30, 5);
    mkdirSync(join(repo, '.lead', 'trail. '), { recursive: true });
    writeFileSync(join(repo, '.lead', 'trail. ', 'AUX.c'), 'x');
    writeFileSync(join(repo, 'caf\u00e9 d.i'), 'x');
    hg(['commit', '-q', '-A', '-m', 'layout', '-d', '1700000000 0'], { cwd: repo });
    await expectSameAsHg(repo);
  });

  it('a plain `store` repository with a directory named `x.i.hg`: hg aborts, so does Sluice', async () => {
    const repo = join(freshDir('quirk'), 'repo');
    hg(['init', '--config', 'format.usefncache=false', repo]);
    mkdirSync(join(repo, 'q.i.hg'));
    writeFileSync(join(repo, 'q.i.hg', 'z'), 'x');
    hg(['commit', '-q', '-A', '-m', 'quirk', '-d', '1700000000 0'], { cwd: repo });
    const theirs = hg(['debugcreatestreamclonebundle', '-q', join(repo, '..', 'p.hg')], {
      cwd: repo,
      allowFail: true,
    });
    expect(theirs.status).not.toBe(0); // encodedstore decodes `.i.hg/` twice and cannot open the file
    await expect(listStreamFiles(repo, { version: 'v1' })).rejects.toMatchObject({ code: 'MALFORMED' });
  });
});
