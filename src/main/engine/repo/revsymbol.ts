// Revision lookup as `hg update REV` does it (scmutil.revsymbol): `.`/`tip`/`null`, a revision
// number (negative counts from the end), a full node id, then the names namespaces in hg's order
// (bookmarks, tags, branches: a branch name means its tip, localrepo.branchtip), then a unique
// hex prefix. With no symbol: what hg.clone checks out (the `@` bookmark, else the tip of
// `default`, else tip). On hg's `visible` view when given the hidden revs (hideRevs): hidden
// changesets are no tip, head or tag, and naming one is refused, as hg without --hidden does.
import { join } from 'node:path';
import { SluiceError } from '../errors';
import { NULL_REV } from '../revlog/constants';
import type { Revlog } from '../revlog/revlog';
import { bookmarksPath, readSmallFileSync } from '../store/requirements';
import { decodeExtra, parseChangelogEntry, parseManifest } from '../revlog/texts';
import type { LocalRepo } from './local-repo';
import { RevBranchCache } from './rev-branch-cache';
import { mergeTagLines, readTagLines, type TagHistory } from './tag-history';

export interface ResolvedRevision {
  /** -1 for null */
  rev: number;
  /** 40 hex digits (zeros for null) */
  nodeHex: string;
  /** set when the symbol named a bookmark (hg update activates it) */
  bookmark?: string;
}

const NULL_HEX = '0'.repeat(40);

/** Changeset branch and close flag (changelog extra). */
export function changesetBranch(text: Uint8Array): { branch: string; closed: boolean } {
  if (text.length === 0) return { branch: 'default', closed: false };
  const buf = Buffer.from(text.buffer, text.byteOffset, text.length);
  const nl1 = buf.indexOf(0x0a);
  const nl2 = nl1 < 0 ? -1 : buf.indexOf(0x0a, nl1 + 1);
  const nl3 = nl2 < 0 ? -1 : buf.indexOf(0x0a, nl2 + 1);
  if (nl3 < 0) throw new SluiceError('MALFORMED', 'changeset text has no date line');
  const dateLine = buf.toString('latin1', nl2 + 1, nl3);
  const first = dateLine.indexOf(' ');
  const second = first < 0 ? -1 : dateLine.indexOf(' ', first + 1);
  const extra = decodeExtra(second < 0 ? '' : dateLine.slice(second + 1));
  return { branch: extra.get('branch') ?? 'default', closed: extra.has('close') };
}

/** `<40 hex> <name>` lines (bookmarks, .hgtags, localtags); later lines win. */
function parseNodeNameLines(text: string, into: Map<string, string>): void {
  for (const raw of text.split('\n')) {
    const line = raw.replace(/\r$/, '');
    const m = /^([0-9a-fA-F]{40}) (.+)$/.exec(line);
    if (!m) continue;
    const name = m[2]!.trim();
    if (name) into.set(name, m[1]!.toLowerCase());
  }
}

/** A typed name (a JS string) as the byte string names are read in: its UTF-8 bytes, one char each. */
export function symbolBytes(typed: string): string {
  return Buffer.from(typed, 'utf8').toString('latin1');
}

export class RevisionResolver {
  private readonly branches = new Map<number, { branch: string; closed: boolean }>();
  private tags: Map<string, string> | undefined;
  private bookmarks: Map<string, string> | undefined;
  /** hg's revision branch cache, read on the first branchOf (null: none) */
  private branchCache: RevBranchCache | null | undefined;

  constructor(
    private readonly repo: LocalRepo,
    private readonly changelog: Revlog,
  ) {}

  get length(): number {
    return this.changelog.length;
  }

  /** repoview.computehidden's revs (obsolescence markers), or null: nothing is hidden */
  private hidden: Uint8Array | null = null;

  /** Resolves on hg's `visible` view: `hidden[rev]` set for each changeset the markers hide. */
  hideRevs(hidden: Uint8Array | null): void {
    this.hidden = hidden;
    this.tags = undefined;
  }

  private isHidden(rev: number): boolean {
    return rev >= 0 && this.hidden?.[rev] === 1;
  }

  /** The highest visible rev (hg's `tip` on the visible view), -1 when none. */
  private visibleTip(): number {
    let r = this.changelog.length - 1;
    while (r >= 0 && this.isHidden(r)) r--;
    return r;
  }

