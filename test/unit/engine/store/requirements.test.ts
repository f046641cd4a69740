import { mkdirSync, readFileSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SluiceError } from '../../../../src/main/engine/errors.js';
import {
  bookmarksPath,
  cloneRequirements,
  DEFAULT_NEW_REPO_REQUIREMENTS,
  locateRepository,
  readRequirements,
  splitRequirements,
  STREAM_FIXED_REQUIREMENTS,
  streamRequirements,
  SUPPORTED_REQUIREMENTS,
  unsupportedRequirements,
  WORKING_DIR_REQUIREMENTS,
  writeRequirements,
} from '../../../../src/main/engine/store/requirements.js';
import {
  missing,
  skipNote,
  extractFixtureRepo,
  hg,
  makeTempDir,
  removeDir,
  runHgPython,
} from '../../../support/store.js';

let tmp: string;
beforeEach(() => {
  tmp = makeTempDir('req');
});
afterEach(() => removeDir(tmp));

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(SluiceError);
    return (e as SluiceError).code;
  }
  return 'no error';
}

describe('pure functions', () => {
  it('streamRequirements = sorted ∩ STREAM_FIXED', () => {
    expect(
      streamRequirements([
        'store',
        'revlogv1',
        'sparserevlog',
        'share-safe',
        'generaldelta',
        'revlog-compression-zstd',
        'fncache',
      ]),
    ).toEqual(['generaldelta', 'revlog-compression-zstd', 'revlogv1', 'sparserevlog']);
    expect(streamRequirements(new Set(['revlogv1', 'store', 'fncache', 'dotencode']))).toEqual(['revlogv1']);
  });
  it('cloneRequirements keeps the local layout choices and takes the stream formats', () => {
    expect(cloneRequirements(['revlogv1'])).toEqual([
      'dotencode',
      'fncache',
      'revlogv1',
      'share-safe',
      'store',
    ]);
    expect(
      cloneRequirements(['generaldelta', 'revlog-compression-zstd', 'revlogv1', 'sparserevlog']),
    ).toEqual([
      'dotencode',
      'fncache',
      'generaldelta',
      'revlog-compression-zstd',
      'revlogv1',
      'share-safe',
      'sparserevlog',
      'store',
    ]);
  });
  it('unsupportedRequirements', () => {
    expect(
      unsupportedRequirements(['revlogv1', 'exp-revlogv2.2', 'lfs', 'store', 'bookmarksinstore']),
    ).toEqual(['bookmarksinstore', 'exp-revlogv2.2', 'lfs']);
    expect(unsupportedRequirements(DEFAULT_NEW_REPO_REQUIREMENTS)).toEqual([]);
  });
  it('splitRequirements follows scmutil.filterrequirements', () => {
    expect(splitRequirements(['store', 'share-safe', 'dirstate-v2', 'revlogv1'])).toEqual({
      wc: ['dirstate-v2', 'share-safe'],
      store: ['revlogv1', 'store'],
    });
    expect(splitRequirements(['store', 'revlogv1', 'dirstate-v2'])).toEqual({
      wc: ['dirstate-v2', 'revlogv1', 'store'],
      store: null,
    });
  });
});

