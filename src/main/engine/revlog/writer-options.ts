// What a revlog writer is asked to store and how: the repository's revlog format, one revision
// as a changegroup carries it, and the writer's options.
import type { Transaction } from '../repo/transaction';
import type { ChunkEngine } from './chunk';
import type { NodeChecks } from './node-checks';
import type { TextBufferPool } from './text-cache';
import type { RevlogWriter } from './writer';

export interface RevlogFormat {
  generalDelta: boolean;
  sparse: boolean;
  compression: ChunkEngine;
}

/** The format new revisions get in a repository with these requirements (localrepo.resolverevlogstorevfsoptions). */
export function revlogFormatFor(requirements: ReadonlySet<string>): RevlogFormat {
  const sparse = requirements.has('sparserevlog');
  return {
    generalDelta: sparse || requirements.has('generaldelta'),
    sparse,
    // format.revlog-compression=none writes exp-compression-none: chunks stored as they are
    compression: requirements.has('revlog-compression-zstd')
      ? 'zstd'
      : requirements.has('exp-compression-none')
        ? 'none'
        : 'zlib',
  };
}

/** One revision as a changegroup carries it. */
export interface IncomingRevision {
  node: Uint8Array;
  p1: Uint8Array;
  p2: Uint8Array;
  /** the node the delta applies to (null node: the delta is the full text) */
  deltaBase: Uint8Array;
  delta: Uint8Array;
  linkRev: number;
  flags: number;
}

export interface RevlogWriterOptions {
  /** hg's radix: `00changelog`, `00manifest`, `data/foo.txt`, `meta/dir/00manifest` */
  radix: string;
  tx: Transaction;
  format: RevlogFormat;
  /** the changelog: entries delayed until finalize(), never a delta chain (changelog._storedeltachains) */
  changelog?: boolean;
  /** told about each store file this writer creates (fncache) */
  onNewFile?: (storePath: string) => void;
  /** budget of texts kept for later deltas besides the last one (default CACHE_BYTES) */
  cacheBytes?: number;
  /** called by close() (the session forgets the writer) */
  onClose?: (w: RevlogWriter) => void;
  /** largest text add() accepts (default maxRevisionSize(); a session reads it once for all its writers) */
  maxText?: number;
  /** the caller knows NAME.i does not exist (its directory is being created): not looked up */
  absent?: boolean;
  /** NAME.i most likely exists (a pull into a repository with history): opened without asking first */
  likelyExists?: boolean;
  checks?: NodeChecks;
  /** the changelog: delayed bytes held in memory before they go to NAME.i.a (default DELAY_MEMORY) */
  delayMemory?: number;
  /** told the bytes of each revision before it is queued (may throw: the free space guard) */
  onWrite?: (bytes: number) => void;
  /** buffers of mid-sized texts shared with the session's other writers (default: this writer's own, keeping none) */
  textPool?: TextBufferPool;
}