  /** A visible rev as it is; a hidden one is refused (hg's FilteredRepoLookupError). */
  private visibleAt(rev: number, symbol: string): ResolvedRevision {
    if (this.isHidden(rev))
      throw new SluiceError('USAGE', `hidden revision '${symbol}'`, {
        symbol,
        hint: 'use --hidden to access hidden revisions',
      });
    return this.at(rev);
  }

  private at(rev: number, bookmark?: string): ResolvedRevision {
    const nodeHex = rev === NULL_REV ? NULL_HEX : this.changelog.index.nodeHex(rev);
    return bookmark === undefined ? { rev, nodeHex } : { rev, nodeHex, bookmark };
  }

  private revOfHex(hex: string): number | undefined {
    return this.changelog.index.rev(Buffer.from(hex, 'hex'));
  }

  /** localrepo._bookmarks (in the store with bookmarksinstore, the source's in a share -B). */
  async readBookmarks(): Promise<Map<string, string>> {
    if (this.bookmarks) return this.bookmarks;
    const path = bookmarksPath(this.repo.loc);
    const map = new Map<string, string>();
    parseNodeNameLines(readSmallFileSync(path) ?? '', map);
    for (const [name, hex] of map) if (this.revOfHex(hex) === undefined) map.delete(name);
    this.bookmarks = map;
    return map;
  }

  /** Branch and close flag of a changeset, each read once. */
  async branchOf(rev: number): Promise<{ branch: string; closed: boolean }> {
    let info = this.branches.get(rev);
    if (!info) {
      // hg's revision branch cache first: a walk over the heads (an update without REV) reads no
      // changeset text for the revisions it vouches for
      if (this.branchCache === undefined)
        this.branchCache = RevBranchCache.read(this.repo.hgDir, this.changelog.index) ?? null;
      info =
        this.branchCache?.branchInfo(rev) ??
        changesetBranch(await this.changelog.revision(rev, { check: false }));
      this.branches.set(rev, info);
    }
    return info;
  }

  /**
   * branchmap.branchtip: the tip-most open head of the branch, else its tip-most head. Read from
   * the tip down, stopping at the first open head (usually the tip itself, instead of every
   * changeset as a branchmap rebuild would).
   */
  async branchTip(name: string): Promise<number | undefined> {
    let closedTip: number | undefined;
    for await (const head of this.headsDown(0, name)) {
      if (!head.closed) return head.rev;
      closedTip ??= head.rev;
    }
    return closedTip;
  }

  /**
   * The heads of `branch` (no child on that branch), or of the repository (no child at all) when
   * `branch` is undefined, from the tip down to `floor`, each with its close flag. Children are
   * above their parents: a walk from the tip has read every child before its parent.
   */
  async *headsDown(floor: number, branch?: string): AsyncGenerator<{ rev: number; closed: boolean }> {
    const index = this.changelog.index;
    /** per rev, the branches of its children read so far */
    const childBranches = new Map<number, Set<string>>();
    for (let r = this.changelog.length - 1; r >= floor; r--) {
      if (this.isHidden(r)) continue; // neither a head nor a child on the visible view
      const info = await this.branchOf(r);
      for (const p of [index.p1(r), index.p2(r)]) {
        if (p < 0 || p >= r) continue;
        let set = childBranches.get(p);
        if (!set) childBranches.set(p, (set = new Set()));
        set.add(info.branch);
      }
      const children = childBranches.get(r);
      childBranches.delete(r);
      const head = branch === undefined ? !children : info.branch === branch && !children?.has(branch);
      if (head) yield { rev: r, closed: info.closed };
    }
  }

  /** Repository heads (no child at all), oldest first. */
  private heads(): number[] {
    const index = this.changelog.index;
    const n = this.changelog.length;
    const hasChild = new Uint8Array(n);
    for (let r = 0; r < n; r++) {
      if (this.isHidden(r)) continue;
      const p1 = index.p1(r);
      const p2 = index.p2(r);
      if (p1 >= 0) hasChild[p1] = 1;
      if (p2 >= 0) hasChild[p2] = 1;
    }
    const out: number[] = [];
    for (let r = 0; r < n; r++) if (!hasChild[r] && !this.isHidden(r)) out.push(r);
    return out;
  }

