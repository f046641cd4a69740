// One repository's row data, read with async file I/O only (the main process never blocks): the
// changelog's tip through the engine's tail reader (the last entry and its chunks, not the history),
// the working copy's parents from the start of .hg/dirstate, bookmarks, paths.default, and (unless
// read without it: the library measures it apart, store-sizer.ts) the store's size and file count
// from a directory walk.

import { lstat, open, readdir, readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import * as engine from './engine-api';
import type { RepoParent, RepoTip, WorkingCopyState } from '../../shared/library';
import { shownText } from '../../shared/shown-text';

export interface RepoSummary {
  source?: string;
  tip: RepoTip | null;
  parent: RepoParent | null;
  /** absent when read without the store's size (see readRepoSummary) */
  storeBytes?: number;
  storeFiles?: number;
}

/** The files whose stat decides whether a repository must be read again (see repo-watch.ts). */
export interface RepoFiles {
  /** absolute paths, watched by stat */
  files: string[];
  /** paths relative to the root (with `/`) whose events matter inside `.hg` */
  hgEvents: Set<string>;
}

export type RepoReader = (root: string) => Promise<RepoSummary>;

/**
 * The files of the filecache: changelog (+ data, nodemap docket), bookmarks, phaseroots, dirstate,
 * hgrc, plus the working copy's branch and active bookmark. Bookmarks live in the store with
 * `bookmarksinstore`; the locks are events too (their removal ends a write).
 */
export function repoFiles(root: string): RepoFiles {
  const storeNames = ['00changelog.i', '00changelog.d', '00changelog.n', 'phaseroots', 'bookmarks'];
  const hgNames = ['dirstate', 'bookmarks', 'bookmarks.current', 'branch', 'hgrc', 'requires'];
  return {
    files: [
      ...storeNames.map((n) => join(root, '.hg', 'store', n)),
      ...hgNames.map((n) => join(root, '.hg', n)),
    ],
    hgEvents: new Set([
      '.hg',
      '.hg/store',
      '.hg/wlock',
      '.hg/store/lock',
      ...storeNames.map((n) => `.hg/store/${n}`),
      ...hgNames.map((n) => `.hg/${n}`),
    ]),
  };
}

/** Lock files hg holds while it writes (localrepo.wlock/lock): a reader waits until they are gone. */
export function lockFiles(root: string): string[] {
  return [join(root, '.hg', 'wlock'), join(root, '.hg', 'store', 'lock')];
}

/**
 * withSize false: no walk of the store (a stat per file, as much CPU as a stream apply of the same
 * repository); the library measures sizes apart, when no job runs (store-sizer.ts).
 */
export async function readRepoSummary(root: string, { withSize = true } = {}): Promise<RepoSummary> {
  const loc = await engine.locateRepository(root);
  const [source, bookmarks] = await Promise.all([readSource(loc.hgDir), readBookmarks(loc)]);
  const tail = await engine.openChangelogTail(loc.storeDir);
  try {
    let tip: RepoTip | null = null;
    if (tail.tip) {
      const entry = engine.parseChangelogEntry(tail.tip.text);
      tip = {
        rev: tail.tip.rev,
        node: tail.tip.node.slice(0, 12),
        date: entry.time * 1000,
        tz: entry.tz,
        user: shownText(utf8(entry.user), SHOWN.chars),
        summary: shownText(utf8(entry.description.split('\n', 1)[0] ?? ''), SHOWN.summaryChars),
        branch: shownText(branchOf(tail.tip.text), SHOWN.chars),
        bookmarks: (bookmarks.get(tail.tip.node) ?? [])
          .slice(0, SHOWN.bookmarks)
          .map((b) => shownText(b, SHOWN.chars)),
      };
    }
    const parent = await readParent(loc, tail);
    const summary: RepoSummary = { ...(source !== undefined && { source }), tip, parent };
    if (!withSize) return summary;
    const { bytes, files } = await storeSize(loc.storeDir);
    return { ...summary, storeBytes: bytes, storeFiles: files };
  } finally {
    await tail.close();
  }
}

/**
 * How much of a changeset's text a row shows: a server chose it, and every row update carries it.
 * Controls and bidi overrides are replaced (shownText): an override in a summary would reorder the
 * author and date shown after it.
 */
export const SHOWN = { summaryChars: 300, chars: 200, bookmarks: 32 };

/** A working copy's branch (hg update writes the changeset's) and active bookmark, as shownText. */
export function shownWorkingCopy(state: WorkingCopyState): WorkingCopyState {
  if ('problem' in state) return state;
  return {
    ...state,
    branch: shownText(state.branch, SHOWN.chars),
    ...(state.bookmark !== undefined && { bookmark: shownText(state.bookmark, SHOWN.chars) }),
  };
}

/** The `branch` extra of a changelog text (changelog.changelogrevision.branchinfo), "default" without one. */
function branchOf(text: Uint8Array): string {
  const buf = Buffer.from(text.buffer, text.byteOffset, text.length);
  const nl1 = buf.indexOf(0x0a);
  const nl2 = nl1 < 0 ? -1 : buf.indexOf(0x0a, nl1 + 1);
  const nl3 = nl2 < 0 ? -1 : buf.indexOf(0x0a, nl2 + 1);
  if (nl3 < 0) return 'default';
  const dateLine = buf.toString('latin1', nl2 + 1, nl3);
  const first = dateLine.indexOf(' ');
  const second = first < 0 ? -1 : dateLine.indexOf(' ', first + 1);
  if (second < 0) return 'default';
  const branch = engine.decodeExtra(dateLine.slice(second + 1)).get('branch');
  return branch ? utf8(branch) : 'default';
}

/** Changelog texts are bytes (parsed as latin1); hg writes them in UTF-8 (encoding.fromlocal). */
function utf8(latin1: string): string {
  return Buffer.from(latin1, 'latin1').toString('utf8');
}

async function readSource(hgDir: string): Promise<string | undefined> {
  let text: Buffer;
  try {
    text = await readFile(join(hgDir, 'hgrc'));
  } catch {
    return undefined;
  }
  try {
    const value = engine.parseConfig(text, '.hg/hgrc').get('paths', 'default');
    return value === undefined ? undefined : engine.withoutCredentials(value);
  } catch {
    // an hgrc with %include or a syntax error: the source stays unknown rather than guessed
    return undefined;
  }
}

/** `.hg/bookmarks` (bookmarks.py `_readactive`'s file): lines of `<40 hex> <name>`, by node. */
async function readBookmarks(loc: engine.RepoLocation): Promise<Map<string, string[]>> {
  const file = loc.requirements.has('bookmarksinstore')
    ? join(loc.storeDir, 'bookmarks')
    : join(loc.hgDir, 'bookmarks');
  const byNode = new Map<string, string[]>();
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return byNode;
  }
  for (const line of text.split('\n')) {
    const m = /^([0-9a-f]{40}) (.+)$/.exec(line.replace(/\r$/, ''));
    if (!m) continue;
    const list = byNode.get(m[1]!) ?? [];
    list.push(m[2]!);
    byNode.set(m[1]!, list);
  }
  return byNode;
}

