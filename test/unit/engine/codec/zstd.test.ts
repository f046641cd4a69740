// The zstd codec's two decoders of revlog chunks (codec/zstd.ts): node:zlib's until the wasm
// module is loaded, and for frames beyond its bound; the wasm one after prepareZstd(). The tests
// run in order: the wasm module is loaded once per thread (this file's first tests see it absent).
import { describe, expect, it } from 'vitest';
import * as zlib from 'node:zlib';
import { isSluiceError } from '../../../../src/main/engine/errors';
import * as z from '../../../../src/main/engine/codec/zstd';
import { decompressChunk } from '../../../../src/main/engine/revlog/chunk';

function problemOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    if (isSluiceError(e)) return `${e.code}:${(e.details as { problem?: string } | undefined)?.problem}`;
    throw e;
  }
  return undefined;
}

/** One zstd frame holding data as one raw block, its content size declared. */
function rawFrame(data: Buffer): Buffer {
  const b = Buffer.alloc(4 + 1 + 8 + 3 + data.length);
  b.writeUInt32LE(0xfd2fb528, 0);
  b[4] = 0xe0; // FCS 8 bytes, single segment
  b.writeBigUInt64LE(BigInt(data.length), 5);
  b.writeUIntLE(1 | (data.length << 3), 13, 3); // last, raw
  data.copy(b, 16);
  return b;
}

describe('zstd decoders of revlog chunks', () => {
  const text = (n: number, seed: number): Buffer => {
    const b = Buffer.alloc(n);
    for (let i = 0; i < n; i++) b[i] = (i * seed + (i >> 5) + ((i * i) >> 11)) & 0xff;
    return b;
  };
  // no content size declared: only the decoder can tell the size
  const undeclared = (b: Buffer): Buffer =>
    (zlib as unknown as { zstdCompressSync(b: Buffer, o: object): Buffer }).zstdCompressSync(b, {
      params: { [(zlib.constants as Record<string, number>).ZSTD_c_contentSizeFlag!]: 0 },
    });

  const decoders = (decoder: 'node:zlib' | 'wasm'): void =>
    it(`small zstd frames through the ${decoder} decoder: exact limits, corrupt frames, the next frame after an error`, async () => {
      if (decoder === 'wasm') await z.prepareZstd();
      expect(z.zstdWasmLoaded()).toBe(decoder === 'wasm');
      const texts = Array.from({ length: 40 }, (_, i) => text(1 + i * 997, 3 + i));
      for (const t of texts) {
        expect(Buffer.from(z.zstdDecompress(z.zstdCompressChunk(t, 3), 1 << 20)).equals(t)).toBe(true);
        expect(Buffer.from(z.zstdDecompress(undeclared(t), t.length)).equals(t)).toBe(true);
      }
      const a = text(6000, 5);
      const b = text(6000, 11);
      // results are the caller's: the next frame does not overwrite them
      const first = z.zstdDecompress(undeclared(a), 1 << 20);
      z.zstdDecompress(undeclared(b), 1 << 20);
      expect(Buffer.from(first).equals(a)).toBe(true);
      // one byte more than the limit is an error; the next frame decodes
      expect(problemOf(() => z.zstdDecompress(undeclared(a), a.length - 1))).toBe('REVLOG:decompress');
      expect(Buffer.from(z.zstdDecompress(undeclared(b), b.length)).equals(b)).toBe(true);
      // corrupt frames the structural walk lets through: the decoder's error, then the next frame
      const good = undeclared(b);
      let decoderErrors = 0;
      for (let i = 8; i < good.length; i += 7) {
        const bad = Buffer.from(good);
        bad[i] ^= 0x5a;
        if (problemOf(() => z.scanZstdFrame(bad)) !== undefined) continue;
        const problem = problemOf(() => z.zstdDecompress(bad, 1 << 20));
        if (problem === undefined) continue; // garbage out: the revlog's node check catches that
        expect(problem).toBe('REVLOG:decompress');
        decoderErrors++;
        expect(Buffer.from(z.zstdDecompress(undeclared(a), a.length)).equals(a)).toBe(true);
      }
      expect(decoderErrors).toBeGreaterThan(0);
      // a large frame, and a bound it exceeds
      const big = text(3 << 20, 7);
      expect(Buffer.from(z.zstdDecompress(undeclared(big), 4 << 20)).equals(big)).toBe(true);
      expect(problemOf(() => decompressChunk(z.zstdCompressChunk(big, 1), 1 << 20))).toBe(
        'REVLOG:decompress',
      );
    });

  decoders('node:zlib');

  it('a zstd frame decodes at once through node:zlib while the wasm decoder loads, then through it', async () => {
    const fresh = z;
    const frame = rawFrame(Buffer.from('hello, revlog'));
    expect(fresh.zstdWasmLoaded()).toBe(false);
    const loading = fresh.zstdDecoderLoading();
    expect(loading).toBeInstanceOf(Promise);
    // no frame waits for a decoder: node:zlib's until the wasm one is there
    expect(Buffer.from(fresh.zstdDecompress(frame, 100)).toString()).toBe('hello, revlog');
    await loading;
    expect(fresh.zstdWasmLoaded()).toBe(true);
    expect(fresh.zstdDecoderLoading()).toBeUndefined();
    expect(Buffer.from(fresh.zstdDecompress(frame, 100)).toString()).toBe('hello, revlog');
  });

  decoders('wasm');

  it("compresses frame after frame in the wasm encoder's kept context: node:zlib's frames", () => {
    expect(z.zstdWasmLoaded()).toBe(true);
    const native = (t: Buffer): Buffer =>
      (zlib as unknown as { zstdCompressSync(b: Buffer, o: object): Buffer }).zstdCompressSync(t, {
        chunkSize: t.length + 1024,
        params: { [(zlib.constants as Record<string, number>).ZSTD_c_compressionLevel!]: 3 },
      });
    // sizes on both sides of the wasm encoder's bound, repeated: no state carries over a frame
    const texts = [50, 300, 4000, 12 << 10, (12 << 10) + 1, 60_000, 300, 50].map((n, i) =>
      text(n, 5 + (i % 6)),
    );
    for (const t of texts) {
      const frame = z.zstdCompressChunk(t, 3);
      expect(Buffer.from(frame).equals(native(t))).toBe(true);
      expect(z.scanZstdFrame(frame).contentSize).toBe(t.length);
      expect(Buffer.from(z.zstdDecompress(frame, t.length)).equals(t)).toBe(true);
    }
  });
});
