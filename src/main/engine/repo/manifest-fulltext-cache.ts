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
import { readAt } from './bounded-read';
import { stageAtomic, type StagedFile } from './vfs';

export const MANIFEST_CACHE_FILE = 'manifestfulltextcache';
/** format.manifestcachesize's default (manifestrevlog.__init__) */
export const MANIFEST_CACHE_ENTRIES = 4;
/** a larger file is not read: four manifests of a 240k-file repository take ~100 MB */
const FILE_MAX = 256 << 20;
const NODE = 20;
/** entries scanned at most: hg's own file holds its capacity's worth (4 by default) */
const SCAN_MAX = 1024;
const HEADER = NODE + 4;

/** Reads `length` bytes at `at` of where the cache came from (its file, or bytes in memory). */
type ReadAt = (at: number, length: number) => Uint8Array | undefined;

export interface ManifestCacheEntry {
  /** the manifest's 20-byte node */
  node: Uint8Array;
  /** the text's length */
  length: number;
  /**
   * The text: read from the file only when asked for (an entry no update needs is copied into
   * the new file without being held whole); undefined when the file no longer has it.
   */
  load(): Uint8Array | undefined;
}

function checkedLength(text: Uint8Array | undefined, length: number): Uint8Array | undefined {
  return text?.length === length ? text : undefined;
}

/** The size of `path` when it is a regular file (not a symbolic link); undefined otherwise. */
function regularFileSize(path: string): number | undefined {
  try {
    const st = lstatSync(path, { throwIfNoEntry: false });
    return st?.isFile() ? st.size : undefined;
  } catch {
    return undefined;
  }
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
    return ManifestFulltextCache.scan(
      (at, length) => bytes.subarray(at, at + length),
      bytes.length,
      capacity,
    );
  }

  /** The cache of the working copy whose `.hg` is hgDir (empty when missing, oversized or unreadable). */
  static read(hgDir: string, capacity = MANIFEST_CACHE_ENTRIES): ManifestFulltextCache {
    const dir = join(hgDir, 'wcache');
    const path = join(dir, MANIFEST_CACHE_FILE);
    const size = isRealDir(dir) ? regularFileSize(path) : undefined;
    if (size === undefined || size > FILE_MAX) return new ManifestFulltextCache(capacity);
    return ManifestFulltextCache.scan((at, length) => readAt(path, at, length), size, capacity);
  }

  /**
   * The entries' headers, read one after another; texts stay where they are. More than SCAN_MAX
   * entries is garbage (hg writes at most its capacity): the rest is not scanned.
   */
  private static scan(readAt: ReadAt, size: number, capacity: number): ManifestFulltextCache {
    const cache = new ManifestFulltextCache(capacity);
    for (let at = 0, n = 0; at + HEADER <= size && n < SCAN_MAX; n++) {
      const header = readAt(at, HEADER);
      if (header?.length !== HEADER) break;
      const length = new DataView(header.buffer, header.byteOffset, HEADER).getUint32(NODE);
      const textAt = at + HEADER;
      if (textAt + length > size) break;
      cache.add({
        node: header.subarray(0, NODE),
        length,
        load: () => checkedLength(readAt(textAt, length), length),
      });
      at = textAt + length;
    }
    return cache;
  }

  /** The entries, oldest first (no access: the order does not change). */
  list(): readonly ManifestCacheEntry[] {
    return this.entries;
  }

  /** The text kept for `node`, without touching the order (lrucachedict.peek). */
  peek(node: Uint8Array): Uint8Array | undefined {
    return this.entries[this.find(node)]?.load();
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
    this.add({ node, length: text.length, load: () => text });
    this.dirty = true;
  }

  /**
   * The file's bytes, in pieces (oldest entry first), each text read as it is reached; an entry
   * whose text can no longer be read ends the file there (a reader stops at it anyway).
   */
  *serialize(): Generator<Uint8Array> {
    for (const { node, length, load } of this.entries) {
      const text = load();
      if (text === undefined) return;
      const header = Buffer.allocUnsafe(HEADER);
      header.set(node, 0);
      header.writeUInt32BE(length, NODE);
      yield header;
      yield text;
    }
  }

  private add(entry: ManifestCacheEntry): void {
    const i = this.find(entry.node);
    if (i >= 0) this.entries.splice(i, 1);
    this.entries.push(entry);
    if (this.entries.length > this.capacity) this.entries.splice(0, this.entries.length - this.capacity);
  }

  /**
   * The file written to a temporary when hg would write it (dirty), renamed over the cache by
   * commit() once the update has succeeded; undefined when there is nothing to write or no place
   * to write it (`.hg/wcache` a symbolic link or not a directory). A failed rename is let go, as hg
   * lets a failed write go: the update it follows has succeeded.
   */
  stage(hgDir: string): StagedFile | undefined {
    if (!this.dirty) return undefined;
    const dir = join(hgDir, 'wcache');
    try {
      if (!isRealDir(dir)) {
        if (lstatSync(dir, { throwIfNoEntry: false }) !== undefined) return undefined;
        mkdirSync(dir);
      }
      const staged = stageAtomic(join(dir, MANIFEST_CACHE_FILE), this.serialize(), false);
      return {
        commit: () => {
          try {
            staged.commit();
          } catch {
            staged.discard();
          }
        },
        discard: () => staged.discard(),
      };
    } catch {
      return undefined;
    }
  }

  private find(node: Uint8Array): number {
    return this.entries.findIndex((e) => Buffer.compare(e.node, node) === 0);
  }
}