async function readParent(loc: engine.RepoLocation, tail: engine.ChangelogTail): Promise<RepoParent | null> {
  let head: Uint8Array;
  try {
    const fh = await open(join(loc.hgDir, 'dirstate'), 'r');
    try {
      const buf = new Uint8Array(engine.DIRSTATE_PARENTS_BYTES);
      const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
      head = buf.subarray(0, bytesRead);
    } finally {
      await fh.close();
    }
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
  const { p1, p2 } = engine.parseDirstateParents(head, loc.requirements.has('dirstate-v2'));
  if (p1.every((b) => b === 0)) return null;
  const rev = await tail.findRev(p1);
  return {
    node: p1.toString('hex').slice(0, 12),
    ...(rev !== undefined && { rev }),
    merging: p2.some((b) => b !== 0),
  };
}

/** Bytes and files under the store (what `du` would count for .hg/store), walked with bounded concurrency. */
export async function storeSize(
  storeDir: string,
  concurrency = 16,
  /** awaited before each batch of stats: a walk that gives way (store-sizer.ts) */
  beforeBatch?: () => Promise<void>,
): Promise<{ bytes: number; files: number }> {
  let bytes = 0;
  let files = 0;
  const dirs = [storeDir];
  const pending: string[] = [];
  while (dirs.length > 0 || pending.length > 0) {
    if (dirs.length > 0) {
      const dir = dirs.pop()!;
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (e) {
        if (dir === storeDir) throw e;
        continue; // removed while walking
      }
      for (const d of entries) {
        const p = join(dir, d.name);
        if (d.isDirectory()) dirs.push(p);
        else if (d.isFile()) pending.push(p);
      }
      continue;
    }
    if (beforeBatch) await beforeBatch();
    const batch = pending.splice(0, concurrency);
    const sizes = await Promise.all(
      batch.map((p) =>
        lstat(p).then(
          (s) => s.size,
          () => -1,
        ),
      ),
    );
    for (const s of sizes) {
      if (s < 0) continue;
      bytes += s;
      files++;
    }
  }
  return { bytes, files };
}

export function repoName(root: string): string {
  return basename(root) || root;
}
