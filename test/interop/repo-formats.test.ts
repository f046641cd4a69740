// Repositories as real hg 6.3.2 makes them in its other formats and with the content users have
// (tags, closed branches, odd names, long hashed paths, flag and type changes), through Sluice's
// user-facing paths: pull clone and pull from hg serve, apply of `hg bundle --all`, update, and
// hg's clone from sluice serve. Formats Sluice does not handle are refused, typed, before anything
// is written.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyChangegroupBundleFile } from '../../src/main/engine/apply/apply-changegroup';
import { JobContext } from '../../src/main/engine/job/job-context';
import { cloneFromUrl } from '../../src/main/engine/wire/clone';
import { pullFromUrl } from '../../src/main/engine/wire/pull';
import { hg, verifyOk } from './changegroup-support';
import { missing, removeDir, skipNote, startHgServe, tempDir, type HgServer } from './wire-support';

/** What must agree with hg's own clone: nodes, phases, branches (closed heads), bookmarks, tags. */
function logOf(repo: string): string {
  return hg(['log', '-T', '{node} {phase} {branch} {bookmarks} {tags}{if(extras.close," closed")}\n'], repo);
}

function expectLike(repo: string, ref: string): void {
  const v = verifyOk(repo);
  expect(v.ok, v.out).toBe(true);
  expect(logOf(repo)).toBe(logOf(ref));
}

describe.skipIf(missing('hg'))(`tags: the hgtagsfnodes part hg sends${skipNote('hg')}`, () => {
  let work = '';
  let src = '';
  let server: HgServer | undefined;
  beforeAll(async () => {
    work = tempDir('formats-tags');
    src = join(work, 'src');
    hg(['init', src]);
    writeFileSync(join(src, 'a'), 'a\n');
    hg(['commit', '-q', '-A', '-m', 'c0', '-d', '0 0'], src);
    hg(['tag', '-q', '-d', '1 0', 'v1'], src);
    writeFileSync(join(src, 'a'), 'b\n');
    hg(['commit', '-q', '-m', 'c2', '-d', '2 0'], src);
    // reading the tags fills .hg/cache/hgtagsfnodes1: from then on hg's getbundle and bundle
    // add the (mandatory) hgtagsfnodes part for the heads
    hg(['tags'], src);
    server = await startHgServe(src);
  }, 60_000);
  afterAll(() => {
    server?.stop();
    if (work) removeDir(work);
  });

  it('hg bundle --all (bundle2) applies into a new and an existing repository', async () => {
    const bundle = join(work, 'all.hg');
    hg(['bundle', '-q', '--all', '-t', 'none-v2', bundle], src);
    expect(hg(['debugbundle', '--all', bundle])).toContain('hgtagsfnodes');
    const fresh = join(work, 'apply-new');
    await applyChangegroupBundleFile(bundle, fresh, new JobContext());
    const ref = join(work, 'unbundle');
    hg(['init', ref]);
    hg(['unbundle', '-q', bundle], ref);
    expectLike(fresh, ref);
    const [old, oldRef] = ['apply-old', 'unbundle-old'].map((n) => join(work, n));
    for (const r of [old, oldRef]) hg(['clone', '-q', '-U', '-r', '0', src, r]);
    await applyChangegroupBundleFile(bundle, old, new JobContext());
    hg(['unbundle', '-q', bundle], oldRef);
    expectLike(old, oldRef);
  }, 60_000);

  it('clone --pull and pull from hg serve', async () => {
    const ref = join(work, 'hg-clone');
    hg(['clone', '-q', '-U', '--pull', server!.url, ref]);
    const dest = join(work, 'pull-clone');
    await cloneFromUrl({ kind: 'clone', url: server!.url, dest, pull: true }, new JobContext());
    expectLike(dest, ref);
    const partial = join(work, 'partial');
    hg(['clone', '-q', '-U', '-r', '0', server!.url, partial]);
    await pullFromUrl({ kind: 'pull', repo: partial }, new JobContext());
    expectLike(partial, ref);
  }, 60_000);
});
