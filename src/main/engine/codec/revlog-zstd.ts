// Revlog chunks decode zstd through the engine's one zstd loader (codec/zstd.ts); re-exported
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
} from './zstd';
