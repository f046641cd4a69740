// Whether a delta is worth storing (revlogutils/deltas.py `isgooddeltainfo`): the chain it
// extends must stay cheap to read back, and under sparse-revlog a delta against a snapshot must be
// small for its depth.

/** revlogutils/constants SPARSE_REVLOG_MAX_CHAIN_LENGTH (format.maxchainlen's sparse-revlog default). */
export const SPARSE_MAX_CHAIN_LENGTH = 1000;
/** deltas.LIMIT_DELTA2TEXT: a chain may read at most this many times the text size. */
export const LIMIT_DELTA2TEXT = 2;

/** hg's _chaininfo: deltas to apply and compressed bytes to read to rebuild a rev. */
export interface ChainInfo {
  chainLen: number;
  chainSize: number;
  chainBase: number;
}

export interface DeltaCandidate {
  deltaLen: number;
  textLen: number;
  /** the chain of the delta's base */
  chain: ChainInfo;
  /** bytes from the chain's start to the end of the new delta in the data file */
  distance: number;
  sparse: boolean;
  /** under sparse-revlog, a base that is a snapshot (not a parent): the new delta's depth */
  snapshotDepth: number | undefined;
  /** the compressed size of the base's own chunk */
  baseChunkLen: number;
}

export function isGoodDelta(c: DeltaCandidate): boolean {
  const { deltaLen, textLen, chain } = c;
  if (!c.sparse && Math.max(textLen * 4, 0) < c.distance) return false;
  if (textLen < deltaLen) return false;
  if (textLen * LIMIT_DELTA2TEXT < chain.chainSize + deltaLen) return false;
  if (c.sparse && SPARSE_MAX_CHAIN_LENGTH < chain.chainLen + 1) return false;
  if (c.snapshotDepth !== undefined && textLen >> c.snapshotDepth < deltaLen) return false;
  if (c.snapshotDepth && c.baseChunkLen < deltaLen) return false;
  return true;
}
