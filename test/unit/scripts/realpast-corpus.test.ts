// The realpast bench corpus builder (scripts/bench/realpast-build.py), at unit size: three
// "released versions" as npm-shaped tarballs made here (no registry), committed with hg. The
// repository must verify, carry the rename as a copy, the deletion, and split each version's
// changes into changesets of at most `split` files with additions before removals.
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildFromPlan } from '../../../scripts/bench/realpast-corpus.mjs';
import { HG_ENV, missing, removeDir, skipNote, tempDirMaker } from '../../support/env';

const noHg = missing('hg');

describe.skipIf(noHg)(`realpast corpus builder${skipNote('hg')}`, () => {
  const dir = tempDirMaker('scripts')('realpast');
  afterAll(() => removeDir(dir));
  const hg = (...args: string[]): string => {
    const r = spawnSync('hg', args, { env: HG_ENV, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    return r.stdout;
  };
  const lines = (n: number): string => Array.from({ length: n }, (_, i) => `line ${i}\n`).join('');

  /** An npm-shaped tarball (files under package/) holding `files`. */
  function tarball(name: string, files: Record<string, string>): string {
    const src = join(dir, `src-${name}`, 'package');
    for (const [rel, text] of Object.entries(files)) {
      mkdirSync(join(src, rel, '..'), { recursive: true });
      writeFileSync(join(src, rel), text);
    }
    const out = join(dir, `${name}.tgz`);
    const r = spawnSync('tar', ['-czf', out, '-C', join(src, '..'), 'package']);
    expect(r.status).toBe(0);
    return out;
  }

  it('commits the versions as a valid history with renames and deletions', () => {
    const v1 = tarball('v1', {
      'lib/a.js': lines(40),
      'lib/b.js': lines(60),
      'c.md': 'c\n',
      'package.json': '{}\n',
    });
    const v2 = tarball('v2', {
      'lib/a.js': lines(41),
      'lib/moved/b.js': lines(60).replace('line 7\n', 'line seven\n'),
      'package.json': '{"v":2}\n',
    });
    const v3 = tarball('v3', {
      'lib/a.js': lines(42),
      'lib/moved/b.js': lines(61),
      'package.json': '{"v":3}\n',
    });
    const repo = join(dir, 'repo');
    const at = (t: string) => `2020-01-0${t}T00:00:00.000Z`;
    buildFromPlan(repo, {
      compression: 'zlib',
      split: 2,
      versions: [
        { pkg: 'pkg', version: '1.0.0', time: at('1'), tarball: v1 },
        { pkg: 'pkg', version: '1.1.0', time: at('2'), tarball: v2 },
        { pkg: 'pkg', version: '1.2.0', time: at('3'), tarball: v3 },
      ],
    });
    hg('verify', '-q', '-R', repo);
    // v1: 4 files in 2 changesets; v2: a, moved/b, package.json edited or added, b and c.md
    // removed, 5 files in 3; v3: 3 files in 2
    expect(hg('log', '-R', repo, '-T', '{desc}\n').trim().split('\n').reverse()).toEqual([
      'pkg 1.0.0 (1/2)',
      'pkg 1.0.0 (2/2)',
      'pkg 1.1.0 (1/3)',
      'pkg 1.1.0 (2/3)',
      'pkg 1.1.0 (3/3)',
      'pkg 1.2.0 (1/2)',
      'pkg 1.2.0 (2/2)',
    ]);
    expect(
      hg('log', '-R', repo, '-r', 'file("path:pkg/lib/moved/b.js") and 2:4', '-T', '{file_copies}\n').trim(),
    ).toBe('pkg/lib/moved/b.js (pkg/lib/b.js)');
    expect(hg('files', '-R', repo, '-r', 'tip', '-T', '{path}\n').trim().split('\n')).toEqual([
      'pkg/lib/a.js',
      'pkg/lib/moved/b.js',
      'pkg/package.json',
    ]);
    expect(hg('log', '-R', repo, '-r', '0', '-T', '{date|isodate}')).toBe('2020-01-01 00:00 +0000');
  });
});
