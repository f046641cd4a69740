// The library's row data against hg 6.3.2 itself: tip (rev, node, date, summary, branch,
// bookmarks), working-copy parent, paths.default, for inline and split changelogs, a merge in
// progress, `hg update null` and dirstate-v2.
import { afterAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readRepoSummary } from '../../src/main/host/repo-summary';
import { hgSync, missing, removeDir, skipNote, tempDirMaker } from '../support/env';

const makeTempDir = tempDirMaker('repo-summary');
const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

function hg(cwd: string, ...args: string[]): string {
  const r = hgSync(args, cwd);
  if (r.status !== 0) throw new Error(`hg ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

function newRepo(label: string, config: string[] = []): string {
  const dir = makeTempDir(label);
  dirs.push(dir);
  const repo = join(dir, 'repo');
  hg(dir, 'init', ...config.flatMap((c) => ['--config', c]), 'repo');
  return repo;
}

function commit(repo: string, file: string, text: string, message: string, date = '1700000000 -3600'): void {
  writeFileSync(join(repo, file), text);
  hg(repo, 'commit', '-A', '-m', message, '-d', date);
}

/** hg's own view of the tip, in the row's terms. */
function hgTip(repo: string) {
  const out = hg(
    repo,
    'log',
    '-r',
    'tip',
    '-T',
    '{rev}\\n{node|short}\\n{date|hgdate}\\n{desc|firstline}\\n{branch}\\n{bookmarks}\\n{author}',
  );
  const [rev, node, date, summary, branch, bookmarks, user] = out.split('\n');
  const [secs, tz] = date!.split(' ');
  return {
    rev: Number(rev),
    node,
    date: Number(secs) * 1000,
    tz: Number(tz),
    user,
    summary,
    branch,
    bookmarks: bookmarks ? bookmarks.split(' ').sort() : [],
  };
}

describe.skipIf(missing('hg'))(`repository summary against hg${skipNote('hg')}`, () => {
  it('reads tip, parent, bookmarks and source of an inline changelog', async () => {
    const repo = newRepo('inline');
    commit(repo, 'a.txt', 'one\n', 'first\n\nbody');
    commit(repo, 'a.txt', 'two\n', 'second change');
    hg(repo, 'bookmark', 'feature', 'wip');
    hg(repo, 'branch', 'stable');
    commit(repo, 'b.txt', 'b\n', 'on stable (é)');
    hg(repo, 'bookmark', '-r', 'tip', 'release');
    writeFileSync(join(repo, '.hg', 'hgrc'), '[paths]\ndefault = https://user:secret@example.com/repo\n');
    const s = await readRepoSummary(repo);
    expect({ ...s.tip, bookmarks: [...s.tip!.bookmarks].sort() }).toEqual(hgTip(repo));
    expect(s.parent).toEqual({
      node: hg(repo, 'log', '-r', '.', '-T', '{node|short}'),
      rev: 2,
      merging: false,
    });
    expect(s.source).toBe('https://example.com/repo');
    expect(s.storeFiles).toBeGreaterThan(3);
    expect(s.storeBytes).toBeGreaterThan(0);
  });

  it('reads a split changelog (past 128 KiB) and a parent below the tip', async () => {
    const repo = newRepo('split');
    // big incompressible descriptions push the changelog over revlog._maxinline (zlib would fold
    // repeated characters into almost nothing)
    for (let i = 0; i < 6; i++)
      commit(repo, 'f.txt', `v${i}\n`, `change ${i}\n\n${randomBytes(30_000).toString('base64')}`);
    expect(existsSync(join(repo, '.hg', 'store', '00changelog.d'))).toBe(true);
    const s = await readRepoSummary(repo);
    expect(s.tip).toEqual(hgTip(repo));
    hg(repo, 'update', '-r', '1');
    const u = await readRepoSummary(repo);
    expect(u.parent).toEqual({
      node: hg(repo, 'log', '-r', '1', '-T', '{node|short}'),
      rev: 1,
      merging: false,
    });
  });

  it('says "no working copy" after hg update null and sees a merge in progress', async () => {
    const repo = newRepo('merge');
    commit(repo, 'a.txt', 'a\n', 'base');
    commit(repo, 'b.txt', 'b\n', 'left');
    hg(repo, 'update', '-r', '0');
    commit(repo, 'c.txt', 'c\n', 'right');
    hg(repo, 'merge', '-r', '1');
    const merging = await readRepoSummary(repo);
    expect(merging.parent).toMatchObject({ rev: 2, merging: true });
    hg(repo, 'update', '-C', 'null');
    expect((await readRepoSummary(repo)).parent).toBeNull();
  });

  it('reads an empty repository and a dirstate-v2 one', async () => {
    const empty = newRepo('empty');
    expect(await readRepoSummary(empty)).toMatchObject({ tip: null, parent: null });
    const v2 = newRepo('dirstate-v2', ['format.use-dirstate-v2=yes', 'storage.dirstate-v2.slow-path=allow']);
    // hg without its Rust extensions reads dirstate-v2 only when told it may be slow
    writeFileSync(join(v2, '.hg', 'hgrc'), '[storage]\ndirstate-v2.slow-path = allow\n');
    commit(v2, 'a.txt', 'a\n', 'v2 commit');
    const s = await readRepoSummary(v2);
    expect(s.tip).toEqual(hgTip(v2));
    expect(s.parent).toMatchObject({ rev: 0, merging: false });
  });
});
