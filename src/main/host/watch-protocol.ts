// The messages between the repository watcher (watch-worker.ts, main thread) and its worker
// thread (watch-worker-entry.ts).

export const WATCH_WORKER_KIND = 'sluice-watch-worker';

/** events are collected this long before they are posted: a storm is a few messages, not one per file */
export const WATCH_FLUSH_MS = 75;

/** more changed paths than this in one window are posted as "something changed" (null) */
export const MAX_PATHS_PER_ROOT = 256;

/**
 * Working-copy folders watched at most per repository, and in all (each is one inotify watch, a
 * per-user resource the rest of the system shares); past either, the repository is polled.
 */
export const MAX_FOLDERS_PER_ROOT = 4096;
export const MAX_FOLDERS = 16_384;

export interface WatchWorkerData {
  kind: typeof WATCH_WORKER_KIND;
  /** MAX_FOLDERS_PER_ROOT unless set (tests) */
  maxFoldersPerRoot?: number;
}

/** id: one watch of the repository at `root` (a root watched again after a remove is a new id) */
export type WatchCommand = { type: 'add'; id: number; root: string } | { type: 'remove'; id: number };

export interface WatchBatch {
  type: 'events';
  /** file-system events coalesced into this batch (diagnostics, tests) */
  raw: number;
  /** per watch: the changed paths relative to its root ('/'-separated), or null = unknown; folders watched */
  watches: { id: number; paths: string[] | null; folders: number }[];
}

export interface WatchFailure {
  type: 'error';
  id: number;
  /** false: the watch could not be set up; true: a working watch stopped (e.g. its root went away) */
  started: boolean;
  message: string;
}

/**
 * The watch of `id` is set up: events from here on are posted. Posted again with partial = true
 * when its working copy grew past the bound (or out of watches): only the root's own events then.
 */
export interface WatchStarted {
  type: 'watching';
  id: number;
  partial: boolean;
  /** folders watched: the working copy's, `.hg` and `.hg/store` */
  folders: number;
}

export type WatchWorkerMessage = WatchBatch | WatchFailure | WatchStarted;
