import { randomBytes } from 'node:crypto';
import zlib from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../../../src/main/engine/errors';
import {
  COMPRESS_INPUT,
  compressStream,
  decompressStream,
  type CompressionKey,
} from '../../../../src/main/engine/codec/compression';
import { chunked, countZstdFrames, errorCode, fixture, splitAt } from '../../../support/format';

async function collect(it: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const c of it) parts.push(c);
  return Buffer.concat(parts);
}

/** Compressible but not trivial: text-like runs plus random bytes. */
function sample(n: number): Buffer {
  const out = Buffer.alloc(n);
  const rnd = randomBytes(n);
  for (let i = 0; i < n; i++) out[i] = i % 7 === 0 ? rnd[i]! : 97 + ((i >> 4) % 26);
  return out;
}

/** The compressed core of a fixture bundle (after HG20, params size and params). */
function bundleCore(name: string): Buffer {
  const b = fixture('default', name);
  return b.subarray(8 + b.readInt32BE(4));
}

describe('compressStream / decompressStream', () => {
  it.each(['GZ', 'ZS'] as CompressionKey[])('%s round-trips in any split', async (kind) => {
    const data = sample(300_000);
    const packed = await collect(compressStream(kind, chunked(splitAt(data, [1, 5000, 5001, 100_000]))));
    expect(packed.length).toBeLessThan(data.length);
    await fc.assert(
      fc.asyncProperty(fc.array(fc.nat(packed.length), { maxLength: 12 }), async (cuts) => {
        const out = await collect(decompressStream(kind, chunked(splitAt(packed, cuts))));
        expect(out.equals(data)).toBe(true);
      }),
      { numRuns: 15 },
    );
  });

  it.each(['GZ', 'ZS'] as CompressionKey[])(
    '%s: consumed() gets each input piece once the compressor no longer reads it',
    async (kind) => {
      // three pieces of a compressor's write each, passed on as they are (no coalescing copy)
      const data = sample(3 * COMPRESS_INPUT);
      const pieces = [0, 1, 2].map((k) =>
        Buffer.from(data.subarray(k * COMPRESS_INPUT, (k + 1) * COMPRESS_INPUT)),
      );
      const given: Uint8Array[] = [];
      async function* src(): AsyncGenerator<Uint8Array> {
        yield* pieces;
      }
      // a consumer that reuses what it gets back at once: any byte read after consumed() differs
      const packed = await collect(
        compressStream(kind, src(), (piece) => {
          given.push(piece);
          piece.fill(0x55);
        }),
      );
      expect((await collect(decompressStream(kind, chunked([packed])))).equals(data)).toBe(true);
      expect(given.map((g) => pieces.findIndex((p) => p.buffer === g.buffer))).toEqual([0, 1, 2]);
    },
  );

  it('GZ is a zlib stream (78 9c) that Node and Python-style inflate read', async () => {
    const data = sample(50_000);
    const packed = await collect(compressStream('GZ', chunked([data])));
    expect(packed.subarray(0, 2).toString('hex')).toBe('789c');
    expect(zlib.inflateSync(packed).equals(data)).toBe(true);
  });

  it('ZS is exactly one zstd frame whatever the input chunking (hg reads only the first)', async () => {
    const data = sample(2_000_000);
    const pieces = splitAt(
      data,
      Array.from({ length: 300 }, (_, i) => i * 6553),
    );
    const packed = await collect(compressStream('ZS', chunked(pieces)));
    expect(packed.subarray(0, 4).toString('hex')).toBe('28b52ffd');
    expect(countZstdFrames(packed)).toBe(1);
  });

  it('reads hg-made cores: zstd, zlib and bzip2 bundles decompress to the none bundle core', async () => {
    const none = bundleCore('stream-v2.hg');
    for (const [file, kind] of [
      ['stream-v2-zstd.hg', 'ZS'],
      ['stream-v2-gzip.hg', 'GZ'],
      ['stream-v2-bzip2.hg', 'BZ'],
    ] as const) {
      const core = bundleCore(file);
      const out = await collect(decompressStream(kind, chunked(splitAt(core, [7, 1000, 1001]))));
      expect(out.equals(none), file).toBe(true);
    }
  });

  it('corrupt input is COMPRESSION', async () => {
    const junk = Buffer.from('this is not compressed at all, not even a little bit');
    for (const kind of ['GZ', 'BZ', 'ZS'] as CompressionKey[]) {
      expect(await errorCode(() => collect(decompressStream(kind, chunked([junk]))))).toBe('COMPRESSION');
    }
    const gz = Buffer.from(bundleCore('stream-v2-gzip.hg'));
    for (let i = 100; i < gz.length; i += 50) gz[i] ^= 0xa5;
    expect(await errorCode(() => collect(decompressStream('GZ', chunked([gz]))))).toBe('COMPRESSION');
  });

  it('a valid zstd frame followed by garbage still yields the frame first', async () => {
    const core = bundleCore('stream-v2-zstd.hg');
    const it = decompressStream('ZS', chunked([Buffer.concat([core, Buffer.from('garbage!')])]))[
      Symbol.asyncIterator
    ]();
    const parts: Uint8Array[] = [];
    let err: unknown;
    try {
      for (;;) {
        const r = await it.next();
        if (r.done) break;
        parts.push(r.value);
      }
    } catch (e) {
      err = e;
    }
    expect(Buffer.concat(parts).equals(bundleCore('stream-v2.hg'))).toBe(true);
    if (err) expect((err as SluiceError).code).toBe('COMPRESSION');
  });

  it('hostile zstd frames (huge windows) fail as COMPRESSION and never break later streams', async () => {
    // frame header: magic, FHD 0 (window descriptor present, no checksum/dict/size), window
    // descriptor exponent e → windowLog 10+e; then one raw last block of 4 bytes
    const frame = (exponent: number): Buffer =>
      Buffer.concat([
        Buffer.from('28b52ffd00', 'hex'),
        Buffer.from([exponent << 3]),
        Buffer.from([0x21, 0, 0]),
        Buffer.from('abcd'),
      ]);
    expect((await collect(decompressStream('ZS', chunked([frame(4)])))).toString()).toBe('abcd');
    for (const exponent of [14, 17, 20, 31]) {
      // 16 MiB, 128 MiB, 1 GiB windows: the last two beyond zstd's own limit (windowLog 27)
      const code = await errorCode(() => collect(decompressStream('ZS', chunked([frame(exponent)])))).catch(
        () => 'ok',
      );
      if (exponent >= 18) expect(code).toBe('COMPRESSION');
    }
    const core = bundleCore('stream-v2-zstd.hg');
    expect((await collect(decompressStream('ZS', chunked([core])))).equals(bundleCore('stream-v2.hg'))).toBe(
      true,
    );
  });

  it('a zstd decompression bomb is produced at the consumer’s pace (no unbounded buffering)', async () => {
    // 16384 RLE blocks of 128 KiB from 64 KiB of input: 2 GiB if decompressed eagerly
    const blocks = 16384;
    const bomb = Buffer.alloc(6 + 4 * blocks);
    Buffer.from('28b52ffd0038', 'hex').copy(bomb); // magic, FHD 0, window 2^17
    for (let i = 0; i < blocks; i++) {
      const header = (131072 << 3) | (1 << 1) | (i === blocks - 1 ? 1 : 0);
      bomb.writeUIntLE(header, 6 + 4 * i, 3);
      bomb[6 + 4 * i + 3] = 0x41;
    }
    const before = process.memoryUsage().arrayBuffers;
    const it = decompressStream('ZS', chunked([bomb]))[Symbol.asyncIterator]();
    let taken = 0;
    while (taken < 8 * 1024 * 1024) {
      const r = await it.next();
      if (r.done) break;
      taken += r.value.length;
      expect(r.value[0]).toBe(0x41);
    }
    await it.return?.();
    expect(taken).toBeGreaterThanOrEqual(8 * 1024 * 1024);
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(256 * 1024 * 1024);
  });

  it('abandoned zstd streams (never finished, never closed) do not exhaust anything', async () => {
    const core = bundleCore('stream-v2-zstd.hg');
    for (let i = 0; i < 12; i++) {
      const it = decompressStream('ZS', chunked(splitAt(core, [1000])))[Symbol.asyncIterator]();
      await it.next(); // started, then dropped on the floor
      const c = compressStream('ZS', chunked([sample(100_000)]))[Symbol.asyncIterator]();
      await c.next();
    }
    expect((await collect(decompressStream('ZS', chunked([core])))).equals(bundleCore('stream-v2.hg'))).toBe(
      true,
    );
  });

  it('errors of the input pass through unchanged', async () => {
    async function* failing(): AsyncGenerator<Uint8Array> {
      yield bundleCore('stream-v2-zstd.hg').subarray(0, 100);
      throw new SluiceError('NETWORK', 'connection reset');
    }
    for (const kind of ['GZ', 'ZS'] as CompressionKey[]) {
      expect(await errorCode(() => collect(decompressStream(kind, failing())))).toBe('NETWORK');
    }
    // compressing: after more than one coalesced input piece (256 KiB) went in
    async function* failingLate(): AsyncGenerator<Uint8Array> {
      for (let i = 0; i < 40; i++) yield sample(10_000);
      throw new SluiceError('NETWORK', 'connection reset');
    }
    for (const kind of ['GZ', 'ZS'] as CompressionKey[]) {
      expect(await errorCode(() => collect(compressStream(kind, failingLate())))).toBe('NETWORK');
    }
  });

  it('BZ cannot be written; UN is the identity', async () => {
    expect(await errorCode(async () => compressStream('BZ', chunked([])))).toBe('UNSUPPORTED_COMPRESSION');
    const src = chunked([Buffer.from('x')]);
    expect(decompressStream('UN', src)).toBe(src);
  });
});
