// Revlog chunks decode zstd through the engine's one zstd codec (codec/zstd.ts); re-exported
// here for the revlog readers and their tests.
export {
  ZSTD_MAGIC,
  prepareZstd,
  scanZstdFrame,
  zstdDecoderLoading,
  zstdDecompress,
  type ZstdFrameInfo,
} from './zstd';
