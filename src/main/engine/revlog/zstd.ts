// Revlog chunks decode zstd through the engine's one zstd loader (format/zstd.ts); re-exported
// here for the revlog readers and their tests.
export {
  ZSTD_MAGIC,
  nativeZstd,
  prepareZstd,
  prepareZstdDecoding,
  scanZstdFrame,
  zstdDecompress,
  zstdReadyFor,
  zstdReadyForBound,
  type ZstdFrameInfo,
} from '../format/zstd';
