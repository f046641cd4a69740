// Where `hg update` without REV goes (destutil.destupdate) and what it says about other heads
// afterwards (destutil.statusotherdests). The obsolescence step (_destupdateobs) is not taken:
// revision lookup does not filter obsolete changesets either (repo/revsymbol.ts).
import { NULL_REV } from '../../revlog/constants';
import type { Revlog } from '../../revlog/revlog';
import { parseChangelogEntry } from '../../revlog/texts';
import type { RevisionResolver } from '../../repo/revsymbol';

/** The working copy an update starts from. */
export interface WorkingParent {
  rev: number;
  /** 40 hex digits (zeros for null) */
  nodeHex: string;
  /** dirstate.branch(): `.hg/branch`, which `hg branch NAME` may have set apart from p1's */
  branch: string;
}

/** destupdate's answer: the revision, and where the active bookmark moves from or which name counts. */
export interface BareDestination {
  rev: number;
  /** movemarkfrom: the active bookmark sits on the working parent and moves along */
  moveMarkFrom?: string;
  /** the active bookmark, off the working parent: the update goes to it and keeps it active */
  bookmark?: string;
}

/** destutil's revsets over branch heads (RevisionResolver.headsDown: each branch read once). */
export class HeadFinder {
  constructor(
    private readonly changelog: Revlog,
    private readonly resolver: RevisionResolver,
  ) {}

  /** Whether changeset `rev` closes its branch. */
  async closes(rev: number): Promise<boolean> {
    return (await this.resolver.branchOf(rev)).closed;
  }

  /** Marks `from` and its descendants (everything from null: null::X is all of X's ancestors). */
  private descendantsOf(from: number): Uint8Array {
    const index = this.changelog.index;
    const n = this.changelog.length;
    const mark = new Uint8Array(n);
    if (from === NULL_REV) return mark.fill(1);
    mark[from] = 1;
    for (let r = from + 1; r < n; r++) {
      const p1 = index.p1(r);
      const p2 = index.p2(r);
      if ((p1 >= 0 && mark[p1]) || (p2 >= 0 && mark[p2])) mark[r] = 1;
    }
    return mark;
  }

  /**
   * max(FROM::heads): the highest head of `branch` (of the repository when undefined) that is
   * `from` or descends from it; closed heads count only with `closed`.
   */
  async maxHeadFrom(from: number, branch: string | undefined, closed: boolean): Promise<number | undefined> {
    const descends = this.descendantsOf(from);
    for await (const head of this.resolver.headsDown(Math.max(from, 0), branch))
      if (descends[head.rev] && (closed || !head.closed)) return head.rev;
    return undefined;
  }

  /** repo.branchheads(branch, closed): its heads, closed ones only with `closed`. */
  async branchHeads(branch: string, closed: boolean): Promise<number[]> {
    const heads: number[] = [];
    for await (const head of this.resolver.headsDown(0, branch))
      if (closed || !head.closed) heads.push(head.rev);
    return heads;
  }

  /** Whether any changeset is on `branch` (`branch in repo.branchmap()`). */
  async branchExists(branch: string, parent: number): Promise<boolean> {
    if (parent !== NULL_REV && (await this.resolver.branchOf(parent)).branch === branch) return true;
    return (await this.resolver.branchTip(branch)) !== undefined;
  }
}

/**
 * destutil.destupdate without REV: the active bookmark when it is off the working parent
 * (bookmarks.calculateupdate, which says so); else the highest open head of the working copy's
 * branch descending from its parent (_destupdatebranch), else the highest closed one
 * (_destupdatebranchfallback); on a branch no changeset has, the parent itself (from null on
 * `default`: the highest open head, else tip).
 */
export async function bareDestination(
  heads: HeadFinder,
  wc: WorkingParent,
  marks: ReadonlyMap<string, string>,
  active: string | undefined,
  revOf: (hex: string) => number,
  tip: number,
  log: (message: string) => void,
): Promise<BareDestination> {
  const onParent = active !== undefined && marks.get(active) === wc.nodeHex;
  if (active !== undefined && !onParent) {
    log(`updating to active bookmark ${active}`);
    return { rev: revOf(marks.get(active)!), bookmark: active };
  }
  const moveMarkFrom = onParent ? { moveMarkFrom: wc.nodeHex } : {};
  if (await heads.branchExists(wc.branch, wc.rev)) {
    const rev =
      (await heads.maxHeadFrom(wc.rev, wc.branch, false)) ??
      (await heads.maxHeadFrom(wc.rev, wc.branch, true));
    // any revision has a descendant head on its own branch: undefined only when `hg branch`
    // named an existing branch the parent is not on, where hg's fallback asserts
    return { rev: rev ?? wc.rev, ...moveMarkFrom };
  }
  if (wc.branch === 'default' && wc.rev === NULL_REV)
    return { rev: (await heads.maxHeadFrom(NULL_REV, undefined, false)) ?? tip };
  return { rev: wc.rev };
}

/**
 * destutil.statusotherdests after an update without REV: with an active bookmark on the parent,
 * its divergent copies (`NAME@x`); else, on a head of the working copy's branch, the other open
 * heads (info) or that the head is closed (warnings).
 */
export async function otherDestinations(
  heads: HeadFinder,
  changelog: Revlog,
  wc: WorkingParent,
  marks: ReadonlyMap<string, string>,
  active: string | undefined,
  log: (level: 'info' | 'warn', message: string) => void,
): Promise<void> {
  if (active !== undefined) {
    const base = bookmarkBase(active);
    if (marks.get(active) !== wc.nodeHex) return;
    const others = [...marks].filter(([name, hex]) => bookmarkBase(name) === base && hex !== wc.nodeHex);
    if (others.length > 0) log('info', `${others.length} other divergent bookmarks for "${active}"`);
    return;
  }
  if (!(await heads.branchHeads(wc.branch, true)).includes(wc.rev)) return;
  const others = (await heads.branchHeads(wc.branch, false)).filter((r) => r !== wc.rev);
  if (await heads.closes(wc.rev)) {
    log('warn', `no open descendant heads on branch "${wc.branch}", updating to a closed head`);
    log(
      'warn',
      others.length > 0
        ? `(committing will reopen the head, use 'hg heads .' to see ${others.length} other heads)`
        : `(committing will reopen branch "${wc.branch}")`,
    );
  } else if (others.length > 0) {
    const summary = utf8(parseChangelogEntry(await changelog.revision(wc.rev)).description.split('\n')[0]!);
    log('info', `updated to "${wc.nodeHex.slice(0, 12)}: ${summary}"`);
    log('info', `${others.length} other heads for branch "${wc.branch}"`);
  }
}

/** bookmarks' divergence: `NAME@remote` is a copy of `NAME` (split('@', 1)[0]). */
export function bookmarkBase(name: string): string {
  const at = name.indexOf('@');
  return at < 0 ? name : name.slice(0, at);
}

/** A description's bytes (read as latin1) as the UTF-8 hg prints. */
function utf8(latin1: string): string {
  return Buffer.from(latin1, 'latin1').toString('utf8');
}
