// The two manifest texts an update compares (the working parent's and the target's), built as hg's
// update reads them: through the manifest fulltext cache in `.hg/wcache` (repo/manifest-fulltext-
// cache.ts). A cached text is used only once it hashes to its node with the manifest's parents,
// and it serves the revisions whose delta chains run through it too (a shorter fold of deltas).
// The cache is then changed as hg's reads change it (the source's manifest read first, then the
// target's) and staged for writing when hg would write it.
import { ManifestFulltextCache } from '../../repo/manifest-fulltext-cache';
import type { StagedFile } from '../../repo/vfs';
import type { Revlog } from '../../revlog/revlog';

const NO_TEXT = new Uint8Array(0);

export interface UpdateManifests {
  targetText: Uint8Array;
  sourceText: Uint8Array;
  /** the cache file as hg would leave it, waiting for the update's success; undefined: unchanged */
  cacheWrite: StagedFile | undefined;
  /** manifest revisions whose text came from the cache (both, one, or none; a base on the way not counted) */
  fromCache: number;
}

/**
 * Cached texts on the delta chains of `revs` that hash to their nodes, handed to the revlog (a
 * build stops at them); by revision.
 */
function adoptCachedTexts(
  mf: Revlog,
  cache: ManifestFulltextCache,
  revs: readonly number[],
): Map<number, Uint8Array> {
  const adopted = new Map<number, Uint8Array>();
  if (cache.list().length === 0) return adopted;
  const onChains = new Set<number>();
  for (const rev of revs) for (const r of mf.deltaChain(rev).chain) onChains.add(r);
  for (const entry of cache.list()) {
    const rev = mf.index.rev(entry.node);
    if (rev === undefined || !onChains.has(rev)) continue;
    const text = entry.load();
    if (text && mf.adoptText(rev, text)) adopted.set(rev, text);
  }
  return adopted;
}

/**
 * The target's and the working parent's manifest texts. The one whose delta chain runs through the
 * other's revision is built second: the revlog then applies its last deltas to the text it has
 * just built instead of folding the whole chain again (update to a child or back to a parent: one
 * chain of up to ~1,000 deltas instead of two).
 */
async function buildTexts(
  mf: Revlog,
  target: number | undefined,
  source: number | undefined,
  adopted: ReadonlyMap<number, Uint8Array>,
): Promise<[Uint8Array, Uint8Array]> {
  // a cached text larger than the revlog's cache keeps is used as it is
  const text = async (rev: number | undefined) =>
    rev === undefined ? NO_TEXT : (adopted.get(rev) ?? (await mf.revision(rev)));
  if (target !== undefined && source !== undefined && mf.deltaChain(target).chain.includes(source)) {
    const sourceText = await text(source);
    return [await text(target), sourceText];
  }
  const targetText = await text(target);
  return [targetText, await text(source)];
}

/** manifestctx.read's use of the cache: a hit becomes the newest entry, a miss (or a bad text) is added. */
function recordRead(
  cache: ManifestFulltextCache,
  mf: Revlog,
  rev: number | undefined,
  text: Uint8Array,
  adopted: ReadonlyMap<number, Uint8Array>,
): void {
  if (rev === undefined) return;
  const node = Buffer.from(mf.index.node(rev));
  if (adopted.has(rev)) cache.touch(node);
  else cache.insert(node, text);
}

/**
 * The texts of manifest revisions `target` and `source` (undefined: the null or an empty
 * manifest, whose text is empty), with the cache of the working copy at hgDir.
 */
export async function updateManifests(
  hgDir: string,
  mf: Revlog,
  target: number | undefined,
  source: number | undefined,
): Promise<UpdateManifests> {
  const cache = ManifestFulltextCache.read(hgDir);
  const revs = [target, source].filter((r): r is number => r !== undefined);
  const adopted = adoptCachedTexts(mf, cache, revs);
  const [targetText, sourceText] = await buildTexts(mf, target, source, adopted);
  recordRead(cache, mf, source, sourceText, adopted);
  recordRead(cache, mf, target, targetText, adopted);
  const fromCache = revs.filter((r) => adopted.has(r)).length;
  return { targetText, sourceText, cacheWrite: cache.stage(hgDir), fromCache };
}
