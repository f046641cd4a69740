// The repository library: every repository Sluice cloned or applied, plus the ones the user added,
// persisted in the data dir (library.json), each kept current by a RepoWatcher. Row changes reach
// the renderer as batched `library:update` pushes (at most one per `batchMs`).

import { stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { SluiceError } from '../engine/errors';
import { JsonFile } from './engine-api';
import { readRepoSummary, repoName, type RepoReader } from './repo-summary';
import { RepoWatcher, type RepoState, type RepoWatcherOptions } from './repo-watch';
import type { LibraryUpdate, RepoRow } from '../../shared/library';

export const LIBRARY_FILE_VERSION = 1;

interface LibraryEntry {
  path: string;
  addedAt: number;
  origin: RepoRow['origin'];
  lastPullAt?: number;
}

interface LibraryFile {
  version: number;
  repos: LibraryEntry[];
}

export interface RepoLibraryOptions {
  /** library.json */
  file: string;
  onUpdate: (update: LibraryUpdate) => void;
  /** tests count reads through their own reader */
  read?: RepoReader;
  watch?: Omit<RepoWatcherOptions, 'read' | 'onState'>;
  batchMs?: number;
  now?: () => number;
}

export class RepoLibrary {
  private readonly rows = new Map<string, RepoRow>();
  private readonly json: JsonFile<LibraryFile>;
  private readonly watcher: RepoWatcher;
  private readonly now: () => number;
  private loaded: Promise<void> | null = null;
  private changed = new Set<string>();
  private removed = new Set<string>();
  private flushTimer?: ReturnType<typeof setTimeout>;

  constructor(private readonly options: RepoLibraryOptions) {
    this.now = options.now ?? Date.now;
    this.json = new JsonFile(options.file, parseLibraryFile, 'library');
    this.watcher = new RepoWatcher({
      ...options.watch,
      read: options.read ?? readRepoSummary,
      onState: (root, state) => this.onState(root, state),
    });
  }

  /** Reads library.json and starts watching its repositories (once). */
  load(): Promise<void> {
    this.loaded ??= (async () => {
      const file = await this.json.read();
      for (const entry of file?.repos ?? []) {
        if (this.rows.has(entry.path)) continue;
        this.rows.set(entry.path, emptyRow(entry));
        this.watcher.add(entry.path);
      }
    })();
    return this.loaded;
  }

  async list(): Promise<RepoRow[]> {
    await this.load();
    return [...this.rows.values()].map((r) => ({ ...r }));
  }

  /** Whether `path` is a repository of the library (shell requests are limited to known paths). */
  has(path: string): boolean {
    return this.rows.has(resolve(path));
  }

  get(path: string): RepoRow | undefined {
    const row = this.rows.get(resolve(path));
    return row && { ...row };
  }

  /**
   * Adds a repository (a folder holding `.hg`); adding one already listed keeps its row and only
   * records a newer pull time. `pulledAt`: a clone or pull by Sluice just finished.
   */
  async add(path: string, origin: RepoRow['origin'], pulledAt?: number): Promise<RepoRow> {
    await this.load();
    const root = resolve(path);
    await assertRepository(root);
    const existing = this.rows.get(root);
    if (existing) {
      if (pulledAt !== undefined) this.notePull(root, pulledAt);
      this.watcher.touch(root);
      return { ...this.rows.get(root)! };
    }
    const row = emptyRow({
      path: root,
      addedAt: this.now(),
      origin,
      ...(pulledAt !== undefined && { lastPullAt: pulledAt }),
    });
    this.rows.set(root, row);
    this.markChanged(root);
    await this.save();
    this.watcher.add(root);
    return { ...row };
  }

  async remove(path: string): Promise<void> {
    await this.load();
    const root = resolve(path);
    if (!this.rows.delete(root)) return;
    this.watcher.remove(root);
    this.changed.delete(root);
    this.removed.add(root);
    this.scheduleFlush();
    await this.save();
  }

  /** A Sluice pull (or clone) into `path` finished at `at`. */
  notePull(path: string, at: number): void {
    const root = resolve(path);
    const row = this.rows.get(root);
    if (!row) return;
    row.lastPullAt = at;
    this.markChanged(root);
    void this.save();
    this.watcher.touch(root);
  }

  /** Resolves when the watcher has nothing pending (tests). */
  settled(): Promise<void> {
    return this.watcher.settled();
  }

  get reads(): number {
    return this.watcher.reads;
  }

  async dispose(): Promise<void> {
    this.watcher.dispose();
    if (this.flushTimer) clearTimeout(this.flushTimer);
    await this.json.flushed();
  }

  private onState(root: string, state: RepoState): void {
    const row = this.rows.get(root);
    if (!row) return;
    const next: RepoRow = {
      path: row.path,
      name: row.name,
      addedAt: row.addedAt,
      origin: row.origin,
      status: state.status,
      readAt: this.now(),
    };
    if (row.lastPullAt !== undefined) next.lastPullAt = row.lastPullAt;
    if (state.status === 'ok') {
      const s = state.summary;
      Object.assign(next, {
        tip: s.tip,
        parent: s.parent,
        storeBytes: s.storeBytes,
        storeFiles: s.storeFiles,
      });
      if (s.source !== undefined) next.source = s.source;
    } else {
      next.problem = state.problem;
      // keep what was last known, so a repository on an unplugged disk still says what it was
      for (const k of ['source', 'tip', 'parent', 'storeBytes', 'storeFiles'] as const)
        if (row[k] !== undefined) Object.assign(next, { [k]: row[k] });
    }
    this.rows.set(root, next);
    this.markChanged(root);
  }

  private markChanged(root: string): void {
    this.changed.add(root);
    this.removed.delete(root);
    this.scheduleFlush();
  }

  private scheduleFlush(): void {
    if (this.flushTimer) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined;
      const rows = [...this.changed].flatMap((p) => {
        const r = this.rows.get(p);
        return r ? [{ ...r }] : [];
      });
      const removed = [...this.removed];
      this.changed.clear();
      this.removed.clear();
      if (rows.length > 0 || removed.length > 0) this.options.onUpdate({ rows, removed });
    }, this.options.batchMs ?? 100);
  }

  private save(): Promise<void> {
    const repos: LibraryEntry[] = [...this.rows.values()].map((r) => ({
      path: r.path,
      addedAt: r.addedAt,
      origin: r.origin,
      ...(r.lastPullAt !== undefined && { lastPullAt: r.lastPullAt }),
    }));
    return this.json.write({ version: LIBRARY_FILE_VERSION, repos });
  }
}

function emptyRow(entry: LibraryEntry): RepoRow {
  return { ...entry, name: repoName(entry.path), status: 'loading' };
}

/** hg's "repository X not found" unless `root/.hg` is a directory. */
export async function assertRepository(root: string): Promise<void> {
  try {
    if ((await stat(join(root, '.hg'))).isDirectory()) return;
  } catch {
    // below
  }
  throw new SluiceError('NOT_A_REPO', `${root} is not a Mercurial repository (no .hg folder)`);
}

function parseLibraryFile(value: unknown): LibraryFile {
  const v = value as LibraryFile;
  if (!v || v.version !== LIBRARY_FILE_VERSION || !Array.isArray(v.repos))
    throw new Error('unexpected shape');
  const repos = v.repos.filter(
    (r) =>
      r &&
      typeof r.path === 'string' &&
      typeof r.addedAt === 'number' &&
      (r.origin === 'clone' || r.origin === 'apply' || r.origin === 'user'),
  );
  return { version: v.version, repos: repos.map((r) => ({ ...r, path: resolve(r.path) })) };
}
