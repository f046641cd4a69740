// The `lookup` command's names that the snapshot does not index (localrepo.lookup →
// scmutil.revsymbol): `null`, negative revision numbers, tags and branch names. A clone's
// `-u NAME` is checked with `lookup` before its transfer, so a name hg finds must be found here.
// Tags and branch tips are read once per snapshot: a batch may hold thousands of lookups.

import { LocalRepo } from '../../repo/local-repo';
import { RevisionResolver } from '../../repo/revsymbol';
import { branchMapOf } from './branchmap';
import type { RepoSnapshot } from './repo-state';

const NULL_HEX = '0'.repeat(40);

interface Names {
  tags: Map<string, string>;
  /** branchmap.branchtip: the tip-most open head, else the tip-most head */
  branchTips: Map<string, string>;
}

const cache = new WeakMap<RepoSnapshot, Promise<Names>>();

/** The node `key` names among these, or undefined (the caller answers `unknown revision`). */
export async function lookupByName(snap: RepoSnapshot, key: string): Promise<string | undefined> {
  if (key === 'null') return NULL_HEX;
  if (/^-[1-9][0-9]{0,9}$/.test(key)) {
    const rev = snap.graph.length + Number(key);
    return rev >= 0 && snap.visible(rev) ? snap.hex(rev) : undefined;
  }
  let names = cache.get(snap);
  if (!names) {
    names = readNames(snap);
    cache.set(snap, names);
  }
  const { tags, branchTips } = await names;
  return tags.get(key) ?? branchTips.get(key);
}

/** Names of the served revisions; none when the repository cannot be read (the lookup misses). */
async function readNames(snap: RepoSnapshot): Promise<Names> {
  const names: Names = { tags: new Map(), branchTips: new Map() };
  const served = (hex: string): boolean => {
    const rev = snap.revOfHex(hex);
    return rev !== undefined && snap.visible(rev);
  };
  try {
    const repo = await LocalRepo.open(snap.root);
    const changelog = await repo.changelog();
    try {
      const resolver = new RevisionResolver(repo, changelog);
      for (const [name, hex] of await resolver.readTags()) if (served(hex)) names.tags.set(name, hex);
      for (const [branch, heads] of (await branchMapOf(snap)) ?? []) {
        const revs = heads.map((h) => snap.revOfHex(h)).filter((r): r is number => r !== undefined);
        let tip: number | undefined;
        for (let i = revs.length - 1; i >= 0 && tip === undefined; i--)
          if (!(await resolver.branchOf(revs[i]!)).closed) tip = revs[i];
        tip ??= revs[revs.length - 1];
        if (tip !== undefined) names.branchTips.set(branch, snap.hex(tip));
      }
    } finally {
      await changelog.close();
    }
  } catch {
    // an unreadable repository serves no names: its lookups answer "unknown", as before
  }
  return names;
}