describe('writeRequirements / readRequirements', () => {
  it('writes the share-safe split sorted and newline-terminated, and reads it back', async () => {
    const hgDir = join(tmp, '.hg');
    mkdirSync(hgDir);
    await writeRequirements(hgDir, ['store', 'revlogv1', 'share-safe', 'fncache', 'dotencode']);
    expect(readFileSync(join(hgDir, 'requires'), 'latin1')).toBe('share-safe\n');
    expect(readFileSync(join(hgDir, 'store', 'requires'), 'latin1')).toBe(
      'dotencode\nfncache\nrevlogv1\nstore\n',
    );
    expect([...(await readRequirements(tmp))].sort()).toEqual([
      'dotencode',
      'fncache',
      'revlogv1',
      'share-safe',
      'store',
    ]);
    // without share-safe: one file, stale store/requires removed
    await writeRequirements(hgDir, ['store', 'revlogv1', 'fncache']);
    expect(readFileSync(join(hgDir, 'requires'), 'latin1')).toBe('fncache\nrevlogv1\nstore\n');
    expect(existsSync(join(hgDir, 'store', 'requires'))).toBe(false);
    expect((await locateRepository(tmp)).storeDir).toBe(join(hgDir, 'store'));
  });
  it('refuses to write a requirement that would corrupt the file', async () => {
    mkdirSync(join(tmp, '.hg'));
    expect(await codeOf(writeRequirements(join(tmp, '.hg'), ['revlogv1', 'evil\nstore']))).toBe('MALFORMED');
    expect(await codeOf(writeRequirements(join(tmp, '.hg'), ['']))).toBe('MALFORMED');
  });
  it('reports a missing or corrupt repository', async () => {
    expect(await codeOf(readRequirements(tmp))).toBe('NOT_A_REPO');
    mkdirSync(join(tmp, '.hg'));
    expect([...(await readRequirements(tmp))]).toEqual([]); // no requires file: no requirements (hg 0.9)
    expect((await locateRepository(tmp)).storeDir).toBe(join(tmp, '.hg')); // no `store`: revlogs in .hg
    writeFileSync(join(tmp, '.hg', 'requires'), 'revlogv1\n\nstore\n');
    expect(await codeOf(readRequirements(tmp))).toBe('MALFORMED');
    writeFileSync(join(tmp, '.hg', 'requires'), 'share-safe\n');
    expect(await codeOf(readRequirements(tmp))).toBe('NOT_A_REPO');
  });
  it('reads both fixture repositories', async () => {
    const d = extractFixtureRepo('default', join(tmp));
    expect([...(await readRequirements(d))].sort()).toEqual([...DEFAULT_NEW_REPO_REQUIREMENTS]);
    const l = join(tmp, 'legacy');
    mkdirSync(l);
    extractFixtureRepo('legacy', l);
    expect([...(await readRequirements(l))].sort()).toEqual(['dotencode', 'fncache', 'revlogv1', 'store']);
  });
});

describe.skipIf(missing('hg-python'))(
  `vs Mercurial's requirements.py / localrepo.py${skipNote('hg-python')}`,
  () => {
    it('constants and defaults match hg 6.3.2', () => {
      const [fixed, wdir, defaults, supported] = runHgPython(
        `
from mercurial import requirements as r, localrepo, ui as uimod
u = uimod.ui.load()
for s in (r.STREAM_FIXED_REQUIREMENTS, r.WORKING_DIR_REQUIREMENTS,
          localrepo.newreporequirements(u, localrepo.defaultcreateopts(u)),
          localrepo.gathersupportedrequirements(u)):
    print(' '.join(sorted(x.decode() for x in s)))
`,
        [],
      ).map((l) => l.split(' '));
      expect([...STREAM_FIXED_REQUIREMENTS].sort()).toEqual(fixed);
      expect([...WORKING_DIR_REQUIREMENTS].sort()).toEqual(wdir);
      expect([...DEFAULT_NEW_REPO_REQUIREMENTS]).toEqual(defaults);
      // everything Sluice claims is a requirement hg knows
      expect([...SUPPORTED_REQUIREMENTS].filter((x) => !supported!.includes(x))).toEqual([]);
    });
    it('cloneRequirements = streamclone.new_stream_clone_requirements(defaults, streamed)', () => {
      const cases = [
        ['revlogv1'],
        ['generaldelta', 'revlog-compression-zstd', 'revlogv1', 'sparserevlog'],
        ['revlogv1', 'treemanifest'],
        [],
      ];
      const lines = runHgPython(
        `
import sys
from mercurial import streamclone, localrepo, ui as uimod
u = uimod.ui.load()
d = localrepo.newreporequirements(u, localrepo.defaultcreateopts(u))
for line in sys.stdin:
    s = [x.encode() for x in line.split()]
    print(' '.join(sorted(x.decode() for x in streamclone.new_stream_clone_requirements(d, s))) or '-')
`,
        cases.map((c) => c.join(' ') || ' '),
      );
      expect(lines.map((l) => (l === '-' ? [] : l.split(' ')))).toEqual(cases.map(cloneRequirements));
    });
  },
);

