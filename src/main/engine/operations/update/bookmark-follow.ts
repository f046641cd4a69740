// bookmarks.update for the active bookmark after an update (active-bookmark.ts loads this only
// when there is one): it moves to the new working parent when that is a valid destination, and
// its divergent copies on the new parent's ancestors are deleted, in one `bookmark` transaction.
import { ChangelogGraph } from '../../repo/changelog-graph';
import { commitBookmarkChanges, type BookmarkChanges } from '../../repo/write-session';
import type { RepoLocation } from '../../store/requirements';
import { bookmarkView } from '../serve/repo-state';
import { bookmarkBase } from './destination';

/**
 * Moves `active` (and deletes its divergent copies) as bookmarks.update does, inside the caller's
 * wlock; returns the bookmarks after the change, or undefined when nothing changed.
 */
export async function followActiveBookmark(
  loc: RepoLocation,
  marks: ReadonlyMap<string, string>,
  active: string,
  nodeHex: string,
): Promise<Map<string, string> | undefined> {
  const changes = await followingChanges(loc, marks, active, nodeHex);
  if (changes.size === 0) return undefined;
  await commitBookmarkChanges(loc.root, changes, { wlockHeld: true, desc: 'bookmark' });
  return applied(marks, changes);
}

/** `marks` with `changes` applied (null deletes). */
function applied(marks: ReadonlyMap<string, string>, changes: BookmarkChanges): Map<string, string> {
  const out = new Map(marks);
  for (const [name, hex] of changes) {
    if (hex === null) out.delete(name);
    else out.set(name, hex);
  }
  return out;
}

/**
 * bookmarks.update(repo, [from], node): the active bookmark to `nodeHex` when that is a valid
 * destination (a descendant; with markers, obsutil.foreground), and its divergent copies
 * (`NAME@x`) on ancestors of the new parent deleted.
 */
async function followingChanges(
  loc: RepoLocation,
  marks: ReadonlyMap<string, string>,
  active: string,
  nodeHex: string,
): Promise<BookmarkChanges> {
  const graph = await ChangelogGraph.read(loc.storeDir);
  const revOf = (hex: string): number => graph.rev(Buffer.from(hex, 'hex').toString('latin1')) ?? -1;
  const target = revOf(nodeHex);
  const ancestors = graph.ancestors([target]);
  const base = bookmarkBase(active);
  const copies = [...marks].filter(([name]) => bookmarkBase(name) === base);
  const deleteFrom = new Set(copies.filter(([, hex]) => ancestors[revOf(hex)]).map(([, hex]) => hex));
  const changes: BookmarkChanges = new Map();
  const view = await bookmarkView(loc, graph, [...marks]);
  if (view.validdest(revOf(marks.get(active)!), target)) changes.set(active, nodeHex);
  for (const [name, hex] of copies)
    if (name !== '@' && name.includes('@') && name !== active && deleteFrom.has(hex)) changes.set(name, null);
  return changes;
}
