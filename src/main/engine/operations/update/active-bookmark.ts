// The active bookmark around an update, as hg.updatetotally handles it once the working copy is
// checked out: it moves along to a descendant (bookmarks.update), a REV naming a bookmark
// activates it, any other REV leaves the active one. `.hg/bookmarks.current` names it.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { readSmallFileSync, type RepoLocation } from '../../store/requirements';
import { writeAtomic } from '../../repo/vfs';

/** bookmarks._readactive: the first line of `.hg/bookmarks.current`, if that bookmark exists. */
export function readActiveBookmark(hgDir: string, marks: ReadonlyMap<string, string>): string | undefined {
  const name = (readSmallFileSync(join(hgDir, 'bookmarks.current')) ?? '').split('\n')[0]!;
  return marks.has(name) ? name : undefined;
}

/** bookmarks.activate / deactivate (`_writeactive`: atomic write, or the file removed). */
export function writeActiveBookmark(hgDir: string, name: string | undefined): void {
  const path = join(hgDir, 'bookmarks.current');
  if (name === undefined) rmSync(path, { force: true });
  else writeAtomic(path, Buffer.from(name, 'latin1'));
}

/** What updatetotally knows of the update once the files are written. */
export interface SettledUpdate {
  loc: RepoLocation;
  /** the bookmarks (name → hex) and the active one before the update */
  marks: ReadonlyMap<string, string>;
  active: string | undefined;
  /** the node the active bookmark moves from (destupdate's movemarkfrom) */
  moveMarkFrom?: string;
  /** brev: the name the update was asked for (REV, or the active bookmark destupdate chose) */
  name?: string;
  /** the new working parent */
  nodeHex: string;
  log: (message: string) => void;
}

/** The bookmarks and the active one after the update. */
export interface BookmarkState {
  marks: ReadonlyMap<string, string>;
  active: string | undefined;
}

/**
 * hg.updatetotally's bookmark step. A move is a `bookmark` transaction (undo files as hg's),
 * taken inside the caller's wlock.
 */
export async function settleActiveBookmark(u: SettledUpdate): Promise<BookmarkState> {
  const { marks, active, log } = u;
  if (u.moveMarkFrom !== undefined && active !== undefined) {
    if (u.moveMarkFrom === u.nodeHex) return { marks, active }; // a no-op update
    // the changelog graph and the bookmark transaction load only here: most updates have no
    // active bookmark and should not pay for loading the revlog writers at every start
    const { followActiveBookmark } = await import('./bookmark-follow');
    const moved = await followActiveBookmark(u.loc, marks, active, u.nodeHex);
    if (moved) {
      log(`updating bookmark ${active}`);
      return { marks: moved, active };
    }
    // a non-linear update (hg's obsolescence step): the bookmark stays behind
    log(`(leaving bookmark ${active})`);
    writeActiveBookmark(u.loc.hgDir, undefined);
    return { marks, active: undefined };
  }
  if (u.name !== undefined && marks.has(u.name)) {
    if (u.name !== active) log(`(activating bookmark ${u.name})`);
    writeActiveBookmark(u.loc.hgDir, u.name);
    return { marks, active: u.name };
  }
  if (u.name !== undefined) {
    if (active !== undefined) log(`(leaving bookmark ${active})`);
    writeActiveBookmark(u.loc.hgDir, undefined);
    return { marks, active: undefined };
  }
  return { marks, active };
}
