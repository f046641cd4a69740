// The repository library's data as the renderer sees it: one row per repository, kept true by the
// host's filecache-style watcher (src/main/host/repo-watch.ts).

/** The changelog's tip (hg log -r tip). */
export interface RepoTip {
  rev: number;
  /** 12 hex digits, hg's short node */
  node: string;
  /** commit time, ms since the epoch */
  date: number;
  /** hg's timezone offset: seconds west of UTC */
  tz: number;
  user: string;
  /** the description's first line */
  summary: string;
  branch: string;
  /** bookmarks that point at the tip */
  bookmarks: string[];
}

/** The working copy's first parent; null in RepoRow.parent = "no working copy" (hg update null, clone -U). */
export interface RepoParent {
  node: string;
  /** found among the last revisions of the changelog; absent when further back */
  rev?: number;
  /** a merge in progress */
  merging: boolean;
}

export type RepoStatus = 'loading' | 'ok' | 'missing' | 'unreadable';

/** hg status's counts (M/A/R/!/?), hg branch and the active bookmark. */
export interface WorkingCopyCounts {
  modified: number;
  added: number;
  removed: number;
  deleted: number;
  unknown: number;
  branch: string;
  bookmark?: string;
}

/** A row's working copy, or why it could not be read (an unsupported requirement, a lock). */
export type WorkingCopyState = WorkingCopyCounts | { problem: string };

/** Background fetch intervals in minutes; 0 = off. */
export const FETCH_INTERVALS = [0, 5, 15, 60] as const;
export type FetchInterval = (typeof FETCH_INTERVALS)[number];

/**
 * The last fetch of a row: what hg incoming and hg outgoing would count, or why it failed. A
 * source that wants credentials (HTTP 401, an ssh login refused) is `needsSignIn`: a fetch without
 * a person at hand never asks, the row offers "Sign in…" (the same fetch, asking), and the
 * background fetch leaves the row alone until then.
 */
export type FetchResult =
  | { at: number; incoming: number; outgoing: number }
  | { at: number; error: { code: string; message: string } }
  | { at: number; needsSignIn: { message: string } };

/** Library-wide settings, kept with the library (library.json). */
export interface LibrarySettings {
  /** background fetch of every repository without its own interval */
  fetchInterval: FetchInterval;
  /** fetches at once (Fetch all and background) */
  fetchConcurrency: number;
  /** transfers (jobs) running at once; more wait in the queue */
  maxTransfers: number;
}

export const DEFAULT_LIBRARY_SETTINGS: LibrarySettings = {
  fetchInterval: 0,
  fetchConcurrency: 4,
  maxTransfers: 2,
};

export interface RepoRow {
  /** absolute path of the repository root, the row's key */
  path: string;
  name: string;
  status: RepoStatus;
  /** why it is missing or unreadable */
  problem?: string;
  /** paths.default, without credentials */
  source?: string;
  /** null: an empty repository */
  tip?: RepoTip | null;
  parent?: RepoParent | null;
  storeBytes?: number;
  storeFiles?: number;
  /** when Sluice last cloned or pulled into it (hg keeps no such record) */
  lastPullAt?: number;
  addedAt: number;
  /** how it got into the library */
  origin: 'clone' | 'apply' | 'user';
  /** host clock of the last (re-)read */
  readAt?: number;
  /** hg status's counts, branch and bookmark; absent until read */
  workingCopy?: WorkingCopyState;
  /** the last fetch (background or Fetch all) */
  fetch?: FetchResult;
  /** a fetch of this row is running or waiting */
  fetching?: boolean;
  /** this repository's own background fetch interval; absent = the library's */
  fetchInterval?: FetchInterval;
}

/** Changesets that arrived on a source since the last fetch (a notification). */
export interface IncomingNotice {
  path: string;
  name: string;
  /** incoming now, and before this fetch */
  incoming: number;
  previous: number;
}

/** A batch of row changes pushed to the renderer. */
export interface LibraryUpdate {
  rows: RepoRow[];
  removed: string[];
}

/** The clone dialog's check of a destination before submit. */
export interface DestinationCheck {
  ok: boolean;
  /** "is a file", "is not empty", ... when not ok; a note ("will be created") when ok */
  reason?: string;
}
