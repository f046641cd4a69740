// Live repository state the way hg's filecache keeps a cached property (scmutil.filecache,
// filecachesubentry): a repository's summary is reused while the stat of each file it depends on
// (size, inode, mtime and ctime in nanoseconds) is unchanged, and read again the moment one changed.
// Changes are noticed by fs.watch on `.hg` and `.hg/store` (hg replaces dirstate, bookmarks and
// phaseroots by rename, so the directories are watched, not the files), debounced, and by a slow
// poll for file systems without events; either only compares stats, so an unchanged repository is
// never read again. While hg holds `.hg/wlock` or `.hg/store/lock` it is mid-write: the read waits
// for the lock's release (its removal is an event too), so one `hg commit` is one read.

import { watch, type FSWatcher } from 'node:fs';
import { lstat, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { lockFiles, repoFiles, type RepoReader, type RepoSummary } from './repo-summary';

export type RepoState =
  | { status: 'ok'; summary: RepoSummary }
  | { status: 'missing'; problem: string }
  | { status: 'unreadable'; problem: string };

export interface RepoWatcherOptions {
  read: RepoReader;
  /** called after each read, and when a repository disappears or returns */
  onState: (root: string, state: RepoState) => void;
  /** quiet time after a file-system event before the stats are compared */
  debounceMs?: number;
  /** the fallback poll: every repository's stats compared at this interval (0 = no poll) */
  pollMs?: number;
  /** how often a locked repository is looked at again, and how long a lock is waited for at most */
  lockRetryMs?: number;
  lockWaitMs?: number;
  /** tests: no fs.watch, poll only */
  useEvents?: boolean;
}

interface Watched {
  root: string;
  /** the stat signature the current state was read at; undefined = never read */
  signature?: string;
  status?: RepoState['status'];
  watchers: FSWatcher[];
  timer?: ReturnType<typeof setTimeout>;
  checking: boolean;
  /** an event arrived while checking: check again after */
  again: boolean;
  lockedSince?: number;
  removed: boolean;
}

export class RepoWatcher {
  private readonly repos = new Map<string, Watched>();
  private readonly debounceMs: number;
  private readonly lockRetryMs: number;
  private readonly lockWaitMs: number;
  private readonly useEvents: boolean;
  private pollTimer?: ReturnType<typeof setInterval>;
  private polling = false;
  /** reads done, for diagnostics */
  reads = 0;

  constructor(private readonly options: RepoWatcherOptions) {
    this.debounceMs = options.debounceMs ?? 100;
    this.lockRetryMs = options.lockRetryMs ?? 100;
    this.lockWaitMs = options.lockWaitMs ?? 30_000;
    this.useEvents = options.useEvents ?? true;
    const pollMs = options.pollMs ?? 5000;
    if (pollMs > 0) {
      this.pollTimer = setInterval(() => void this.poll(), pollMs);
      this.pollTimer.unref?.();
    }
  }

  /** Starts watching `root` and reads it once. */
  add(root: string): void {
    if (this.repos.has(root)) return;
    const w: Watched = { root, watchers: [], checking: false, again: false, removed: false };
    this.repos.set(root, w);
    this.attachWatchers(w);
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

  /** Resolves when no check is pending or running (tests). */
  async settled(): Promise<void> {
    for (;;) {
      const busy = [...this.repos.values()].some((w) => w.checking || w.timer !== undefined);
      if (!busy && !this.polling) return;
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  dispose(): void {
    if (this.pollTimer) clearInterval(this.pollTimer);
    for (const w of this.repos.values()) {
      w.removed = true;
      this.detach(w);
    }
    this.repos.clear();
  }

  private attachWatchers(w: Watched): void {
    if (!this.useEvents || w.watchers.length > 0) return;
    for (const { dir, names } of repoFiles(w.root).dirs) {
      try {
        const watcher = watch(dir, { persistent: false }, (_type, name) => {
          if (name === null || names.includes(String(name))) this.schedule(w, this.debounceMs);
        });
        // The directory went away (repository deleted or moved): the poll notices its return.
        watcher.on('error', () => this.detach(w));
        w.watchers.push(watcher);
      } catch {
        // no such directory yet (a repository without a store, or missing): the poll covers it
      }
    }
  }

  private detach(w: Watched): void {
    if (w.timer) clearTimeout(w.timer);
    w.timer = undefined;
    for (const watcher of w.watchers) watcher.close();
    w.watchers = [];
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

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      const all = [...this.repos.values()].filter((w) => !w.checking && w.timer === undefined);
      // a few at a time: a poll of hundreds of repositories stays a trickle of stat calls
      for (let i = 0; i < all.length; i += 16)
        await Promise.all(all.slice(i, i + 16).map((w) => this.check(w)));
    } finally {
      this.polling = false;
    }
  }

  private async check(w: Watched): Promise<void> {
    if (w.removed || w.checking) return;
    w.checking = true;
    w.again = false;
    let locked = false;
    try {
      locked = await this.checkOnce(w);
    } finally {
      w.checking = false;
    }
    if (w.removed) return;
    if (locked) this.schedule(w, this.lockRetryMs);
    else if (w.again) this.schedule(w, this.debounceMs);
  }

  /** true: the repository is locked, look again soon */
  private async checkOnce(w: Watched): Promise<boolean> {
    const presence = await repoPresence(w.root);
    if (presence !== 'ok') {
      this.detach(w);
      if (w.status !== presence.status || w.signature !== undefined) {
        w.signature = undefined;
        w.status = presence.status;
        this.options.onState(w.root, presence);
      }
      return false;
    }
    this.attachWatchers(w);
    // The stat is taken before the read: a change during the read makes the next check differ.
    const signature = await statSignature(w.root);
    if (signature === w.signature) return false;
    if (await isLocked(w.root)) {
      const now = Date.now();
      w.lockedSince ??= now;
      if (now - w.lockedSince < this.lockWaitMs) return true;
      // a lock older than lockWaitMs: hg died holding it (hg would say "waiting for lock"); read anyway
    }
    w.lockedSince = undefined;
    w.signature = signature;
    let state: RepoState;
    try {
      this.reads++;
      state = { status: 'ok', summary: await this.options.read(w.root) };
    } catch (e) {
      state = { status: 'unreadable', problem: (e as Error).message };
    }
    if (w.removed) return false;
    w.status = state.status;
    this.options.onState(w.root, state);
    return false;
  }
}

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
