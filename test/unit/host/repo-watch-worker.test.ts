// The watch worker on real repositories and real file-system events: a deleted watched repository
// is torn down in the worker while the main thread's event loop keeps turning, and its storm of
// events reaches the main thread as a few coalesced batches, not one message per file.

import { afterEach, describe, expect, it } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { RepoWatcher, type RepoState } from '../../../src/main/host/repo-watch';
import { readRepoSummary } from '../../../src/main/host/repo-summary';
import { hgSync, missing, removeDir, skipNote, tempDirMaker } from '../../support/env';

const makeTempDir = tempDirMaker('repo-watch-worker');
const cleanup: (() => void)[] = [];
afterEach(() => {
  for (const f of cleanup.splice(0).reverse()) f();
});

const FOLDERS = 30;
const FILES_PER_FOLDER = 40;

/** A repository with FOLDERS nested folders of FILES_PER_FOLDER files each (untracked: only the watch cares). */
function wideRepo(): string {
  const dir = makeTempDir('wide');
  cleanup.push(() => removeDir(dir));
  const repo = join(dir, 'repo');
  expect(hgSync(['init', repo]).status).toBe(0);
  for (let d = 0; d < FOLDERS; d++) {
    const folder = join(repo, `d${d % 5}`, `sub${d}`);
    mkdirSync(folder, { recursive: true });
    for (let f = 0; f < FILES_PER_FOLDER; f++) writeFileSync(join(folder, `f${f}.txt`), `${f}\n`);
  }
  return repo;
}

describe.skipIf(missing('hg'))(`RepoWatcher's watch worker${skipNote('hg')}`, () => {
  it('a watched repository deleted is torn down in the worker: main keeps turning, events come coalesced', async () => {
    const repo = wideRepo();
    const states: RepoState[] = [];
    const watcher = new RepoWatcher({
      read: readRepoSummary,
      onState: (_root, s) => states.push(s),
      debounceMs: 30,
      pollMs: 0,
      watchMode: 'worker',
    });
    cleanup.push(() => watcher.dispose());
    watcher.add(repo);
    await expect.poll(() => states.at(-1)?.status).toBe('ok');
    await watcher.settled();
    const before = watcher.workerTraffic()!;

    // a setImmediate chain runs once per turn of the main thread's event loop
    let turns = 0;
    let turning = true;
    const turn = (): void => {
      turns++;
      if (turning) setImmediate(turn);
    };
    setImmediate(turn);
    await rm(repo, { recursive: true });
    await expect.poll(() => states.at(-1)?.status).toBe('missing');
    const after = watcher.workerTraffic()!;
    turning = false;

    const batches = after.batches - before.batches;
    const events = after.events - before.events;
    const files = FOLDERS * FILES_PER_FOLDER;
    // every file's deletion was an event in the worker, and the main thread got a few batches of them
    expect(events).toBeGreaterThanOrEqual(files);
    expect(batches).toBeLessThan(files / 10);
    // the main thread's loop turned between the worker's batches: it never sat in the teardown
    expect(turns).toBeGreaterThan(batches);
    expect(after.alive).toBe(true);
  });
});
