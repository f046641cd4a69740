import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { deflateSync } from 'node:zlib';
import { isSluiceError } from '../../../../src/main/engine/errors';
import { chunkKind, chunkNeedsPreparation, decompressChunk } from '../../../../src/main/engine/revlog/chunk';
import { missing, skipNote } from '../../../support/revlog';
import { prepareZstd, scanZstdFrame, zstdDecompress } from '../../../../src/main/engine/codec/revlog-zstd';
import { zstdCompressChunk } from '../../../../src/main/engine/codec/zstd';

function zstdCli(data: Buffer, args: string[]): Buffer {
  const res = spawnSync('zstd', ['-q', '-c', ...args], { input: data, maxBuffer: 512 << 20 });
  if (res.status !== 0) throw new Error(String(res.stderr));
  return res.stdout;
}

async function decode(chunk: Uint8Array, max = 1 << 30): Promise<Buffer> {
  const p = chunkNeedsPreparation(chunk);
  if (p) await p;
  return Buffer.from(decompressChunk(chunk, max));
}

function problemOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    if (isSluiceError(e)) return `${e.code}:${(e.details as { problem?: string } | undefined)?.problem}`;
    throw e;
  }
  return undefined;
}

/** A zstd frame header: single segment, 8-byte content size, one empty raw last block. */
function declaredFrame(contentSize: number): Buffer {
  const b = Buffer.alloc(4 + 1 + 8 + 3);
  b.writeUInt32LE(0xfd2fb528, 0);
  b[4] = 0xe0; // FCS 8 bytes, single segment
  b.writeBigUInt64LE(BigInt(contentSize), 5);
  b.writeUIntLE(1, 13, 3); // last, raw, size 0
  return b;
}

