// Live repository state the way hg's filecache keeps a cached property (scmutil.filecache,
// filecachesubentry): a repository's summary is reused while the stat of each file it depends on
// (size, inode, mtime and ctime in nanoseconds) is unchanged, and read again the moment one changed.
// Changes are noticed by file-system events: an event inside `.hg` counts only for the files the
// summary depends on (hg replaces them by rename, so names, not handles, are compared), and any
// event outside `.hg` means the working copy changed (its status is read again when a
// working-copy reader is given). macOS and Windows watch each repository recursively and natively
// on this thread. Linux has no recursive watch (Node's emulation walks and watches the whole tree,
// `.hg/store` and its revlogs too), so there one worker thread (watch-worker.ts) watches the root,
// `.hg` and `.hg/store` and the working copy folder by folder (tree-watch.ts), and posts coalesced
// events; a working copy with too many folders has only its root watched and is polled. Only if
// that worker cannot run are the root, `.hg` and `.hg/store` watched here and the deeper folders
// polled. A repository whose watch failed is
// polled, with a back-off while nothing changes, all on one timer: an idle library with working
// events costs no timer at all. While hg holds `.hg/wlock` or `.hg/store/lock` it is mid-write:
// the read waits for the lock's release (its removal is an event too), so one `hg commit` is one
// read.

import { watch, type FSWatcher } from 'node:fs';
import { lstat, stat } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { lockFiles, repoFiles, shownWorkingCopy, type RepoReader, type RepoSummary } from './repo-summary';
import { WatchWorker, type RepoEvents, type WatchedFolders } from './watch-worker';
import type { WorkingCopyState } from '../../shared/library';

export type RepoState =
  | { status: 'ok'; summary: RepoSummary; workingCopy?: WorkingCopyState }
  | { status: 'missing'; problem: string }
  | { status: 'unreadable'; problem: string };

export type WorkingCopyReader = (root: string) => Promise<WorkingCopyState>;

export interface RepoWatcherOptions {
  read: RepoReader;
  /** hg status's counts, branch and bookmark; absent = the working copy is not looked at */
  readWorkingCopy?: WorkingCopyReader;
  /** called after each read, and when a repository disappears or returns */
  onState: (root: string, state: RepoState) => void;
  /** quiet time after a file-system event before the stats are compared */
  debounceMs?: number;
  /** the first poll interval of a repository without events (0 = no poll) */
  pollMs?: number;
  /** the poll interval doubles while nothing changes, up to this */
  maxPollMs?: number;
  /** how often a locked repository is looked at again, and how long a lock is waited for at most */
  lockRetryMs?: number;
  lockWaitMs?: number;
  /** tests: no fs.watch, poll only */
  useEvents?: boolean;
  /**
   * where the watches run: 'worker' (default on Linux: folder by folder, see above), 'native'
   * (recursive, on this thread: default elsewhere), 'shallow' (the root, `.hg` and `.hg/store`
   * here, the rest polled: what 'worker' falls back to)
   */
  watchMode?: WatchMode;
  /** 'worker': working-copy folders watched per repository at most (MAX_FOLDERS_PER_ROOT; tests) */
  maxWatchedFolders?: number;
}

export type WatchMode = 'worker' | 'native' | 'shallow';

/**
 * One recursive watch of `root`, or (shallow) one watch each of the root, `.hg` and `.hg/store`,
 * whose events are named as the recursive watch names them.
 */
function watchRepository(root: string, shallow: boolean, onEvent: (rel: string | null) => void): RepoEvents {
  const folders = shallow ? ['', '.hg', '.hg/store'] : [''];
  const watchers: FSWatcher[] = [];
  try {
    for (const folder of folders) {
      const prefix = folder ? `${folder}/` : '';
      watchers.push(
        watch(join(root, folder), { persistent: false, recursive: !shallow }, (_type, name) =>
          onEvent(name === null ? null : prefix + String(name).split(sep).join('/')),
        ),
      );
    }
  } catch (e) {
    for (const w of watchers) w.close();
    throw e;
  }
  return {
    onError: (listener) => {
      for (const w of watchers) w.on('error', () => listener(false));
    },
    close: () => {
      for (const w of watchers) w.close();
    },
  };
}

