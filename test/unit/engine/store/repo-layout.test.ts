import { copyFileSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeStorePath } from '../../../../src/main/engine/store/encoding.js';
import { serializeFncache } from '../../../../src/main/engine/store/fncache.js';
import { readRepoConfig } from '../../../../src/main/engine/store/hgrc.js';
import {
  CHANGELOG_STUB,
  clonedHgrc,
  createRepoSkeleton,
  withoutCredentials,
} from '../../../../src/main/engine/store/repo-layout.js';
import {
  cloneRequirements,
  DEFAULT_NEW_REPO_REQUIREMENTS,
  readRequirements,
} from '../../../../src/main/engine/store/requirements.js';
import { missing, skipNote, extractFixtureRepo, FIXTURES, hg, scratchArea } from '../../../support/store.js';
import { listStreamFiles } from '../../../../src/main/engine/store/walk.js';

const { path: fresh } = scratchArea('layout');

function tree(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      out.push(relative(root, p) + (e.isDirectory() ? '/' : ''));
      if (e.isDirectory()) walk(p);
    }
  };
  walk(root);
  return out.sort();
}

describe('createRepoSkeleton', () => {
  it('lays out .hg like hg init', async () => {
    const root = fresh('skel');
    const hgDir = await createRepoSkeleton(root, { requirements: DEFAULT_NEW_REPO_REQUIREMENTS });
    expect(hgDir).toBe(join(root, '.hg'));
    expect(tree(hgDir)).toEqual([
      '00changelog.i',
      'cache/',
      'requires',
      'store/',
      'store/requires',
      'wcache/',
    ]);
    expect(readFileSync(join(hgDir, '00changelog.i'))).toEqual(CHANGELOG_STUB);
    expect(CHANGELOG_STUB.length).toBe(57);
    expect([...(await readRequirements(root))].sort()).toEqual([...DEFAULT_NEW_REPO_REQUIREMENTS]);
  });

  it('refuses an existing repository and bad default paths', async () => {
    const root = fresh('exists');
    await createRepoSkeleton(root, { requirements: ['revlogv1', 'store'] });
    await expect(createRepoSkeleton(root, { requirements: ['revlogv1', 'store'] })).rejects.toMatchObject({
      code: 'DEST_EXISTS',
    });
    await expect(
      createRepoSkeleton(fresh('bad'), { requirements: ['store'], defaultPath: 'http://x/\n[hooks]' }),
    ).rejects.toMatchObject({
      code: 'USAGE',
    });
  });

  it('writes the cloned sample hgrc without credentials', async () => {
    const root = fresh('hgrc');
    await createRepoSkeleton(root, {
      requirements: DEFAULT_NEW_REPO_REQUIREMENTS,
      defaultPath: 'https://alice:s3cret@hg.example.com:8443/repo?x=1',
    });
    const text = readFileSync(join(root, '.hg', 'hgrc'), 'utf8');
    expect(text).not.toMatch(/alice|s3cret/);
    expect(text).toBe(clonedHgrc('https://hg.example.com:8443/repo?x=1'));
    expect((await readRepoConfig(root)).get('paths', 'default')).toBe('https://hg.example.com:8443/repo?x=1');
  });

  it('withoutCredentials keeps everything but the user info', () => {
    expect(withoutCredentials('https://u:p@h/r')).toBe('https://h/r');
    expect(withoutCredentials('https://token@h/r@x')).toBe('https://h/r@x');
    expect(withoutCredentials('http://h:80/r')).toBe('http://h:80/r');
    expect(withoutCredentials('/local/path@x')).toBe('/local/path@x');
    expect(withoutCredentials('C:\\repos\\x')).toBe('C:\\repos\\x');
    // an ssh login name is no secret (hg keeps it); a password would be
    expect(withoutCredentials('ssh://hg@h:2222//srv/r')).toBe('ssh://hg@h:2222//srv/r');
    expect(withoutCredentials('ssh://hg:pw@h/r')).toBe('ssh://h/r');
  });
});

