// hg's revision branch cache (.hg/cache/rbc-*-v1) as RevBranchCache reads it: every record hg
// wrote gives hg's branch and close flag; a record that does not match the changelog, or a cache
// that is missing or oversized, vouches for nothing; RevisionResolver answers the same with or
// without it.
import { readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalRepo } from '../../src/main/engine/repo/local-repo';
import { RevBranchCache } from '../../src/main/engine/repo/rev-branch-cache';
import { RevisionResolver } from '../../src/main/engine/repo/revsymbol';
import { hgSync, missing, removeDir, skipNote, tempDirMaker } from '../support/env';

const makeTempDir = tempDirMaker('rbc');

function hg(args: string[], cwd: string): string {
  const r = hgSync(args, cwd);
  if (r.status !== 0) throw new Error(`hg ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

describe.skipIf(missing('hg'))(`hg's revision branch cache${skipNote('hg')}`, () => {
  let dir: string;
  let repo: string;
  /** per rev: `branch closed` as hg prints them */
  let expected: { branch: string; closed: boolean }[];

  beforeAll(() => {
    dir = makeTempDir('repo');
    repo = join(dir, 'r');
    hg(['init', repo], dir);
    const commit = (file: string, extra: string[] = []): void => {
      writeFileSync(join(repo, file), `${file} ${Math.random()}\n`);
      hg(['commit', '-q', '-A', '-m', file, ...extra], repo);
    };
    commit('a');
    hg(['branch', '-q', 'stable'], repo);
    commit('b');
    hg(['branch', '-q', 'caf\u00e9'], repo);
    commit('c');
    commit('d', ['--close-branch']);
    hg(['update', '-q', 'default'], repo);
    commit('e');
    hg(['debugupdatecaches'], repo);
    expected = hg(
      ['log', '-r', 'all()', '-T', "{branch}\\t{ifcontains(rev, revset('closed()'), 'c', 'o')}\\n"],
      repo,
    )
      .trim()
      .split('\n')
      .map((l) => ({
        branch: Buffer.from(l.split('\t')[0]!, 'utf8').toString('latin1'),
        closed: l.endsWith('c'),
      }));
  });
  afterAll(() => removeDir(dir));

  it('gives hg branch and close flag of every revision hg recorded', async () => {
    const r = await LocalRepo.open(repo);
    const cl = await r.changelog();
    try {
      const cache = RevBranchCache.read(r.hgDir, cl.index);
      expect(cache).toBeDefined();
      expect(expected).toHaveLength(5);
      for (let rev = 0; rev < cl.length; rev++) expect(cache!.branchInfo(rev)).toEqual(expected[rev]);
      expect(cache!.branchInfo(cl.length)).toBeUndefined();
      expect(cache!.branchInfo(-1)).toBeUndefined();
    } finally {
      await cl.close();
    }
  });

  it('a record off the changelog, an unknown name or a missing file vouches for nothing; the resolver agrees', async () => {
    const revs = join(repo, '.hg', 'cache', 'rbc-revs-v1');
    const names = join(repo, '.hg', 'cache', 'rbc-names-v1');
    const saved = readFileSync(revs);
    const bad = Buffer.from(saved);
    bad[1 * 8] = bad[1 * 8]! ^ 0xff; // rev 1: node prefix no longer matches
    bad.writeUInt32BE(999, 2 * 8 + 4); // rev 2: a name index past the names
    bad.fill(0, 3 * 8, 4 * 8); // rev 3: not filled
    writeFileSync(revs, bad);
    const r = await LocalRepo.open(repo);
    const cl = await r.changelog();
    try {
      const cache = RevBranchCache.read(r.hgDir, cl.index)!;
      expect([1, 2, 3].map((rev) => cache.branchInfo(rev))).toEqual([undefined, undefined, undefined]);
      expect(cache.branchInfo(4)).toEqual(expected[4]);
      // the resolver falls back to the changeset text where the cache cannot vouch
      const resolver = new RevisionResolver(r, cl);
      for (let rev = 0; rev < cl.length; rev++) expect(await resolver.branchOf(rev)).toEqual(expected[rev]);
      truncateSync(revs, 4);
      expect(RevBranchCache.read(r.hgDir, cl.index)).toBeUndefined();
      writeFileSync(revs, saved);
      rmSync(names);
      expect(RevBranchCache.read(r.hgDir, cl.index)).toBeUndefined();
      const without = new RevisionResolver(r, cl);
      for (let rev = 0; rev < cl.length; rev++) expect(await without.branchOf(rev)).toEqual(expected[rev]);
    } finally {
      await cl.close();
    }
  });
});