interface Watched {
  root: string;
  /** the stat signature the current state was read at; undefined = never read */
  signature?: string;
  status?: RepoState['status'];
  summary?: RepoSummary;
  /** an event outside .hg since the working copy was last read */
  workingCopyChanged: boolean;
  /** the last working-copy state read, as JSON: a poll that reads the same again is no change */
  workingCopyKey?: string;
  watcher?: RepoEvents & Partial<WatchedFolders>;
  /** events cover only the repository's top folders: the working copy is polled too */
  shallow: boolean;
  /** the worker has not set the watch up yet */
  awaitingWatch?: boolean;
  timer?: ReturnType<typeof setTimeout>;
  checking: boolean;
  /** an event arrived while checking: check again after */
  again: boolean;
  lockedSince?: number;
  removed: boolean;
  /** polled repositories (no watcher): when next, and the current interval */
  pollAt: number;
  pollEvery: number;
}

export class RepoWatcher {
  private readonly repos = new Map<string, Watched>();
  private readonly debounceMs: number;
  private readonly lockRetryMs: number;
  private readonly lockWaitMs: number;
  private readonly useEvents: boolean;
  private readonly pollMs: number;
  private readonly maxPollMs: number;
  private readonly watchMode: WatchMode;
  /** the worker of watchMode 'worker', started with the first watch; null = it could not start */
  private worker: WatchWorker | null | undefined;
  private pollTimer?: ReturnType<typeof setTimeout>;
  private pollTimerAt = Infinity;
  /** summary reads and working-copy reads done, for diagnostics and tests */
  reads = 0;
  workingCopyReads = 0;

  constructor(private readonly options: RepoWatcherOptions) {
    this.debounceMs = options.debounceMs ?? 100;
    this.lockRetryMs = options.lockRetryMs ?? 100;
    this.lockWaitMs = options.lockWaitMs ?? 30_000;
    this.useEvents = options.useEvents ?? true;
    this.pollMs = options.pollMs ?? 5000;
    this.maxPollMs = Math.max(this.pollMs, options.maxPollMs ?? 300_000);
    this.watchMode = options.watchMode ?? (process.platform === 'linux' ? 'worker' : 'native');
  }

  /** Starts watching `root` and reads it once. */
  add(root: string): void {
    if (this.repos.has(root)) return;
    const w: Watched = {
      root,
      workingCopyChanged: true,
      checking: false,
      again: false,
      removed: false,
      pollAt: Infinity,
      pollEvery: this.pollMs,
      shallow: false,
    };
    this.repos.set(root, w);
    this.attachWatcher(w);
    // read at once, so the row shows without waiting for the worker's walk of the tree; a watch the
    // worker sets up reads again once it is up, since what changed meanwhile had no event
    void this.check(w);
  }

  remove(root: string): void {
    const w = this.repos.get(root);
    if (!w) return;
    w.removed = true;
    this.detach(w);
    this.repos.delete(root);
  }

  /** Compares the stats of one repository now (e.g. after a Sluice job wrote it). */
  touch(root: string): void {
    const w = this.repos.get(root);
    if (w) this.schedule(w, 0);
  }

  /** Repositories watched by events, and polled ones (diagnostics, tests). */
  counts(): { watched: number; polled: number } {
    let watched = 0;
    for (const w of this.repos.values()) if (w.watcher) watched++;
    return { watched, polled: this.repos.size - watched };
  }

  /** The current poll interval of a polled repository (diagnostics, tests); undefined when watched. */
  pollInterval(root: string): number | undefined {
    const w = this.repos.get(root);
    return w && !w.watcher ? w.pollEvery : undefined;
  }

  /** Folders the watch worker watches for `root` (diagnostics, tests); undefined without the worker. */
  watchedFolders(root: string): number | undefined {
    return this.repos.get(root)?.watcher?.folders?.();
  }

