// The folder-by-folder watch on real repositories and real file changes: the library row follows
// the working copy (new folders watched, removed ones let go) and commits, while a write under
// `.hg/store/data` is neither watched nor walked (the count of folders watched stays the working
// copy's plus `.hg` and `.hg/store`); past the bound only the root is watched and the rest polled;
// a walk of many folders is done in steps with a rest between them.

import { afterEach, describe, expect, it } from 'vitest';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RepoState } from '../../../src/main/host/repo-watch';
import { TreeWatch } from '../../../src/main/host/tree-watch';
import { hgSync, missing, removeDir, skipNote, tempDirMaker } from '../../support/env';
import { quiet, settledRepo, watcherOf } from '../../support/host/watched-repo';

const makeTempDir = tempDirMaker('tree-watch');
const cleanup: (() => void)[] = [];
afterEach(() => {
  for (const f of cleanup.splice(0).reverse()) f();
});

/** Working-copy folders below the root, each with a committed file. */
const FOLDERS = ['a', 'a/b', 'a/b/c', 'x', 'x/y'];

function repoWithFolders(label: string): string {
  const dir = makeTempDir(label);
  cleanup.push(() => removeDir(dir));
  const files: Record<string, string> = { 'top.txt': 'top\n' };
  for (const f of FOLDERS) files[`${f}/f.txt`] = `${f}\n`;
  return settledRepo(join(dir, 'repo'), files);
}

type WorkingCopy = { modified?: number; added?: number; unknown?: number; removed?: number };
const workingCopy = (s: RepoState | undefined): WorkingCopy | undefined =>
  (s as { workingCopy?: WorkingCopy } | undefined)?.workingCopy;
const tipRev = (s: RepoState | undefined) =>
  (s as { summary?: { tip: { rev: number } | null } } | undefined)?.summary?.tip?.rev;

const workerWatcher = (maxWatchedFolders?: number) =>
  watcherOf(cleanup, {
    watchMode: 'worker',
    ...(maxWatchedFolders !== undefined && { maxWatchedFolders, pollMs: 50, maxPollMs: 200 }),
  });

/** the root, its folders, `.hg` and `.hg/store` */
const WATCHED = 1 + FOLDERS.length + 2;