describe.skipIf(missing('hg'))(`vs hg init / hg share${skipNote('hg')}`, () => {
  it('writes the same requires files as hg init (share-safe and not)', async () => {
    hg(['init', join(tmp, 'hg1')]);
    mkdirSync(join(tmp, 'ours1', '.hg'), { recursive: true });
    await writeRequirements(join(tmp, 'ours1', '.hg'), DEFAULT_NEW_REPO_REQUIREMENTS);
    for (const f of ['requires', 'store/requires']) {
      expect(readFileSync(join(tmp, 'ours1', '.hg', f), 'latin1')).toBe(
        readFileSync(join(tmp, 'hg1', '.hg', f), 'latin1'),
      );
    }
    hg(['init', '--config', 'format.use-share-safe=false', join(tmp, 'hg2')]);
    mkdirSync(join(tmp, 'ours2', '.hg'), { recursive: true });
    await writeRequirements(
      join(tmp, 'ours2', '.hg'),
      DEFAULT_NEW_REPO_REQUIREMENTS.filter((r) => r !== 'share-safe'),
    );
    expect(readFileSync(join(tmp, 'ours2', '.hg', 'requires'), 'latin1')).toBe(
      readFileSync(join(tmp, 'hg2', '.hg', 'requires'), 'latin1'),
    );
    expect(existsSync(join(tmp, 'hg2', '.hg', 'store', 'requires'))).toBe(false);
  });
  it('follows a share to the source store (shared and relshared)', async () => {
    hg(['init', join(tmp, 'src')]);
    hg(['share', '-q', '--config', 'extensions.share=', '-U', join(tmp, 'src'), join(tmp, 'abs')]);
    hg([
      'share',
      '-q',
      '--config',
      'extensions.share=',
      '--relative',
      '-U',
      join(tmp, 'src'),
      join(tmp, 'rel'),
    ]);
    for (const [name, marker] of [
      ['abs', 'shared'],
      ['rel', 'relshared'],
    ] as const) {
      const loc = await locateRepository(join(tmp, name));
      expect(loc.requirements.has(marker)).toBe(true);
      expect(loc.requirements.has('fncache')).toBe(true);
      expect(loc.storeDir).toBe(join(tmp, 'src', '.hg', 'store'));
      expect(loc.cacheDir).toBe(join(tmp, 'src', '.hg', 'cache'));
      expect(unsupportedRequirements(loc.requirements)).toEqual([]);
    }
  });
  it("a share -B reads the source's bookmarks, as hg with the share extension (found by the sweep's share path)", async () => {
    const SHARE = ['--config', 'extensions.share='];
    hg(['init', join(tmp, 'src')]);
    writeFileSync(join(tmp, 'src', 'f'), 'x');
    hg(['-R', join(tmp, 'src'), 'commit', '-q', '-A', '-m', 'x', '-u', 't', '-d', '0 0']);
    hg(['-R', join(tmp, 'src'), 'bookmark', 'mark']);
    hg(['share', '-q', ...SHARE, '-U', '-B', join(tmp, 'src'), join(tmp, 'withmarks')]);
    hg(['share', '-q', ...SHARE, '-U', join(tmp, 'src'), join(tmp, 'plain')]);
    const shared = await locateRepository(join(tmp, 'withmarks'));
    expect(bookmarksPath(shared)).toBe(join(tmp, 'src', '.hg', 'bookmarks'));
    expect(hg(['-R', join(tmp, 'withmarks'), ...SHARE, 'bookmarks', '-T', '{bookmark}\n']).stdout).toBe(
      'mark\n',
    );
    const plain = await locateRepository(join(tmp, 'plain'));
    expect(bookmarksPath(plain)).toBe(join(tmp, 'plain', '.hg', 'bookmarks'));
    expect(hg(['-R', join(tmp, 'plain'), ...SHARE, 'bookmarks', '-T', '{bookmark}\n']).stdout).toBe('');
  });
});
