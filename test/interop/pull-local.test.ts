// `sluice pull` and `sluice clone` from a local repository (hg's localpeer): a path, relative or absolute, or the
// paths.default that `hg clone /path` writes; the local peer is serveStdio behind in-process pipes.

import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, hgSync, missing, removeDir, skipNote, tempDirMaker } from '../support/env';
import { hgOrThrow as hg, sluice } from './cli-support';

const log = (repo: string): string =>
  hg(['-R', repo, 'log', '-r', 'all()', '-T', '{node} {phase} {branch} {bookmarks}\n']);

describe.skipIf(missing('hg'))(`sluice pull from a local repository${skipNote('hg')}`, () => {
  const tempDir = tempDirMaker('pull-local');
  let work = '';
  let a = '';
  /** what hg's own pull of everything in A gives (A publishes: the pulled changesets are public) */
  let expected = '';

  beforeAll(() => {
    work = tempDir('repos');
    a = join(work, 'a');
    hg(['init', a]);
    for (let i = 0; i < 5; i++) {
      mkdirSync(join(a, 'd'), { recursive: true });
      writeFileSync(join(a, 'd', `f${i % 2}.txt`), `line ${i}\n`.repeat(i + 1));
      if (i === 3) hg(['branch', '-q', 'feature'], a);
      hg(['commit', '-q', '-A', '-m', `commit ${i}`], a);
    }
    hg(['bookmark', '-q', '-r', '2', 'mark'], a);
    const ref = join(work, 'ref');
    hg(['init', ref]);
    hg(['-R', ref, 'pull', '-q', a]);
    expected = log(ref);
    expect(expected.split('\n')).toHaveLength(6);
  });
  afterAll(() => removeDir(work));

  it('pulls the rest from paths.default (an absolute path written by hg clone) as hg pull does; hg verify passes', async () => {
    const b = join(work, 'b');
    hg(['clone', '-q', '-r', '1', a, b]);
    expect(hg(['-R', b, 'paths', 'default']).trim()).toBe(a);
    const r = await sluice(['pull', b], work);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(log(b)).toBe(expected);
    const v = hgSync(['-R', b, 'verify', '-q']);
    expect(v.stderr).toBe('');
    expect(v.status).toBe(0);
    // nothing left to bring
    const again = await sluice(['pull', b, '--incoming', '--json'], work);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('no changes found');
  });

  it('a relative SOURCE resolves against the current directory, a file:// URL works too', async () => {
    const c = join(work, 'c');
    hg(['init', c]);
    const r = await sluice(['pull', 'c', './a'], work);
    expect(r.code).toBe(0);
    expect(log(c)).toBe(expected);
    expect(hgSync(['-R', c, 'verify', '-q']).status).toBe(0);

    const d = join(work, 'd');
    hg(['init', d]);
    const u = await sluice(['pull', d, `file://${a}`], work);
    expect(u.code).toBe(0);
    expect(log(d)).toBe(expected);
  });

  it('a relative paths.default resolves against the repository root', async () => {
    const e = join(work, 'e');
    hg(['clone', '-q', '-r', '0', a, e]);
    writeFileSync(join(e, '.hg', 'hgrc'), '[paths]\ndefault = ../a\n');
    const r = await sluice(['pull', e], ROOT);
    expect(r.code).toBe(0);
    expect(log(e)).toBe(expected);
  });

  it('sluice clone of a relative local path (stream and --pull): absolute paths.default, hg verify passes', async () => {
    for (const [name, extra] of [
      ['clone-stream', []],
      ['clone-pull', ['--pull']],
    ] as const) {
      const r = await sluice(['clone', 'a', name, ...extra], work);
      expect(r.code).toBe(0);
      const dest = join(work, name);
      expect(hg(['-R', dest, 'paths', 'default']).trim()).toBe(a);
      expect(log(dest)).toBe(expected);
      const v = hgSync(['-R', dest, 'verify', '-q']);
      expect(v.stderr).toBe('');
      expect(v.status).toBe(0);
      expect(hg(['-R', dest, 'status'])).toBe('');
    }
  });

  it('a path that is not a repository fails with NOT_A_REPO naming it (pull and clone), and changes nothing', async () => {
    const f = join(work, 'f');
    hg(['init', f]);
    const plain = join(work, 'plain');
    mkdirSync(plain);
    for (const source of [plain, join(work, 'missing')]) {
      const r = await sluice(['pull', f, source, '--json'], work);
      expect(r.code).not.toBe(0);
      expect(r.stdout + r.stderr).toContain('NOT_A_REPO');
      expect(r.stdout + r.stderr).toContain(`repository ${source} not found`);
    }
    const c = await sluice(['clone', plain, join(work, 'never')], work);
    expect(c.code).not.toBe(0);
    expect(c.stderr).toContain(`repository ${plain} not found`);
    expect(existsSync(join(work, 'never'))).toBe(false);
    expect(log(f)).toBe('');
  });
});
