// The stream bodies `sluice serve` sends: stream_out (v1) and the stream2 part payload (v2),
// streamclone.py generatev1wireproto / generatev2. The listing is STORE's (hg's names, sizes and
// order, taken up front as hg does under its store lock) and the entries are FORMAT's generator
// (exactly the listed bytes per file, assembled into 256 KiB buffers).

import { streamOutPreamble } from '../format/stream-v1';
import { v1Entries, v2Entries } from '../generate/stream-entries';
import { listStreamFiles } from '../store/walk';
import type { RepoSnapshot } from './repo-state';

export interface ServerStream {
  files: number;
  bytes: number;
  payload: AsyncIterable<Uint8Array>;
}

/** The whole stream_out body: `0\n`, `<files> <bytes>\n`, entries (names encodedir'd). */
export async function* serverStreamOut(snap: RepoSnapshot, signal?: AbortSignal): AsyncGenerator<Uint8Array> {
  const listing = await listStreamFiles(snap.root, { version: 'v1', ...(signal ? { signal } : {}) });
  yield streamOutPreamble(listing.files.length, listing.bytes);
  yield* v1Entries(listing.files, signal ? { signal } : {});
}

/** The stream2 part: counts now (they are part params), payload read lazily. */
export async function serverStream2(snap: RepoSnapshot, signal?: AbortSignal): Promise<ServerStream> {
  const listing = await listStreamFiles(snap.root, {
    version: 'v2',
    publishing: snap.settings.publishing,
    ...(signal ? { signal } : {}),
  });
  return { files: listing.files.length, bytes: listing.bytes, payload: v2Entries(listing.files, signal ? { signal } : {}) };
}
