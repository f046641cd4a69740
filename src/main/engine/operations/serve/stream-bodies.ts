// The stream bodies `sluice serve` sends: stream_out (v1) and the stream2 part payload (v2),
// streamclone.py generatev1wireproto / generatev2. The listing is STORE's (hg's names, sizes and
// order) and the entries are FORMAT's generator (exactly the listed bytes per file).
//
// Consistency without writing to the repository: hg lists the files under the store lock. A
// read-only server cannot take it, so it waits while `.hg/store/lock` exists, and accepts a
// listing only if the lock was absent before and after it and the changelog did not change in
// between (every transaction that adds changesets rewrites 00changelog.i last, so a listing
// that straddled one is detected and taken again). Data is read after that; revlogs are
// append-only, so the listed prefixes stay valid (hg relies on the same).
//
// The revlog part of the listing (one stat per store file: ~20k for a medium repository, a third
// of the server's CPU per clone) is reused while the changelog, manifest and fncache are
// unchanged; the few "full" files (phaseroots, caches) are looked at for every clone.

import { lstat, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { SluiceError, cancelled } from '../../errors';
import { streamOutPreamble, v1EntryHeader } from '../../format/stream-v1';
import { stream2EntryHeader } from '../../format/stream2';
import { v1Entries, v2Entries, type StreamSourceFile } from '../../streamclone/entries';
import { CACHE_FILES_TO_COPY, listStreamFiles, readRegularFileOrNull } from '../../store/walk';
import type { RepoSnapshot } from './repo-state';

export interface ServerStream {
  files: number;
  bytes: number;
  payload: AsyncIterable<Uint8Array>;
  /** exact payload size (entry headers + data) */
  payloadLength: number;
}

function uvarintLength(n: number): number {
  let len = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 0x80);
    len++;
  }
  return len;
}

/** `vfs | uvarint(len(name)) | uvarint(size) | name` */
function v2HeaderLength(name: string, size: number): number {
  return 1 + uvarintLength(name.length) + uvarintLength(size) + name.length;
}

/** hg's ui.timeout is 600 s; a stream client waiting that long is not useful. */
const LOCK_WAIT_MS = 30_000;
const LOCK_POLL_MS = 100;

export class StoreLocked extends SluiceError {
  constructor(storeDir: string) {
    super('REMOTE_ABORT', `the repository store is locked (${join(storeDir, 'lock')}); try again later`);
  }
}

async function stampOf(paths: string[]): Promise<string> {
  const parts = await Promise.all(
    paths.map(async (p) => {
      const st = await stat(p).catch(() => null);
      return st ? `${st.size}:${st.mtimeMs}:${st.ino}` : '-';
    }),
  );
  return parts.join('|');
}

async function isLocked(storeDir: string): Promise<boolean> {
  return (await lstat(join(storeDir, 'lock')).catch(() => null)) !== null;
}

interface RevlogListing {
  key: string;
  files: StreamSourceFile[];
  bytes: number;
}

const cache = new Map<string, RevlogListing>();

async function revlogListing(snap: RepoSnapshot, signal?: AbortSignal): Promise<RevlogListing> {
  const store = snap.storeDir;
  const watched = [
    join(store, '00changelog.i'),
    join(store, '00changelog.d'),
    join(store, '00manifest.i'),
    join(store, 'fncache'),
  ];
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    if (signal?.aborted) throw cancelled();
    if (await isLocked(store)) {
      if (Date.now() > deadline) throw new StoreLocked(store);
      await new Promise((r) => setTimeout(r, LOCK_POLL_MS));
      continue;
    }
    const key = await stampOf(watched);
    const hit = cache.get(store);
    if (hit && hit.key === key) return hit;
    const listing = await listStreamFiles(snap.root, { version: 'v1', ...(signal ? { signal } : {}) });
    if ((await stampOf(watched)) !== key || (await isLocked(store))) continue; // a commit straddled it
    const entry = { key, files: listing.files, bytes: listing.bytes };
    cache.set(store, entry);
    return entry;
  }
}

interface FullFile {
  vfs: 's' | 'c';
  name: string;
  content: Buffer;
}

/**
 * The v2 extras (streamclone._v2_walk): phaseroots when non-publishing, the obsstore when the
 * client takes its markers, then the cache files. Read now, whole (hg copies them under the
 * lock): they may be rewritten, not appended to.
 */
async function fullFiles(snap: RepoSnapshot, includeObsmarkers: boolean): Promise<FullFile[]> {
  const out: FullFile[] = [];
  const add = async (vfs: 's' | 'c', dir: string, name: string): Promise<void> => {
    const content = await readRegularFileOrNull(join(dir, name)).catch(() => null);
    if (content) out.push({ vfs, name, content });
  };
  if (!snap.settings.publishing) await add('s', snap.storeDir, 'phaseroots');
  if (includeObsmarkers) await add('s', snap.storeDir, 'obsstore');
  const cacheDir = join(snap.root, '.hg', 'cache');
  // a cache folder that is a link to elsewhere sends nothing (the caches are optional)
  if (!(await lstat(cacheDir).catch(() => null))?.isSymbolicLink())
    for (const name of CACHE_FILES_TO_COPY) await add('c', cacheDir, name);
  return out;
}

async function* v2Payload(
  revlogs: StreamSourceFile[],
  full: FullFile[],
  signal?: AbortSignal,
): AsyncGenerator<Uint8Array> {
  yield* v2Entries(revlogs, signal ? { signal } : {});
  for (const f of full) {
    yield stream2EntryHeader(f.vfs, f.name, f.content.length);
    yield f.content;
  }
}

/**
 * The whole stream_out body: `0\n`, `<files> <bytes>\n`, entries (names encodedir'd). The listing
 * is taken before anything is sent, so a locked store can still be answered with `2\n`.
 */
export async function serverStreamOut(
  snap: RepoSnapshot,
  signal?: AbortSignal,
): Promise<{ body: AsyncIterable<Uint8Array>; length: number }> {
  const listing = await revlogListing(snap, signal);
  const preamble = streamOutPreamble(listing.files.length, listing.bytes);
  let length = preamble.length + listing.bytes;
  for (const f of listing.files) length += v1EntryHeader(f.name, f.size).length;
  return {
    length,
    body: (async function* () {
      yield preamble;
      yield* v1Entries(listing.files, signal ? { signal } : {});
    })(),
  };
}

/** The stream2 part: counts now (they are part params), payload read lazily. */
export async function serverStream2(
  snap: RepoSnapshot,
  signal?: AbortSignal,
  includeObsmarkers = false,
): Promise<ServerStream> {
  const listing = await revlogListing(snap, signal);
  const full = await fullFiles(snap, includeObsmarkers);
  const bytes = listing.bytes + full.reduce((n, f) => n + f.content.length, 0);
  let payloadLength = bytes;
  for (const f of listing.files) payloadLength += v2HeaderLength(f.name, f.size);
  for (const f of full) payloadLength += v2HeaderLength(f.name, f.content.length);
  return {
    files: listing.files.length + full.length,
    bytes,
    payload: v2Payload(listing.files, full, signal),
    payloadLength,
  };
}
