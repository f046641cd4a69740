// Branch heads for the `branchmap` command (wireprotov1server.branchmap, branchmap.branchcache):
// per named branch, the served revisions of that branch without a child on the same branch
// (closed heads included), heads ascending by rev, branches in order of first appearance.
//
// Branch names live in the changelog *texts* (extra `branch:NAME`), so this reads every revision
// of the changelog with VERIFY's revlog reader. Results are cached per snapshot. A changelog that
// cannot be read makes `branchmap` unavailable (not advertised) rather than wrong: hg's v1 client
// writes what it receives into its branch cache.

import { join } from 'node:path';
import { SluiceError } from '../../errors';
import { Revlog } from '../../revlog/revlog';
import { decodeExtra } from '../../revlog/texts';
import type { RepoSnapshot } from './repo-state';

const cache = new WeakMap<RepoSnapshot, Promise<Map<string, string[]> | null>>();

export function branchMapOf(snap: RepoSnapshot): Promise<Map<string, string[]> | null> {
  let p = cache.get(snap);
  if (!p) {
    p = computeBranchMap(snap).catch(() => null);
    cache.set(snap, p);
  }
  return p;
}

async function computeBranchMap(snap: RepoSnapshot): Promise<Map<string, string[]>> {
  const g = snap.graph;
  const branches = await readBranchNames(snap.storeDir, g.length);
  const byBranch = new Map<string, number[]>();
  for (let r = 0; r < g.length; r++) {
    if (!snap.visible(r)) continue;
    const b = branches[r]!;
    const list = byBranch.get(b);
    if (list) list.push(r);
    else byBranch.set(b, [r]);
  }
  const out = new Map<string, string[]>();
  const hasChildSameBranch = new Uint8Array(g.length);
  for (let r = 0; r < g.length; r++) {
    if (!snap.visible(r)) continue;
    for (const p of [g.p1[r]!, g.p2[r]!])
      if (p >= 0 && branches[p] === branches[r]) hasChildSameBranch[p] = 1;
  }
  for (const [b, revs] of byBranch)
    out.set(
      b,
      revs.filter((r) => !hasChildSameBranch[r]).map((r) => snap.hex(r)),
    );
  return out;
}

/** The `branch` of a changelog text (latin1 bytes), `default` when absent (changelog.decodeextra). */
export function branchOfChangelogText(text: string): string {
  const lines = text.split('\n', 3);
  if (lines.length < 3) throw new SluiceError('REVLOG', 'changelog entry too short');
  const third = lines[2]!;
  // "<time> <tz>[ <extra>]": the extra starts after the second space
  const sp1 = third.indexOf(' ');
  const sp2 = sp1 < 0 ? -1 : third.indexOf(' ', sp1 + 1);
  if (sp2 < 0) return 'default';
  return decodeExtra(third.slice(sp2 + 1)).get('branch') ?? 'default';
}

/** Branch name of every changelog revision (VERIFY's revlog reader: chunks, deltas, node checks). */
export async function readBranchNames(storeDir: string, expected: number): Promise<string[]> {
  const rl = await Revlog.open(join(storeDir, '00changelog.i'), { name: '00changelog', io: 'sync' });
  try {
    if (rl.length !== expected) throw new SluiceError('REVLOG', 'changelog changed while reading');
    const out: string[] = [];
    for (let rev = 0; rev < rl.length; rev++) {
      const text = await rl.revision(rev);
      out.push(
        branchOfChangelogText(Buffer.from(text.buffer, text.byteOffset, text.byteLength).toString('latin1')),
      );
    }
    return out;
  } finally {
    await rl.close();
  }
}
