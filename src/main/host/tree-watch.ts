// One repository watched folder by folder (inotify's way; what the watch worker runs on Linux):
// the root, `.hg` and `.hg/store` without their subfolders, since every file a row depends on sits
// there (repo-summary.ts repoFiles) and `.hg/store/data` and `meta` hold a folder per tracked
// folder and a revlog per file, and every folder of the working copy, with folders that appear
// added and folders that go removed. Node's recursive watch on Linux walks and watches all of
// `.hg` too (tens of thousands of entries after a clone), competing with the next job for the CPU.
// Past `maxFolders` working-copy folders, or when a folder cannot be watched, only the root is
// kept for the working copy and the repository is reported partial (its owner polls it).

import { watch, type FSWatcher } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join, sep } from 'node:path';

export interface TreeWatchOptions {
  /** every event, as a path relative to the root ('/'-separated); null = unknown */
  onEvent: (rel: string | null) => void;
  /** the watch of the root or of `.hg` failed: the repository is no longer watched */
  onFailure: (error: unknown) => void;
  /** the working copy is no longer watched below its root (see `partial`) */
  onPartial: () => void;
  /** working-copy folders watched at most (the root included); past it, the rest is polled */
  maxFolders: number;
  /** folders read per step of a walk; the walk then rests as long as the step took */
  walkBatch?: number;
}

interface Folder {
  watcher: FSWatcher;
  children: Map<string, Folder>;
}

const WALK_BATCH = 64;
/** folder-list changes are applied this long after the event that announced them */
const RESCAN_DELAY_MS = 50;

export class TreeWatch {
  private readonly hgWatchers: FSWatcher[] = [];
  private rootFolder?: Folder;
  private folders = 0;
  private closed = false;
  private partialSince = false;
  private readonly rescans = new Set<string>();
  private rescanTimer?: ReturnType<typeof setTimeout>;
  private walking: Promise<void> = Promise.resolve();
  /** rests taken between the steps of walks (diagnostics, tests) */
  rests = 0;

  constructor(
    private readonly root: string,
    private readonly options: TreeWatchOptions,
  ) {}

  /** Watches the root and `.hg` (throws when it cannot), then walks the working copy's folders. */
  async start(): Promise<void> {
    this.rootFolder = this.watchFolder('');
    this.hgWatchers.push(this.watchFixed('.hg'));
    try {
      this.hgWatchers.push(this.watchFixed('.hg/store'));
    } catch {
      // a repository without a store (hg's pre-store format) or being made: the root's events cover it
    }
    await this.walk([['', this.rootFolder]], false);
  }

  /** Working-copy folders watched, the root included, plus `.hg` and `.hg/store` (diagnostics, tests). */
  get watchedFolders(): number {
    return this.folders + this.hgWatchers.length;
  }

  /** true once the working copy is too large or a folder could not be watched: only its root has events */
  get partial(): boolean {
    return this.partialSince;
  }

  close(): void {
    this.closed = true;
    if (this.rescanTimer) clearTimeout(this.rescanTimer);
    for (const w of this.hgWatchers) w.close();
    this.hgWatchers.length = 0;
    if (this.rootFolder) this.closeFolder(this.rootFolder);
    this.rootFolder = undefined;
  }

  private watchFixed(rel: string): FSWatcher {
    const w = watch(join(this.root, rel), { persistent: false }, (_type, name) =>
      this.options.onEvent(name === null ? null : `${rel}/${String(name)}`),
    );
    w.on('error', (e) => this.fail(e));
    return w;
  }

  private watchFolder(rel: string): Folder {
    const prefix = rel ? `${rel}/` : '';
    const watcher = watch(join(this.root, rel), { persistent: false }, (type, name) => {
      this.options.onEvent(name === null ? null : prefix + String(name).split(sep).join('/'));
      // a folder created, removed or renamed in it: its list of folders is read again
      if (type === 'rename' || name === null) this.planRescan(rel);
    });
    const folder: Folder = { watcher, children: new Map() };
    watcher.on('error', (e) => (rel ? this.planRescan(parentOf(rel)) : this.fail(e)));
    this.folders++;
    return folder;
  }

