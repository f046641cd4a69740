// Streaming a revision's text without building it whole (large files: checkout, verify): the
// full snapshot's stored chunk is decompressed as a stream and each revision's folded deltas are
// applied to it on the way (FoldedStream), the node hashed as the pieces pass.
import { createHash } from 'node:crypto';
import { SluiceError } from '../errors';
import { decompressStream } from '../codec/compression';
import type { ByteSource } from './byte-source';
import { chunkKind } from './chunk';
import type { RevlogIndex } from './index';
import { foldDeltas, FoldedStream, patchedSize } from './mpatch';
import { atRevision, decodedBound, nodeMismatch, sortedParents } from './revision-checks';

/** streamRevision gathers slices smaller than a quarter of this into one write of up to this size */
export const STREAM_PIECE = 1 << 20;
/** streamRevision reads a full snapshot's stored chunk this much at a time */
const SNAPSHOT_READ = 1 << 20;

/** What streaming needs of a Revlog. */
export interface StreamSource {
  readonly name: string;
  readonly index: RevlogIndex;
  readonly data: ByteSource;
  /** the decoded chunks of chain (ascending revs) */
  chainChunks(chain: readonly number[]): Promise<Uint8Array[]>;
}

/**
 * Revlog.streamRevisions once the chains are known and checked: chains[k] is revs[k]'s delta
 * chain, all from the same full snapshot. Resolves with the texts' sizes.
 */
export async function streamChains(
  src: StreamSource,
  revs: readonly number[],
  chains: readonly number[][],
  sinks: readonly ((piece: Uint8Array) => void)[],
  gather: number,
): Promise<number[]> {
  const { index, name } = src;
  const base = chains[0]![0]!;
  if (chains.some((c) => c[0] !== base)) throw new Error('streamRevisions: chains from different snapshots');
  const outs = revs.map((rev, k) => streamOutput(src, rev, sinks[k]!, gather));
  // every delta of the chains decoded once (chains of one file share most of theirs)
  const deltaRevs = [...new Set(chains.flatMap((c) => c.slice(1)))].sort((a, b) => a - b);
  const decoded = new Map<number, Uint8Array>();
  const chunks = deltaRevs.length ? await src.chainChunks(deltaRevs) : [];
  deltaRevs.forEach((r, k) => decoded.set(r, chunks[k]!));
  // a snapshot whose size the index does not give (negative: tolerated, as hg's rawsize()) is
  // decoded whole first: the folded patches are checked against its length
  const unsized = index.rawSize(base) < 0 ? (await src.chainChunks([base]))[0]! : undefined;
  const baseLength = unsized?.length ?? index.rawSize(base);
  const patches = chains.map((chain, k) => {
    if (chain.length === 1) return undefined; // the snapshot itself
    const deltas = chain.slice(1).map((r) => decoded.get(r)!);
    let size = baseLength;
    for (let j = 0; j < deltas.length; j++) {
      try {
        size = patchedSize(size, deltas[j]!);
      } catch (e) {
        throw atRevision(name, e, chain[j + 1]!);
      }
    }
    try {
      return new FoldedStream(foldDeltas(baseLength, deltas), baseLength, outs[k]!.take);
    } catch (e) {
      throw atRevision(name, e, revs[k]!);
    }
  });
  const feed = (piece: Uint8Array): void => {
    for (let k = 0; k < revs.length; k++) {
      const p = patches[k];
      if (!p) outs[k]!.take(piece);
      else {
        try {
          p.push(piece);
        } catch (e) {
          throw atRevision(name, e, revs[k]!);
        }
      }
    }
  };
  if (unsized) feed(unsized);
  else await streamSnapshot(src, base, feed);
  return revs.map((rev, k) => {
    try {
      patches[k]?.end();
    } catch (e) {
      throw atRevision(name, e, rev);
    }
    return outs[k]!.finish();
  });
}

/**
 * Where streamRevisions hands rev's pieces: through a `gather` buffer to the sink and into
 * rev's hash; finish() flushes, checks the node and returns the size.
 */
function streamOutput(
  src: StreamSource,
  rev: number,
  sink: (piece: Uint8Array) => void,
  gather: number,
): { take: (piece: Uint8Array) => void; finish: () => number } {
  const [lo, hi] = sortedParents(src.name, src.index, rev);
  const sha = createHash('sha1').update(lo).update(hi);
  const buf = Buffer.allocUnsafe(Math.min(gather, Math.max(1, src.index.rawSize(rev))));
  let used = 0;
  let size = 0;
  const flush = (): void => {
    if (used === 0) return;
    sink(buf.subarray(0, used));
    used = 0;
  };
  return {
    take: (piece) => {
      sha.update(piece);
      size += piece.length;
      if (piece.length >= buf.length >> 2) {
        flush();
        sink(piece);
        return;
      }
      if (used + piece.length > buf.length) flush();
      buf.set(piece, used);
      used += piece.length;
    },
    finish: () => {
      flush();
      const computed = sha.digest();
      if (Buffer.compare(computed, src.index.node(rev)) !== 0)
        throw nodeMismatch(src.name, src.index, rev, computed);
      return size;
    },
  };
}

/**
 * A full snapshot's text handed to `take` as its stored chunk is read (SNAPSHOT_READ at a time)
 * and decoded by a streaming decoder; at most chunkBound(rev) bytes (a lying size or a bomb
 * stops there). Resolves with the text's size.
 */
async function streamSnapshot(
  src: StreamSource,
  rev: number,
  take: (piece: Uint8Array) => void,
): Promise<number> {
  const index = src.index;
  const start = index.chunkStart(rev);
  const len = index.compressedLength(rev);
  const bound = decodedBound(index, rev);
  let size = 0;
  try {
    if (len === 0) return 0;
    const head = src.data.readNow(start, 1) ?? (await src.data.read(start, 1));
    const kind = chunkKind(head);
    const stored = (skip: number): AsyncGenerator<Uint8Array> =>
      chunkPieces(src.data, start + skip, len - skip);
    const pieces =
      kind === 'zlib' || kind === 'zstd'
        ? decompressStream(kind === 'zlib' ? 'GZ' : 'ZS', stored(0))
        : stored(kind === 'stored' ? 1 : 0);
    for await (const piece of pieces) {
      size += piece.length;
      if (size > bound)
        throw new SluiceError('REVLOG', `revlog decompress error: more than ${bound} bytes`, {
          problem: 'decompress',
        });
      take(piece);
    }
  } catch (e) {
    if (e instanceof SluiceError && e.code === 'COMPRESSION')
      throw atRevision(
        src.name,
        new SluiceError('REVLOG', `revlog decompress error: ${e.message}`, { problem: 'decompress' }),
        rev,
      );
    throw atRevision(src.name, e, rev);
  }
  return size;
}

/** `len` bytes of the data file from `pos`, read SNAPSHOT_READ at a time as they are consumed. */
async function* chunkPieces(data: ByteSource, pos: number, len: number): AsyncGenerator<Uint8Array> {
  for (let off = 0; off < len; off += SNAPSHOT_READ) {
    const n = Math.min(SNAPSHOT_READ, len - off);
    yield data.readNow(pos + off, n) ?? (await data.read(pos + off, n));
  }
}