describe('revlog chunks', () => {
  it('stored, NUL-led raw, empty and zlib chunks (revlog.decompress)', async () => {
    expect((await decode(Buffer.from('uhello\n'))).toString()).toBe('hello\n');
    const nul = Buffer.from([0, 0, 0, 1, 2]);
    expect(await decode(nul)).toEqual(nul); // the NUL is part of the data
    expect((await decode(Buffer.alloc(0))).length).toBe(0);
    const text = Buffer.from('abc\n'.repeat(1000));
    expect(await decode(deflateSync(text))).toEqual(text);
    expect(chunkKind(deflateSync(text))).toBe('zlib');
    expect(problemOf(() => chunkKind(Buffer.from('Qxyz')))).toBe('REVLOG:decompress');
  });

  it('corrupt or oversized zlib is a REVLOG decompress error', () => {
    const z = deflateSync(Buffer.alloc(100000));
    expect(problemOf(() => decompressChunk(z.subarray(0, z.length - 5), 1 << 20))).toBe('REVLOG:decompress');
    expect(problemOf(() => decompressChunk(z, 99999))).toBe('REVLOG:decompress');
    expect(decompressChunk(z, 100000).length).toBe(100000);
    const flipped = Buffer.from(z);
    flipped[5] ^= 0xff;
    expect(problemOf(() => decompressChunk(flipped, 1 << 20))).toBe('REVLOG:decompress');
  });

  it('a zlib chunk inflates into a buffer of the expected size; a wrong guess gives the same bytes', () => {
    const text = Buffer.from('a line of a file that changes\n'.repeat(200)); // 6,000 bytes
    const z = deflateSync(text);
    expect(Buffer.from(decompressChunk(z, 1 << 20, text.length)).equals(text)).toBe(true);
    // small texts: node:zlib's 16 KiB default output buffer would stay behind each of them
    const small = deflateSync(text.subarray(0, 200));
    const memoryHeld = (expected?: number): number =>
      new Set(Array.from({ length: 12 }, () => decompressChunk(small, 1 << 20, expected).buffer)).size;
    expect(memoryHeld(200)).toBeLessThan(memoryHeld(undefined));
    for (const guess of [1, 64, 100, 5999, 6001, 1 << 20, 1 << 30]) {
      expect(Buffer.from(decompressChunk(z, 1 << 20, guess)).equals(text)).toBe(true);
    }
    // the bound still holds whatever the guess
    for (const guess of [64, 1 << 20])
      expect(() => decompressChunk(z, 5000, guess)).toThrow(/more than 5000 bytes/);
  });

  it("a lying index's expected size never allocates more than the chunk can inflate to", () => {
    const text = Buffer.from('a short delta\n');
    const z = deflateSync(text);
    // as the index's rawsize and bound say: 2 GiB for a 22-byte chunk
    const out = decompressChunk(z, 0x7fffffff, 0x7fffffff);
    expect(Buffer.from(out).equals(text)).toBe(true);
    expect(out.buffer.byteLength).toBeLessThan(1 << 20);
  });

  it('zstd frames are walked before anything is allocated: a declared 2^40 bytes is refused', async () => {
    await prepareZstd();
    expect(problemOf(() => scanZstdFrame(declaredFrame(2 ** 40)))).toBe('REVLOG:decompress');
    // content size larger than the caller's bound
    expect(problemOf(() => zstdDecompress(declaredFrame(100), 50))).toBe('REVLOG:decompress');
    // reserved bit, dictionary, truncated header, bad magic
    const reserved = declaredFrame(0);
    reserved[4] |= 0x08;
    expect(problemOf(() => scanZstdFrame(reserved))).toBe('REVLOG:decompress');
    const dict = Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x21, 0x07, 0x00, 0x01, 0, 0]);
    expect(problemOf(() => scanZstdFrame(dict))).toBe('REVLOG:decompress');
    expect(problemOf(() => scanZstdFrame(Buffer.from([0x28, 0xb5, 0x2f])))).toBe('REVLOG:decompress');
    // an empty frame (valid zstd, never written by hg) decodes to nothing
    expect(zstdDecompress(declaredFrame(0), 10).length).toBe(0);
    // trailing bytes after the frame
    expect(problemOf(() => zstdDecompress(Buffer.concat([declaredFrame(0), Buffer.from([0])]), 10))).toBe(
      'REVLOG:decompress',
    );
  });

  it("zstdCompressChunk: one frame with its content size, the wasm encoder's bytes on revlog-sized texts", async () => {
    const wasm = (await import('@bokuweb/zstd-wasm')) as unknown as {
      init(): Promise<void>;
      createCCtx(): number;
      compressUsingDict(c: number, b: Uint8Array, d: Uint8Array, level: number): Uint8Array;
    };
    await wasm.init();
    const cctx = wasm.createCCtx();
    const text = (n: number, seed: number): Buffer => {
      const b = Buffer.alloc(n);
      for (let i = 0; i < n; i++) b[i] = (i * seed + (i >> 5) + ((i * i) >> 11)) & 0xff;
      return b;
    };
    for (const [i, n] of [50, 1000, 70_000, 200_000, 1_100_000, 3, 64 << 10].entries()) {
      const t = text(n, 7 + i);
      const frame = zstdCompressChunk(t, 3);
      expect(scanZstdFrame(frame).contentSize).toBe(n);
      expect(
        Buffer.from(frame).equals(Buffer.from(wasm.compressUsingDict(cctx, t, new Uint8Array(0), 3))),
      ).toBe(true);
      expect(Buffer.from(zstdDecompress(frame, n)).equals(t)).toBe(true);
    }
  });

  it.skipIf(missing('zstd'))(
    `zstd CLI frames: small ones one-shot, large ones and large windows through node:zlib${skipNote('zstd')}`,
    async () => {
      const text = Buffer.alloc(3 << 20);
      for (let i = 0; i < text.length; i += 7) text[i] = i & 0xff;
      // one-shot (content size known and small)
      const small = zstdCli(text.subarray(0, 100000), ['-3']);
      expect((await decode(small)).equals(text.subarray(0, 100000))).toBe(true);
      // content larger than the wasm decoder's bound (window 2 MiB)
      const big = Buffer.concat([text, text, text]);
      const streamed = zstdCli(big, ['-3']);
      expect(scanZstdFrame(streamed).windowSize).toBeLessThanOrEqual(4 << 20);
      expect((await decode(streamed)).equals(big)).toBe(true); // (toEqual on MBs is slow)
      // a frame without content size (streamed input to the CLI)
      const noSize = spawnSync('sh', ['-c', 'cat | zstd -q -c -3'], { input: text.subarray(0, 5000) })
        .stdout as Buffer;
      expect(scanZstdFrame(noSize).contentSize).toBeUndefined();
      expect((await decode(noSize)).equals(text.subarray(0, 5000))).toBe(true);
      // window of 8 MiB: beyond the wasm decoder's bound, decoded by node:zlib
      const wide = zstdCli(Buffer.concat([big, big]), ['--long=23', '-3']);
      expect(scanZstdFrame(wide).windowSize).toBe(8 << 20);
      expect((await decode(wide)).equals(Buffer.concat([big, big]))).toBe(true);
      // the bound is enforced while streaming
      expect(problemOf(() => zstdDecompress(streamed, 1 << 20))).toBe('REVLOG:decompress');
      // corrupt data inside a block
      const bad = Buffer.from(small);
      for (let i = 20; i < 60; i++) bad[i] ^= 0x5a;
      expect(problemOf(() => decompressChunk(bad, 1 << 20))).toBe('REVLOG:decompress');
    },
  );
});