  /** Resolves when no check is pending or running and every watch is set up (tests). */
  async settled(): Promise<void> {
    for (;;) {
      const busy = [...this.repos.values()].some(
        (w) => w.checking || w.timer !== undefined || w.awaitingWatch,
      );
      if (!busy) return;
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /** The watch worker's received messages and coalesced events (diagnostics, tests); null without one. */
  workerTraffic(): { batches: number; events: number; alive: boolean } | null {
    const w = this.worker;
    return w ? { batches: w.batches, events: w.events, alive: w.alive } : null;
  }

  /** Ends the watch worker as a crash would (tests: the fallback to shallow watches). */
  killWatchWorker(): void {
    this.worker?.kill();
  }

  dispose(): void {
    if (this.pollTimer) clearTimeout(this.pollTimer);
    this.worker?.stop();
    for (const w of this.repos.values()) {
      w.removed = true;
      this.detach(w);
    }
    this.repos.clear();
  }

  private attachWatcher(w: Watched): void {
    if (!this.useEvents || w.watcher || w.removed) return;
    const { hgEvents } = repoFiles(w.root);
    const onEvent = (rel: string | null): void => {
      if (rel === null || !(rel === '.hg' || rel.startsWith('.hg/'))) w.workingCopyChanged = true;
      else if (!hgEvents.has(rel)) return; // caches, journals, revlogs of files: not the summary's
      this.schedule(w, this.debounceMs);
    };
    try {
      const worker = this.watchWorker();
      const shallow = !worker && this.watchMode !== 'native';
      const onReady = (partial: boolean): void => {
        if (w.watcher !== watcher) return;
        w.awaitingWatch = false;
        // too many folders to watch: the root's events, and a poll for the rest
        w.shallow = partial;
        // what changed while the worker set the watch up had no event
        w.workingCopyChanged = true;
        this.schedule(w, 0);
      };
      const watcher = worker
        ? worker.watch(w.root, onEvent, onReady)
        : watchRepository(w.root, shallow, onEvent);
      w.awaitingWatch = worker !== null;
      watcher.onError((notStarted) => {
        if (w.watcher !== watcher) return;
        const neverRead = w.status === undefined;
        this.detachWatcher(w);
        // could not watch (no such folder, out of watches): polled, and watched again after a poll
        if (notStarted && !neverRead) this.planPoll(w, false);
        // the root went away (repository deleted or moved), or the worker died: looked at again now
        else this.schedule(w, 0);
      });
      w.watcher = watcher;
      w.shallow = shallow;
      w.pollAt = Infinity;
    } catch {
      // no such folder, no recursive watch on this system, or out of watches: polled instead
      this.planPoll(w, false);
    }
  }

  /** The live watch worker in watchMode 'worker', started on first use; null = watch on this thread. */
  private watchWorker(): WatchWorker | null {
    if (this.watchMode !== 'worker') return null;
    if (this.worker === undefined) this.worker = WatchWorker.start(this.options.maxWatchedFolders);
    return this.worker?.alive ? this.worker : null;
  }

  private detachWatcher(w: Watched): void {
    w.watcher?.close();
    w.watcher = undefined;
    w.awaitingWatch = false;
    w.shallow = false;
  }

  private detach(w: Watched): void {
    if (w.timer) clearTimeout(w.timer);
    w.timer = undefined;
    w.pollAt = Infinity;
    this.detachWatcher(w);
  }

  private schedule(w: Watched, delayMs: number): void {
    if (w.removed) return;
    if (w.checking) {
      w.again = true;
      return;
    }
    if (w.timer) clearTimeout(w.timer);
    w.timer = setTimeout(() => {
      w.timer = undefined;
      void this.check(w);
    }, delayMs);
  }

  private polled(w: Watched): boolean {
    return !w.watcher || w.shallow;
  }

  /** A repository without events is looked at again later: sooner after a change, later and later without. */
  private planPoll(w: Watched, changed: boolean): void {
    if (w.removed || (w.watcher && !w.shallow) || this.pollMs <= 0) return;
    w.pollEvery = changed ? this.pollMs : Math.min(this.maxPollMs, w.pollEvery * 2);
    w.pollAt = Date.now() + w.pollEvery;
    this.armPollTimer();
  }

  /** One timer for every polled repository, set for the earliest of them. */
  private armPollTimer(): void {
    let next = Infinity;
    for (const w of this.repos.values()) if (this.polled(w) && w.pollAt < next) next = w.pollAt;
    if (next === this.pollTimerAt) return;
    if (this.pollTimer) clearTimeout(this.pollTimer);
    this.pollTimer = undefined;
    this.pollTimerAt = next;
    if (next === Infinity) return;
    this.pollTimer = setTimeout(() => this.pollDue(), Math.max(0, next - Date.now()));
    this.pollTimer.unref?.();
  }

  private pollDue(): void {
    this.pollTimer = undefined;
    this.pollTimerAt = Infinity;
    const now = Date.now();
    for (const w of this.repos.values())
      if (this.polled(w) && w.pollAt <= now) {
        w.pollAt = Infinity;
        // no events: the working copy may have changed unseen
        w.workingCopyChanged = true;
        this.schedule(w, 0);
      }
    this.armPollTimer();
  }

  private async check(w: Watched): Promise<void> {
    if (w.removed || w.checking) return;
    w.checking = true;
    w.again = false;
    let result: CheckResult = 'unchanged';
    try {
      result = await this.checkOnce(w);
    } finally {
      w.checking = false;
    }
    if (w.removed) return;
    if (result === 'locked') this.schedule(w, this.lockRetryMs);
    else if (w.again) this.schedule(w, this.debounceMs);
    else this.planPoll(w, result === 'changed');
  }

  private async checkOnce(w: Watched): Promise<CheckResult> {
    const presence = await repoPresence(w.root);
    if (presence !== 'ok') {
      this.detachWatcher(w);
      w.workingCopyChanged = true;
      if (w.status === presence.status && w.signature === undefined) return 'unchanged';
      w.signature = undefined;
      w.status = presence.status;
      this.options.onState(w.root, presence);
      return 'changed';
    }
    this.attachWatcher(w);
    // The stat is taken before the read: a change during the read makes the next check differ.
    const signature = await statSignature(w.root);
    const repoChanged = signature !== w.signature;
    const readWorkingCopy = this.options.readWorkingCopy;
    const wcChanged = readWorkingCopy !== undefined && (w.workingCopyChanged || repoChanged);
    if (!repoChanged && !wcChanged) return 'unchanged';
    if (await isLocked(w.root)) {
      const now = Date.now();
      w.lockedSince ??= now;
      if (now - w.lockedSince < this.lockWaitMs) return 'locked';
      // a lock older than lockWaitMs: hg died holding it (hg would say "waiting for lock"); read anyway
    }
    w.lockedSince = undefined;
    w.signature = signature;
    w.workingCopyChanged = false;
    let state: RepoState;
    let changed = repoChanged;
    try {
      if (repoChanged || !w.summary) {
        this.reads++;
        w.summary = await this.options.read(w.root);
      }
      state = { status: 'ok', summary: w.summary };
      if (wcChanged) {
        this.workingCopyReads++;
        state.workingCopy = await readWorkingCopy(w.root).then(shownWorkingCopy, (e: unknown) => ({
          problem: (e as Error).message,
        }));
        const key = JSON.stringify(state.workingCopy);
        if (key !== w.workingCopyKey) changed = true;
        w.workingCopyKey = key;
      }
    } catch (e) {
      w.summary = undefined;
      changed = true;
      state = { status: 'unreadable', problem: (e as Error).message };
    }
    if (w.removed || (!changed && w.status === state.status)) return 'unchanged';
    w.status = state.status;
    this.options.onState(w.root, state);
    return 'changed';
  }
}

type CheckResult = 'unchanged' | 'changed' | 'locked';

/** `ok`, or why the repository is not there. */
async function repoPresence(root: string): Promise<'ok' | Exclude<RepoState, { status: 'ok' }>> {
  try {
    const s = await stat(join(root, '.hg'));
    if (!s.isDirectory()) return { status: 'unreadable', problem: `${join(root, '.hg')} is not a directory` };
    return 'ok';
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR')
      return { status: 'missing', problem: `${root} is gone (moved or deleted?)` };
    return { status: 'unreadable', problem: (e as Error).message };
  }
}

/** filecachesubentry.stat + cacheable: every watched file's (dev, ino, size, mtime ns, ctime ns), or '-' when absent. */
export async function statSignature(root: string): Promise<string> {
  const parts = await Promise.all(
    repoFiles(root).files.map(async (file) => {
      try {
        const s = await stat(file, { bigint: true });
        return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        return code === 'ENOENT' || code === 'ENOTDIR' ? '-' : `!${code ?? 'error'}`;
      }
    }),
  );
  return parts.join('|');
}

async function isLocked(root: string): Promise<boolean> {
  const present = await Promise.all(
    lockFiles(root).map((f) =>
      lstat(f).then(
        () => true,
        () => false,
      ),
    ),
  );
  return present.some(Boolean);
}