  private closeFolder(folder: Folder): void {
    folder.watcher.close();
    this.folders--;
    for (const child of folder.children.values()) this.closeFolder(child);
    folder.children.clear();
  }

  private fail(e: unknown): void {
    if (this.closed) return;
    this.close();
    this.options.onFailure(e);
  }

  /** Past the bound or out of watches: only the root's own events are kept for the working copy. */
  private becomePartial(): void {
    if (this.partialSince || !this.rootFolder) return;
    this.partialSince = true;
    for (const child of this.rootFolder.children.values()) this.closeFolder(child);
    this.rootFolder.children.clear();
    this.options.onPartial();
  }

  private planRescan(rel: string): void {
    if (this.closed || this.partialSince) return;
    this.rescans.add(rel);
    this.rescanTimer ??= setTimeout(() => {
      this.rescanTimer = undefined;
      const folders = [...this.rescans];
      this.rescans.clear();
      // one walk at a time: two would watch the same new folder twice
      this.walking = this.walking.then(() => this.rescan(folders));
    }, RESCAN_DELAY_MS);
  }

  /** Reads each folder's list again: new folders are watched (and walked), gone ones closed. */
  private async rescan(rels: string[]): Promise<void> {
    const starts: [string, Folder][] = [];
    for (const rel of rels) {
      const folder = this.folderAt(rel);
      if (folder) starts.push([rel, folder]);
    }
    await this.walk(starts, true);
  }

  private folderAt(rel: string): Folder | undefined {
    let folder = this.rootFolder;
    if (rel === '') return folder;
    for (const name of rel.split('/')) folder = folder?.children.get(name);
    return folder;
  }

  /**
   * Breadth-first over the given folders and any new folder below them, WALK_BATCH folders a step,
   * resting between steps as long as the step took: a large new working copy is watched at half a
   * core at most, and the job that wrote it (or the next one) keeps the rest.
   */
  private async walk(queue: [string, Folder][], announce: boolean): Promise<void> {
    const batch = this.options.walkBatch ?? WALK_BATCH;
    while (queue.length > 0 && !this.closed && !this.partialSince) {
      const began = performance.now();
      const step = queue.splice(0, batch);
      await Promise.all(step.map(([rel, folder]) => this.syncChildren(rel, folder, queue, announce)));
      if (queue.length > 0) {
        this.rests++;
        await rest(performance.now() - began);
      }
    }
  }

  /** Watches the new subfolders of one folder (queued to be walked) and closes the ones gone. */
  private async syncChildren(
    rel: string,
    folder: Folder,
    queue: [string, Folder][],
    announce: boolean,
  ): Promise<void> {
    let names: Set<string>;
    try {
      const entries = await readdir(join(this.root, rel), { withFileTypes: true });
      // symbolic links are not followed (hg tracks the link, not its target); `.hg` has its own watches
      names = new Set(
        entries.filter((e) => e.isDirectory() && !(rel === '' && e.name === '.hg')).map((e) => e.name),
      );
    } catch {
      names = new Set(); // gone meanwhile: its parent's event closes it
    }
    if (this.closed || this.partialSince || this.folderAt(rel) !== folder) return;
    for (const [name, child] of folder.children)
      if (!names.has(name)) {
        this.closeFolder(child);
        folder.children.delete(name);
      }
    for (const name of names) {
      if (folder.children.has(name)) continue;
      if (this.folders >= this.options.maxFolders) return this.becomePartial();
      const childRel = rel ? `${rel}/${name}` : name;
      let child: Folder;
      try {
        child = this.watchFolder(childRel);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'ENOTDIR') continue; // removed since the list was read
        return this.becomePartial(); // out of inotify watches, or not allowed
      }
      folder.children.set(name, child);
      // files written into a new folder before its watch was set up had no event of their own
      if (announce) this.options.onEvent(childRel);
      queue.push([childRel, child]);
    }
  }
}

function parentOf(rel: string): string {
  const slash = rel.lastIndexOf('/');
  return slash < 0 ? '' : rel.slice(0, slash);
}

function rest(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(1, Math.min(ms, 100))));
}