/** What an applier does with a listing: every entry through the store encoding, plus the fncache. */
async function cloneByListing(src: string, dest: string, defaultPath: string): Promise<void> {
  const list = await listStreamFiles(src, { version: 'v2' });
  const hgDir = await createRepoSkeleton(dest, {
    requirements: cloneRequirements(list.requirements),
    defaultPath,
  });
  const fncache: string[] = [];
  for (const f of list.files) {
    const target =
      f.vfs === 's' ? join(hgDir, 'store', encodeStorePath(f.name)) : join(hgDir, 'cache', f.name);
    mkdirSync(dirname(target), { recursive: true });
    copyFileSync(f.path, target);
    if (f.vfs === 's' && (f.name.startsWith('data/') || f.name.startsWith('meta/'))) fncache.push(f.name);
  }
  writeFileSync(join(hgDir, 'store', 'fncache'), serializeFncache(fncache));
}

describe.skipIf(missing('hg'))(`vs hg (interop)${skipNote('hg')}`, () => {
  it('the skeleton is byte-identical to hg init (stub, requires files, directories)', async () => {
    const theirs = fresh('hginit');
    hg(['init', theirs]);
    const ours = fresh('ours');
    await createRepoSkeleton(ours, { requirements: DEFAULT_NEW_REPO_REQUIREMENTS });
    expect(tree(join(ours, '.hg'))).toEqual(tree(join(theirs, '.hg')));
    for (const f of ['00changelog.i', 'requires', 'store/requires']) {
      expect(readFileSync(join(ours, '.hg', f))).toEqual(readFileSync(join(theirs, '.hg', f)));
    }
    // hg accepts it as an empty repository
    expect(hg(['log', '-R', ours]).stdout).toBe('');
    expect(hg(['verify', '-q', '-R', ours]).status).toBe(0);
  });

  it('matches the sample hgrc hg clone writes', async () => {
    const src = fresh('src');
    hg(['init', src]);
    const dst = fresh('dst');
    hg(['clone', '-q', '-U', src, dst]);
    const ours = fresh('ours');
    await createRepoSkeleton(ours, { requirements: DEFAULT_NEW_REPO_REQUIREMENTS, defaultPath: src });
    expect(readFileSync(join(ours, '.hg', 'hgrc'), 'utf8')).toBe(
      readFileSync(join(dst, '.hg', 'hgrc'), 'utf8'),
    );
  });

  it.each(['default', 'legacy'] as const)(
    'skeleton + streamed %s store passes hg verify with the same history',
    async (shape) => {
      const src = fresh(`src-${shape}`);
      mkdirSync(src);
      extractFixtureRepo(shape, src);
      const dest = fresh(`clone-${shape}`);
      await cloneByListing(src, dest, 'https://bob:pw@example.com/hg/repo');
      const verify = hg(['verify', '-q', '-R', dest], { allowFail: true });
      expect({ status: verify.status, stderr: verify.stderr, stdout: verify.stdout }).toEqual({
        status: 0,
        stderr: '',
        stdout: '',
      });
      const nodes = hg(['log', '-R', dest, '-T', '{rev}:{node}\n']).stdout;
      const expected = readFileSync(join(FIXTURES, shape, 'log.txt'), 'utf8').replace(/ .*$/gm, '');
      expect(nodes).toBe(expected);
      expect(hg(['paths', '-R', dest, 'default']).stdout.trim()).toBe('https://example.com/hg/repo');
      // store files are byte-identical to the source's
      for (const line of readFileSync(join(FIXTURES, shape, 'store.md5'), 'utf8')
        .trim()
        .split('\n')) {
        const rel = line.slice(line.indexOf('  ') + 2);
        if (rel === './fncache' || rel === './requires' || rel === './phaseroots') continue;
        expect(statSync(join(dest, '.hg', 'store', rel)).size, rel).toBe(
          statSync(join(src, '.hg', 'store', rel)).size,
        );
        expect(
          readFileSync(join(dest, '.hg', 'store', rel)).equals(readFileSync(join(src, '.hg', 'store', rel))),
          rel,
        ).toBe(true);
      }
    },
  );
});
