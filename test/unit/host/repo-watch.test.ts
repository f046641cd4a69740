// RepoWatcher on real repositories and real file-system events: a working-copy edit is one status
// read, writes inside .hg that the summary does not depend on are no read at all, a watched
// library has no poll, a repository without events is polled with a back-off, a deep edit is seen
// at once through the watch worker, and the shallow watch it falls back to polls deep edits.

import { afterEach, describe, expect, it } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RepoState } from '../../../src/main/host/repo-watch';
import { hgSync, missing, removeDir, skipNote, tempDirMaker } from '../../support/env';
import { quiet, settledRepo, watcherOf } from '../../support/host/watched-repo';

const makeTempDir = tempDirMaker('repo-watch');
const cleanup: (() => void)[] = [];
afterEach(() => {
  for (const f of cleanup.splice(0).reverse()) f();
});

function repoWithCommit(label: string): string {
  const dir = makeTempDir(label);
  cleanup.push(() => removeDir(dir));
  return settledRepo(join(dir, 'repo'), { 'a.txt': 'a\n' });
}

/** A repository whose committed file sits below the root's folder (its edits are no root event). */
function repoWithDeepFile(label: string): string {
  const repo = repoWithCommit(label);
  mkdirSync(join(repo, 'deep', 'er'), { recursive: true });
  writeFileSync(join(repo, 'deep', 'er', 'c.txt'), 'c\n');
  expect(hgSync(['commit', '-q', '-A', '-m', 'two'], repo).status).toBe(0);
  return repo;
}

const modified = (s: RepoState | undefined) =>
  (s as { workingCopy?: { modified: number } }).workingCopy?.modified;
const tipRev = (s: RepoState | undefined) =>
  (s as { summary?: { tip: { rev: number } | null } }).summary?.tip?.rev;

describe.skipIf(missing('hg'))(`RepoWatcher${skipNote('hg')}`, () => {
  it('a working-copy edit is seen by its event and read as hg status counts; .hg caches are ignored', async () => {
    const repo = repoWithCommit('events');
    const { watcher, last } = watcherOf(cleanup);
    watcher.add(repo);
    await expect.poll(() => last()?.status).toBe('ok');
    expect(last()).toMatchObject({ workingCopy: { modified: 0, unknown: 0, branch: 'default' } });
    expect(watcher.counts()).toEqual({ watched: 1, polled: 0 });
    await quiet(watcher);
    const before = { reads: watcher.reads, wc: watcher.workingCopyReads };

    writeFileSync(join(repo, 'a.txt'), 'changed\n');
    writeFileSync(join(repo, 'b.txt'), 'new\n');
    await expect
      .poll(
        () =>
          last()?.status === 'ok' &&
          last()!.status === 'ok' &&
          (last() as { workingCopy?: object }).workingCopy,
      )
      .toMatchObject({ modified: 1, unknown: 1 });
    await quiet(watcher);
    // the edit changed nothing the summary depends on: only the working copy was read again
    expect(watcher.reads).toBe(before.reads);
    expect(watcher.workingCopyReads).toBeGreaterThan(before.wc);

    const settledReads = { reads: watcher.reads, wc: watcher.workingCopyReads };
    mkdirSync(join(repo, '.hg', 'cache'), { recursive: true });
    writeFileSync(join(repo, '.hg', 'cache', 'noise'), 'x');
    // a write the watcher does see (the active bookmark), after the ignored one
    writeFileSync(join(repo, '.hg', 'bookmarks.current'), 'feature');
    await expect
      .poll(() => (last() as { workingCopy?: { bookmark?: string } }).workingCopy?.bookmark)
      .toBe('feature');
    await quiet(watcher);
    expect(watcher.reads).toBe(settledReads.reads + 1);
  });

  it('a repository without events is polled, backing off while nothing changes, and sooner after a change', async () => {
    const repo = repoWithCommit('poll');
    const { watcher, last } = watcherOf(cleanup, { useEvents: false, pollMs: 20, maxPollMs: 160 });
    watcher.add(repo);
    await expect.poll(() => last()?.status).toBe('ok');
    expect(watcher.counts()).toEqual({ watched: 0, polled: 1 });
    await expect.poll(() => watcher.pollInterval(repo)).toBe(160);
    writeFileSync(join(repo, 'a.txt'), 'edited\n');
    await expect
      .poll(() => (last() as { workingCopy?: { modified?: number } }).workingCopy?.modified)
      .toBe(1);
    // the poll that found the change starts the back-off over (it then grows again)
    expect(watcher.pollInterval(repo)).toBeLessThan(160);
  });

  it('a deep working-copy edit is seen at once through the watch worker, with no poll', async () => {
    const repo = repoWithDeepFile('worker');
    const { watcher, last } = watcherOf(cleanup, { watchMode: 'worker' });
    watcher.add(repo);
    await expect.poll(() => last()?.status).toBe('ok');
    expect(watcher.counts()).toEqual({ watched: 1, polled: 0 });
    await quiet(watcher);
    const before = watcher.workerTraffic()!;
    expect(before.alive).toBe(true);
    writeFileSync(join(repo, 'deep', 'er', 'c.txt'), 'changed\n');
    // pollMs is 0: only the worker's event can make this read happen
    await expect.poll(() => modified(last())).toBe(1);
    expect(watcher.workerTraffic()!.batches).toBeGreaterThan(before.batches);
  });

  it('the fallback shallow watch sees commits by events and a deep working-copy edit by the poll', async () => {
    const repo = repoWithDeepFile('shallow');
    const { watcher, last } = watcherOf(cleanup, { watchMode: 'shallow', pollMs: 50, maxPollMs: 200 });
    watcher.add(repo);
    await expect.poll(() => last()?.status).toBe('ok');
    // watched by events, and polled for the folders below the root
    expect(watcher.counts()).toEqual({ watched: 1, polled: 0 });
    expect(watcher.pollInterval(repo)).toBeUndefined();
    expect(watcher.workerTraffic()).toBeNull();
    expect(tipRev(last())).toBe(1);
    await commitAndEditDeep(repo, last);
  });

  it('when the watch worker dies, its repositories fall back to the shallow watch and the poll', async () => {
    const repo = repoWithDeepFile('worker-dies');
    const { watcher, last } = watcherOf(cleanup, { watchMode: 'worker', pollMs: 50, maxPollMs: 200 });
    watcher.add(repo);
    await expect.poll(() => last()?.status).toBe('ok');
    await watcher.settled();
    watcher.killWatchWorker();
    await expect.poll(() => watcher.workerTraffic()?.alive).toBe(false);
    await watcher.settled();
    expect(watcher.counts()).toEqual({ watched: 1, polled: 0 });
    await commitAndEditDeep(repo, last);
  });
});

/** A commit is seen (by the root's or .hg's events), then a deep edit (by an event or the poll). */
async function commitAndEditDeep(repo: string, last: () => RepoState | undefined): Promise<void> {
  const tip = tipRev(last())!;
  writeFileSync(join(repo, 'a.txt'), 'three\n');
  expect(hgSync(['commit', '-q', '-m', 'three'], repo).status).toBe(0);
  await expect.poll(() => tipRev(last())).toBe(tip + 1);
  writeFileSync(join(repo, 'deep', 'er', 'c.txt'), 'changed\n');
  await expect.poll(() => modified(last())).toBe(1);
}
