// What `sluice update` checks out and what becomes of the bookmarks, decided apart from how the
// files are written (update.ts): `hg update`'s rules (commands.update, hg.updatetotally,
// destutil.destupdate) or hg.clone's (the clone's checkout, `apply --update`).
import { join } from 'node:path';
import type { JobContext } from '../../context/job-context';
import { symbolBytes, type RevisionResolver } from '../../repo/revsymbol';
import type { Revlog } from '../../revlog/revlog';
import { readSmallFileSync, type RepoLocation } from '../../store/requirements';
import { readActiveBookmark, settleActiveBookmark, writeActiveBookmark } from './active-bookmark';
import { bareDestination, HeadFinder, otherDestinations, type WorkingParent } from './destination';

/** Where an update goes and what it does with bookmarks (hg.updatetotally's, or hg.clone's). */
export interface UpdatePlan {
  rev: number;
  /** hg.clone: the name activated silently when it is a bookmark; REV was not given when `fallback` */
  clone?: { name?: string; fallback: boolean };
  /** `hg update`: the bookmark bookkeeping after the checkout */
  update?: {
    marks: ReadonlyMap<string, string>;
    active?: string;
    moveMarkFrom?: string;
    name?: string;
    bare: boolean;
  };
}

/** hg.clone's checkout: REV, else `@`, else the tip of default, else tip. */
export async function clonePlan(resolver: RevisionResolver, rev: string | undefined): Promise<UpdatePlan> {
  const target = rev !== undefined ? await resolver.resolve(rev) : await resolver.cloneDefault();
  return {
    rev: target.rev,
    clone: {
      ...(target.bookmark !== undefined ? { name: target.bookmark } : {}),
      fallback: rev === undefined,
    },
  };
}

/** hg.clone's status line: the bookmark only when it was the fallback (`@`), else the branch. */
export function cloneAnnouncement(plan: UpdatePlan, branch: string): string {
  const bookmark = plan.clone?.fallback ? plan.clone.name : undefined;
  if (bookmark === undefined) return `updating to branch ${branch}`;
  return `updating to bookmark ${bookmark}` + (branch !== 'default' ? ` on branch ${branch}` : '');
}

/** commands.update / hg.updatetotally: REV (its name kept as brev), else destutil.destupdate. */
export async function updatePlan(
  resolver: RevisionResolver,
  cl: Revlog,
  hgDir: string,
  wc: WorkingParent,
  rev: string | undefined,
  ctx: JobContext,
): Promise<UpdatePlan> {
  const marks = await resolver.readBookmarks();
  const active = readActiveBookmark(hgDir, marks);
  const known = { marks, ...(active !== undefined ? { active } : {}) };
  if (rev !== undefined)
    return {
      rev: (await resolver.resolve(rev)).rev,
      update: { ...known, name: symbolBytes(rev), bare: false },
    };
  const dest = await bareDestination(
    new HeadFinder(cl, resolver),
    wc,
    marks,
    active,
    (hex) => cl.index.rev(Buffer.from(hex, 'hex'))!,
    cl.length - 1,
    (m) => ctx.log('info', m),
  );
  return {
    rev: dest.rev,
    update: {
      ...known,
      ...(dest.moveMarkFrom !== undefined ? { moveMarkFrom: dest.moveMarkFrom } : {}),
      ...(dest.bookmark !== undefined ? { name: dest.bookmark } : {}),
      bare: true,
    },
  };
}

/** The bookmark step once the working copy is written, then hg's note about other heads. */
export async function afterCheckout(
  loc: RepoLocation,
  resolver: RevisionResolver,
  cl: Revlog,
  plan: UpdatePlan,
  wc: WorkingParent,
  ctx: JobContext,
): Promise<void> {
  if (plan.clone?.name !== undefined) writeActiveBookmark(loc.hgDir, plan.clone.name);
  const u = plan.update;
  if (!u) return;
  const { active, marks } = await settleActiveBookmark({
    loc,
    marks: u.marks,
    active: u.active,
    ...(u.moveMarkFrom !== undefined ? { moveMarkFrom: u.moveMarkFrom } : {}),
    ...(u.name !== undefined ? { name: u.name } : {}),
    nodeHex: wc.nodeHex,
    log: (m) => ctx.log('info', m),
  });
  if (!u.bare) return;
  await otherDestinations(new HeadFinder(cl, resolver), cl, wc, marks, active, (level, m) =>
    ctx.log(level, m),
  );
}

/** dirstate.branch(): `.hg/branch`, `default` when absent or empty. */
export function dirstateBranch(hgDir: string): string {
  return (readSmallFileSync(join(hgDir, 'branch')) ?? '').trim() || 'default';
}
