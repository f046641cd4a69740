// Revlog format constants (hg 6.3.2 revlogutils/constants.py, hg-stream-formats.md §8).

/** One v1 index entry: struct `>Qiiiiii20s12x`. */
export const ENTRY_SIZE = 64;
export const NODE_SIZE = 20;

export const REVLOGV0 = 0;
export const REVLOGV1 = 1;
export const REVLOGV2 = 0xdead;
export const CHANGELOGV2 = 0xd34d;

export const FLAG_INLINE_DATA = 1 << 16;
export const FLAG_GENERALDELTA = 1 << 17;
/** Header flags a v1 revlog may carry (REVLOGV1_FLAGS). */
export const REVLOGV1_FLAGS = FLAG_INLINE_DATA | FLAG_GENERALDELTA;

// Per-revision flags: the low 16 bits of the first 8-byte field (REVIDX_*).
export const REVIDX_ISCENSORED = 0x8000;
export const REVIDX_ELLIPSIS = 0x4000;
export const REVIDX_EXTSTORED = 0x2000;
export const REVIDX_HASCOPIESINFO = 0x1000;
export const REVIDX_KNOWN_FLAGS =
  REVIDX_ISCENSORED | REVIDX_ELLIPSIS | REVIDX_EXTSTORED | REVIDX_HASCOPIESINFO;

export const NULL_REV = -1;
export const NULL_NODE = new Uint8Array(NODE_SIZE);

/** hg's _maxentrysize: a revision text is at most a signed 32-bit length. */
export const MAX_TEXT_SIZE = 0x7fffffff;

/**
 * Texts larger than this are streamed (Revlog.streamRevisions) instead of built whole, by
 * checkout and verify: below it, building the text is the fast path and costs at most this much
 * per thread (checkout's 4 threads: 128 MiB); above it, a text costs a few MiB plus its chain's
 * decoded deltas, whatever its size.
 */
export const STREAM_ABOVE = 32 << 20;
