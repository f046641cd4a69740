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
