// hg's manifest fulltext cache (manifest.manifestfulltextcache), `.hg/wcache/manifestfulltextcache`:
// entries of a 20-byte manifest node, a 4-byte big-endian length and the manifest's text, oldest
// first, newest last. hg keeps it as an LRU of `format.manifestcachesize` entries (4 by default),
// reads the file whole (stopping silently at a short entry, keeping those before it) and writes it
// back with atomictemp when the wlock is released, only when an access changed it: a text added,
// or an entry other than the newest read. The file is hostile input like any other: nothing read
// from it is used before its text hashes to its node with the manifest's parents (the caller's
// revlog checks that), so a planted entry costs a rebuild, never a wrong checkout.
import { lstatSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { readBounded } from './bounded-read';
import { stageAtomic, type StagedFile } from './vfs';

export const MANIFEST_CACHE_FILE = 'manifestfulltextcache';
/** format.manifestcachesize's default (manifestrevlog.__init__) */
export const MANIFEST_CACHE_ENTRIES = 4;
/** a larger file is not read: four manifests of a 240k-file repository take ~100 MB */
const FILE_MAX = 256 << 20;
const NODE = 20;
const HEADER = NODE + 4;

export interface ManifestCacheEntry {
  /** the manifest's 20-byte node */
  node: Uint8Array;
  text: Uint8Array;
}

/** Whether `dir` is a directory itself (not a symbolic link to one); false when missing. */
function isRealDir(dir: string): boolean {
  try {
    return lstatSync(dir, { throwIfNoEntry: false })?.isDirectory() ?? false;
  } catch {
    return false;
  }
}

export class ManifestFulltextCache {
  /** oldest first, as in the file */
  private readonly entries: ManifestCacheEntry[] = [];
  /** whether hg would write the cache back (an access changed it) */
  dirty = false;

  constructor(private readonly capacity = MANIFEST_CACHE_ENTRIES) {}

  /** manifestfulltextcache.read on `bytes`: entries up to the first damaged one, the last `capacity` kept. */
  static parse(bytes: Uint8Array, capacity = MANIFEST_CACHE_ENTRIES): ManifestFulltextCache {
    const cache = new ManifestFulltextCache(capacity);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (let at = 0; at + HEADER <= bytes.length;) {
      const size = view.getUint32(at + NODE);
      const end = at + HEADER + size;
      if (end > bytes.length) break;
      cache.insert(bytes.subarray(at, at + NODE), bytes.subarray(at + HEADER, end));
      at = end;
    }
    cache.dirty = false;
    return cache;
  }

  /** The cache of the working copy whose `.hg` is hgDir (empty when missing, oversized or unreadable). */
  static read(hgDir: string, capacity = MANIFEST_CACHE_ENTRIES): ManifestFulltextCache {
    const dir = join(hgDir, 'wcache');
    const bytes = isRealDir(dir) ? readBounded(join(dir, MANIFEST_CACHE_FILE), FILE_MAX, true) : undefined;
    return bytes ? ManifestFulltextCache.parse(bytes, capacity) : new ManifestFulltextCache(capacity);
  }

  /** The entries, oldest first (no access: the order does not change). */
  list(): readonly ManifestCacheEntry[] {
    return this.entries;
  }

  /** The text kept for `node`, without touching the order (lrucachedict.peek). */
  peek(node: Uint8Array): Uint8Array | undefined {
    return this.entries[this.find(node)]?.text;
  }

  /** A read of `node`'s entry (__getitem__): it becomes the newest; dirty unless it was already. */
  touch(node: Uint8Array): void {
    const i = this.find(node);
    if (i < 0 || i === this.entries.length - 1) return;
    this.entries.push(this.entries.splice(i, 1)[0]!);
    this.dirty = true;
  }

  /** __setitem__: `text` becomes `node`'s entry, the newest; the oldest goes past the capacity. */
  insert(node: Uint8Array, text: Uint8Array): void {
    const i = this.find(node);
    if (i >= 0) this.entries.splice(i, 1);
    this.entries.push({ node, text });
    if (this.entries.length > this.capacity) this.entries.splice(0, this.entries.length - this.capacity);
    this.dirty = true;
  }

  /** The file's bytes, in pieces (oldest entry first). */
  serialize(): Uint8Array[] {
    const parts: Uint8Array[] = [];
    for (const { node, text } of this.entries) {
      const header = Buffer.allocUnsafe(HEADER);
      header.set(node, 0);
      header.writeUInt32BE(text.length, NODE);
      parts.push(header, text);
    }
    return parts;
  }

  /**
   * The file written to a temporary when hg would write it (dirty), renamed over the cache by
   * commit() once the update has succeeded; undefined when there is nothing to write or no place
   * to write it (`.hg/wcache` a symbolic link or not a directory; hg also lets a failed write go).
   */
  stage(hgDir: string): StagedFile | undefined {
    if (!this.dirty) return undefined;
    const dir = join(hgDir, 'wcache');
    try {
      if (!isRealDir(dir)) {
        if (lstatSync(dir, { throwIfNoEntry: false }) !== undefined) return undefined;
        mkdirSync(dir);
      }
      return stageAtomic(join(dir, MANIFEST_CACHE_FILE), this.serialize(), false);
    } catch {
      return undefined;
    }
  }

  private find(node: Uint8Array): number {
    return this.entries.findIndex((e) => Buffer.compare(e.node, node) === 0);
  }
}