  /**
   * tags.findglobaltags without its cache: `.hgtags` of every head, oldest head first, then
   * `.hg/localtags`, merged as hg merges them (tag-history.ts: the newest wins unless an older
   * entry supersedes it); a tag pointing at the null node is deleted.
   */
  async readTags(): Promise<Map<string, string>> {
    if (this.tags) return this.tags;
    const all = new Map<string, TagHistory>();
    const manifest = await this.repo.manifestlog();
    let filelog: Revlog | undefined;
    try {
      for (const head of this.heads()) {
        const entry = parseChangelogEntry(await this.changelog.revision(head));
        const mrev = this.changelog.length > 0 ? manifest.index.rev(entry.manifest) : undefined;
        if (mrev === undefined) continue;
        let tagsNode: string | undefined;
        parseManifest(await manifest.revision(mrev), (e) => {
          if (e.path === '.hgtags') tagsNode = e.nodeHex;
        });
        if (tagsNode === undefined) continue;
        filelog ??= await this.repo.filelog('.hgtags');
        const frev = filelog.index.rev(Buffer.from(tagsNode, 'hex'));
        if (frev === undefined) continue;
        mergeTagLines(readTagLines(Buffer.from(await filelog.revision(frev)).toString('latin1')), all);
      }
    } finally {
      await manifest.close();
      await filelog?.close();
    }
    mergeTagLines(readTagLines(readSmallFileSync(join(this.repo.hgDir, 'localtags')) ?? ''), all);
    const tags = new Map([...all].map(([name, t]) => [name, t.node]));
    for (const [name, hex] of tags) {
      const rev = hex === NULL_HEX ? undefined : this.revOfHex(hex);
      if (rev === undefined || this.isHidden(rev)) tags.delete(name);
    }
    this.tags = tags;
    return tags;
  }

  /**
   * scmutil.revsymbol of a symbol as typed: names are read as byte strings (latin1), so a typed
   * one is taken as its UTF-8 bytes (hg's local encoding); messages show it as typed.
   */
  async resolve(typed: string): Promise<ResolvedRevision> {
    const symbol = symbolBytes(typed);
    const n = this.changelog.length;
    if (symbol === 'null') return this.at(NULL_REV);
    if (symbol === 'tip') return this.at(this.visibleTip());
    if (/^-?[0-9]+$/.test(symbol) && String(Number(symbol)) === symbol) {
      let r = Number(symbol);
      if (r < 0) r += n;
      if (r >= 0 && r < n) return this.visibleAt(r, typed);
    }
    if (/^[0-9a-fA-F]{40}$/.test(symbol)) {
      const r = this.revOfHex(symbol.toLowerCase());
      if (r !== undefined) return this.visibleAt(r, typed);
    }
    const bookmark = (await this.readBookmarks()).get(symbol);
    if (bookmark !== undefined) return this.at(this.revOfHex(bookmark)!, symbol);
    const tag = (await this.readTags()).get(symbol);
    if (tag !== undefined) return this.at(this.revOfHex(tag)!);
    const tip = await this.branchTip(symbol);
    if (tip !== undefined) return this.at(tip);
    if (/^[0-9a-fA-F]+$/.test(symbol)) {
      const prefix = symbol.toLowerCase();
      let found = -1;
      let hiddenMatch = -1;
      for (let r = 0; r < n; r++) {
        if (!this.changelog.index.nodeHex(r).startsWith(prefix)) continue;
        if (this.isHidden(r)) {
          hiddenMatch = r;
          continue;
        }
        if (found >= 0) throw new SluiceError('USAGE', `ambiguous identifier '${typed}'`, { symbol: typed });
        found = r;
      }
      if (found >= 0) return this.at(found);
      if (hiddenMatch >= 0) return this.visibleAt(hiddenMatch, typed);
    }
    throw new SluiceError('USAGE', `unknown revision '${typed}'`, { symbol: typed });
  }

  /** What hg.clone checks out without -u: `@`, else the tip of default, else tip. */
  async cloneDefault(): Promise<ResolvedRevision> {
    const at = (await this.readBookmarks()).get('@');
    if (at !== undefined) return this.at(this.revOfHex(at)!, '@');
    const tip = await this.branchTip('default');
    if (tip !== undefined) return this.at(tip);
    return this.at(this.visibleTip());
  }
}
