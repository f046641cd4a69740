// The repository library: every repository Sluice cloned or applied, plus the ones the user added,
// persisted in the data dir (library.json), each kept current by a RepoWatcher. Row changes reach
// the renderer as batched `library:update` pushes (at most one per `batchMs`). The library's
// settings (background fetch, transfers at once) and each row's last fetch are kept in the same file.

import { stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { SluiceError } from '../engine/errors';
import { JsonFile } from './engine-api';
import { readRepoSummary, repoName, type RepoReader } from './repo-summary';
import { RepoWatcher, type RepoState, type RepoWatcherOptions, type WorkingCopyReader } from './repo-watch';
import { StoreSizer } from './store-sizer';
import {
  DEFAULT_LIBRARY_SETTINGS,
  FETCH_INTERVALS,
  type FetchInterval,
  type FetchResult,
  type LibrarySettings,
  type LibraryUpdate,
  type RepoRow,
} from '../../shared/library';

export const LIBRARY_FILE_VERSION = 1;

interface LibraryEntry {
  path: string;
  addedAt: number;
  origin: RepoRow['origin'];
  lastPullAt?: number;
  fetchInterval?: FetchInterval;
  fetch?: FetchResult;
  /** both sides' heads at the last fetch: a fetch that finds them again reuses its incoming count */
  heads?: FetchHeads;
}

export interface FetchHeads {
  remoteHeads: string[];
  localHeads: string[];
}

interface LibraryFile {
  version: number;
  repos: LibraryEntry[];
  settings?: LibrarySettings;
}

export interface RepoLibraryOptions {
  /** library.json */
  file: string;
  onUpdate: (update: LibraryUpdate) => void;
  /** tests count reads through their own reader; a summary without a size is sized when idle */
  read?: RepoReader;
  /** true while a job runs or waits: store sizes are measured after (default: never busy) */
  busy?: () => boolean;
  /** the working copy's status counts (the engine worker's summary query) */
  readWorkingCopy?: WorkingCopyReader;
  watch?: Omit<RepoWatcherOptions, 'read' | 'onState'>;
  batchMs?: number;
  now?: () => number;
}

export class RepoLibrary {
  private readonly rows = new Map<string, RepoRow>();
  private readonly heads = new Map<string, FetchHeads>();
  private current: LibrarySettings = { ...DEFAULT_LIBRARY_SETTINGS };
  private readonly json: JsonFile<LibraryFile>;
  private readonly watcher: RepoWatcher;
  private readonly sizer: StoreSizer;
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
      read: options.read ?? ((root) => readRepoSummary(root, { withSize: false })),
      ...(options.readWorkingCopy && { readWorkingCopy: options.readWorkingCopy }),
      onState: (root, state) => this.onState(root, state),
    });
    this.sizer = new StoreSizer({
      busy: options.busy ?? (() => false),
      onSize: (root, size) => this.onSize(root, size),
    });
  }

  /** Reads library.json and starts watching its repositories (once). */
  load(): Promise<void> {
    this.loaded ??= (async () => {
      const file = await this.json.read();
      if (file?.settings) this.current = file.settings;
      for (const entry of file?.repos ?? []) {
        if (this.rows.has(entry.path)) continue;
        this.rows.set(entry.path, emptyRow(entry));
        if (entry.heads) this.heads.set(entry.path, entry.heads);
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
    this.sizer.forget(root);
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

  async settings(): Promise<LibrarySettings> {
    await this.load();
    return { ...this.current };
  }

  async setSettings(change: Partial<LibrarySettings>): Promise<LibrarySettings> {
    await this.load();
    this.current = { ...this.current, ...change };
    await this.save();
    return { ...this.current };
  }

  /** A repository's own background fetch interval; undefined = the library's. */
  async setFetchInterval(path: string, interval: FetchInterval | undefined): Promise<void> {
    await this.load();
    const row = this.rows.get(resolve(path));
    if (!row) throw new SluiceError('USAGE', `${path} is not a repository of the library`);
    if (interval === undefined) delete row.fetchInterval;
    else row.fetchInterval = interval;
    this.markChanged(row.path);
    await this.save();
  }

  /** Shown while a fetch of the row runs or waits. */
  setFetching(path: string, fetching: boolean): void {
    const row = this.rows.get(resolve(path));
    if (!row || (row.fetching ?? false) === fetching) return;
    if (fetching) row.fetching = true;
    else delete row.fetching;
    this.markChanged(row.path);
  }

  /** A fetch ended: its counts (with the heads they are for) or its error. */
  noteFetch(path: string, result: FetchResult, heads?: FetchHeads): void {
    const root = resolve(path);
    const row = this.rows.get(root);
    if (!row) return;
    row.fetch = result;
    if (heads) this.heads.set(root, heads);
    this.markChanged(root);
    void this.save();
  }

  /** The heads and incoming count of the last successful fetch, for fetchCounts' `previous`. */
  previousFetch(path: string): (FetchHeads & { incoming: number }) | undefined {
    const root = resolve(path);
    const fetch = this.rows.get(root)?.fetch;
    const heads = this.heads.get(root);
    return fetch && 'incoming' in fetch && heads ? { ...heads, incoming: fetch.incoming } : undefined;
  }

  /** Resolves when the watcher has nothing pending (tests). */
  settled(): Promise<void> {
    return this.watcher.settled();
  }

  get reads(): number {
    return this.watcher.reads;
  }

  /** The watcher's counters: summary and working-copy reads, repositories watched and polled. */
  watchStats(): { reads: number; workingCopyReads: number; watched: number; polled: number } {
    return {
      reads: this.watcher.reads,
      workingCopyReads: this.watcher.workingCopyReads,
      ...this.watcher.counts(),
    };
  }

  async dispose(): Promise<void> {
    this.watcher.dispose();
    this.sizer.dispose();
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
    for (const k of ['lastPullAt', 'fetch', 'fetching', 'fetchInterval', 'workingCopy'] as const)
      if (row[k] !== undefined) Object.assign(next, { [k]: row[k] });
    if (state.status === 'ok') {
      if (state.workingCopy) next.workingCopy = state.workingCopy;
      const s = state.summary;
      Object.assign(next, { tip: s.tip, parent: s.parent });
      if (s.source !== undefined) next.source = s.source;
      if (s.storeBytes !== undefined)
        Object.assign(next, { storeBytes: s.storeBytes, storeFiles: s.storeFiles });
      else {
        // the last size known until the store is measured again, when no job runs
        for (const k of ['storeBytes', 'storeFiles'] as const)
          if (row[k] !== undefined) Object.assign(next, { [k]: row[k] });
        this.sizer.request(root);
      }
    } else {
      next.problem = state.problem;
      // keep what was last known, so a repository on an unplugged disk still says what it was
      for (const k of ['source', 'tip', 'parent', 'storeBytes', 'storeFiles'] as const)
        if (row[k] !== undefined) Object.assign(next, { [k]: row[k] });
    }
    this.rows.set(root, next);
    this.markChanged(root);
  }

  private onSize(root: string, size: { bytes: number; files: number }): void {
    const row = this.rows.get(root);
    if (!row || row.status !== 'ok') return;
    if (row.storeBytes === size.bytes && row.storeFiles === size.files) return;
    this.rows.set(root, { ...row, storeBytes: size.bytes, storeFiles: size.files });
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
    const repos: LibraryEntry[] = [...this.rows.values()].map((r) => {
      const heads = this.heads.get(r.path);
      return {
        path: r.path,
        addedAt: r.addedAt,
        origin: r.origin,
        ...(r.lastPullAt !== undefined && { lastPullAt: r.lastPullAt }),
        ...(r.fetchInterval !== undefined && { fetchInterval: r.fetchInterval }),
        ...(r.fetch !== undefined && { fetch: r.fetch }),
        ...(heads && { heads }),
      };
    });
    return this.json.write({ version: LIBRARY_FILE_VERSION, repos, settings: this.current });
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
  return {
    version: v.version,
    repos: repos.map((r) => {
      const entry: LibraryEntry = { path: resolve(r.path), addedAt: r.addedAt, origin: r.origin };
      if (typeof r.lastPullAt === 'number') entry.lastPullAt = r.lastPullAt;
      if (FETCH_INTERVALS.includes(r.fetchInterval as FetchInterval)) entry.fetchInterval = r.fetchInterval!;
      if (isFetchResult(r.fetch)) entry.fetch = r.fetch;
      if (isHeads(r.heads)) entry.heads = r.heads;
      return entry;
    }),
    settings: parseSettings(v.settings),
  };
}

function isFetchResult(v: unknown): v is FetchResult {
  const f = v as Record<string, unknown> | null;
  if (!f || typeof f !== 'object' || typeof f.at !== 'number') return false;
  if (typeof f.incoming === 'number') return typeof f.outgoing === 'number';
  const s = f.needsSignIn as Record<string, unknown> | undefined;
  if (s) return typeof s.message === 'string';
  const e = f.error as Record<string, unknown> | undefined;
  return !!e && typeof e.code === 'string' && typeof e.message === 'string';
}

const HEX40 = /^[0-9a-f]{40}$/;
function isHeads(v: unknown): v is FetchHeads {
  const h = v as Record<string, unknown> | null;
  const list = (x: unknown): boolean =>
    Array.isArray(x) && x.length <= 10_000 && x.every((n) => typeof n === 'string' && HEX40.test(n));
  return !!h && typeof h === 'object' && list(h.remoteHeads) && list(h.localHeads);
}

/** Settings as stored, each out-of-range value replaced by its default. */
function parseSettings(v: unknown): LibrarySettings {
  const s = (v && typeof v === 'object' ? v : {}) as Record<string, unknown>;
  const d = DEFAULT_LIBRARY_SETTINGS;
  const count = (x: unknown, dflt: number): number =>
    Number.isInteger(x) && (x as number) >= 1 && (x as number) <= 16 ? (x as number) : dflt;
  return {
    fetchInterval: FETCH_INTERVALS.includes(s.fetchInterval as FetchInterval)
      ? (s.fetchInterval as FetchInterval)
      : d.fetchInterval,
    fetchConcurrency: count(s.fetchConcurrency, d.fetchConcurrency),
    maxTransfers: count(s.maxTransfers, d.maxTransfers),
  };
}
