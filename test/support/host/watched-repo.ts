// Watch tests' helpers: a RepoWatcher as the library makes it, and a committed hg repository whose
// first status has already run: files written in the commit's
// second make the first status write fixed-up entries into the dirstate (as hg status does), an
// event on .hg/dirstate at a moment a watch test does not control. Older mtimes, fixed up by hg's
// own status here, settle that beforehand.
import { mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { expect } from 'vitest';
import { hgSync } from '../env';
import { RepoWatcher, type RepoState, type RepoWatcherOptions } from '../../../src/main/host/repo-watch';
import { readRepoSummary } from '../../../src/main/host/repo-summary';
import { workingCopySummary } from '../../../src/main/engine/operations/status/summary';

/** `hg init repo`, the files (relative path -> content) added and committed, status settled. */
export function settledRepo(repo: string, files: Record<string, string>): string {
  expect(hgSync(['init', repo]).status).toBe(0);
  for (const [rel, content] of Object.entries(files)) {
    mkdirSync(dirname(join(repo, rel)), { recursive: true });
    writeFileSync(join(repo, rel), content);
  }
  expect(hgSync(['commit', '-q', '-A', '-m', 'one'], repo).status).toBe(0);
  const old = new Date(Date.now() - 60_000);
  for (const rel of Object.keys(files)) utimesSync(join(repo, rel), old, old);
  expect(hgSync(['status'], repo).status).toBe(0);
  return repo;
}

export type WatcherOptions = Pick<
  RepoWatcherOptions,
  'useEvents' | 'watchMode' | 'pollMs' | 'maxPollMs' | 'maxWatchedFolders'
>;

/** A RepoWatcher reading summaries and hg status as the library does; `cleanup` disposes it. */
export function watcherOf(cleanup: (() => void)[], options: WatcherOptions = {}) {
  const states: RepoState[] = [];
  const watcher = new RepoWatcher({
    read: readRepoSummary,
    readWorkingCopy: workingCopySummary,
    onState: (_root, s) => states.push(s),
    debounceMs: 30,
    pollMs: options.pollMs ?? 0,
    ...options,
  });
  cleanup.push(() => watcher.dispose());
  const last = () => states.at(-1);
  return { watcher, states, last };
}

/**
 * No check pending, after letting late events in: the first status may write fixed-up entries
 * into the dirstate (as hg status does), and that write is one more summary read.
 */
export async function quiet(watcher: RepoWatcher): Promise<void> {
  await watcher.settled();
  await new Promise((r) => setTimeout(r, 300));
  await watcher.settled();
}