describe.skipIf(missing('hg'))(`the folder-by-folder watch${skipNote('hg')}`, () => {
  it('follows new and removed working-copy folders, and commits, into the row', async () => {
    const repo = repoWithFolders('follows');
    const { watcher, last } = workerWatcher();
    watcher.add(repo);
    await expect.poll(() => last()?.status).toBe('ok');
    await quiet(watcher);
    expect(watcher.watchedFolders(repo)).toBe(WATCHED);
    expect(workingCopy(last())).toMatchObject({ modified: 0, unknown: 0 });

    // a new folder two levels deep: watched, and a file written in it afterwards is seen
    mkdirSync(join(repo, 'x', 'new', 'deeper'), { recursive: true });
    writeFileSync(join(repo, 'x', 'new', 'deeper', 'one.txt'), '1\n');
    await expect.poll(() => workingCopy(last())?.unknown, { timeout: 20_000 }).toBe(1);
    await expect.poll(() => watcher.watchedFolders(repo), { timeout: 20_000 }).toBe(WATCHED + 2);
    await quiet(watcher);
    writeFileSync(join(repo, 'x', 'new', 'deeper', 'two.txt'), '2\n');
    await expect.poll(() => workingCopy(last())?.unknown, { timeout: 20_000 }).toBe(2);

    // removed: its watches are let go; a committed file's folder removed shows as a deleted file
    rmSync(join(repo, 'x', 'new'), { recursive: true });
    rmSync(join(repo, 'a', 'b', 'c'), { recursive: true });
    await expect.poll(() => workingCopy(last())?.unknown, { timeout: 20_000 }).toBe(0);
    await expect.poll(() => watcher.watchedFolders(repo), { timeout: 20_000 }).toBe(WATCHED - 1);

    // a commit (hg writes the changelog in .hg/store and the dirstate in .hg) reaches the row
    expect(hgSync(['commit', '-q', '-A', '-m', 'two'], repo).status).toBe(0);
    await expect.poll(() => tipRev(last()), { timeout: 20_000 }).toBe(1);
  });

  it('a write under .hg/store/data is not watched: no read, no folder walked', async () => {
    const repo = repoWithFolders('store-data');
    // many revlog folders, as a clone of a large repository has
    for (let i = 0; i < 40; i++) {
      mkdirSync(join(repo, '.hg', 'store', 'data', `d${i}`, 'sub'), { recursive: true });
      writeFileSync(join(repo, '.hg', 'store', 'data', `d${i}`, 'sub', 'f.i'), '');
    }
    const { watcher, last } = workerWatcher();
    watcher.add(repo);
    await expect.poll(() => last()?.status).toBe('ok');
    await quiet(watcher);
    expect(watcher.watchedFolders(repo)).toBe(WATCHED);
    const before = { reads: watcher.reads, wc: watcher.workingCopyReads, traffic: watcher.workerTraffic()! };

    mkdirSync(join(repo, '.hg', 'store', 'data', 'later', 'deep'), { recursive: true });
    for (let i = 0; i < 50; i++)
      writeFileSync(join(repo, '.hg', 'store', 'data', 'later', 'deep', `f${i}.i`), 'x');
    writeFileSync(join(repo, '.hg', 'store', 'data', 'a', 'f.txt.i'), 'appended');
    await quiet(watcher);
    expect(watcher.reads).toBe(before.reads);
    expect(watcher.workingCopyReads).toBe(before.wc);
    // not one event reached the worker, so nothing was walked or watched
    expect(watcher.workerTraffic()!.events).toBe(before.traffic.events);

    // the next working-copy event reports the count again: still the working copy's folders
    writeFileSync(join(repo, 'top.txt'), 'edited\n');
    await expect.poll(() => workingCopy(last())?.modified, { timeout: 20_000 }).toBe(1);
    expect(watcher.watchedFolders(repo)).toBe(WATCHED);
  });

  it('past the bound only the root is watched, and a deep edit is found by the poll', async () => {
    const repo = repoWithFolders('bound');
    const { watcher, last } = workerWatcher(3);
    watcher.add(repo);
    await expect.poll(() => last()?.status).toBe('ok');
    await quiet(watcher);
    // the root, `.hg` and `.hg/store`
    expect(watcher.watchedFolders(repo)).toBe(3);
    expect(watcher.pollInterval(repo)).toBeUndefined(); // watched, and polled for the folders below
    writeFileSync(join(repo, 'a', 'b', 'c', 'f.txt'), 'edited\n');
    await expect.poll(() => workingCopy(last())?.modified, { timeout: 20_000 }).toBe(1);
  });

  it('walks many new folders in steps, resting between them', async () => {
    const dir = makeTempDir('steps');
    cleanup.push(() => removeDir(dir));
    mkdirSync(join(dir, '.hg', 'store'), { recursive: true });
    for (let i = 0; i < 200; i++) mkdirSync(join(dir, `d${i % 10}`, `s${i}`), { recursive: true });
    const tree = new TreeWatch(dir, {
      onEvent: () => {},
      onFailure: () => {},
      onPartial: () => {},
      maxFolders: 1000,
      walkBatch: 16,
    });
    cleanup.push(() => tree.close());
    await tree.start();
    expect(tree.watchedFolders).toBe(1 + 10 + 200 + 2);
    expect(tree.partial).toBe(false);
    // steps: the root, its 10 folders, their 200 in steps of 16; a rest after every step but the last
    expect(tree.rests).toBe(2 + Math.ceil(200 / 16) - 1);
  });
});
