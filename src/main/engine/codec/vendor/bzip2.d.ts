// Types of the vendored bzip2 decoder (./bzip2.js, unbzip2-stream 1.4.3, MIT).

/** Reads n bits (null: skips to the next byte boundary); bytesRead counts bytes begun. */
export type BitReader = ((n: number | null) => number) & { bytesRead: number };

declare const bzip2: {
  /** Reads a stream header; returns the block size in units of 100 kB. */
  header(bits: BitReader): number;
  /** Decodes one block into `out`; returns the running stream CRC, or null at the stream's end. */
  decompress(
    bits: BitReader,
    out: (byte: number) => void,
    buf: Int32Array,
    bufsize: number,
    streamCRC: number | null,
  ): number | null;
};
export default bzip2;

/** A BitReader over the buffers `next` returns (undefined when none is left). */
export function bitIterator(next: () => Uint8Array | undefined): BitReader;
