import { describe, expect, it, vi } from 'vitest';
import { spawnSync } from 'node:child_process';
import * as zlib from 'node:zlib';
import { deflateSync } from 'node:zlib';
import { isSluiceError } from '../../../../src/main/engine/errors';
import { chunkKind, chunkNeedsPreparation, decompressChunk } from '../../../../src/main/engine/revlog/chunk';
import { missing, skipNote } from '../../../support/revlog';
import { prepareZstd, scanZstdFrame, zstdDecompress } from '../../../../src/main/engine/codec/revlog-zstd';
import { nativeZstd, zstdCompressChunk } from '../../../../src/main/engine/codec/zstd';

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

/** A frame holding `data` in one raw block, content size declared. */
function rawFrame(data: Buffer): Buffer {
  const b = Buffer.alloc(4 + 1 + 8 + 3 + data.length);
  b.writeUInt32LE(0xfd2fb528, 0);
  b[4] = 0xe0; // FCS 8 bytes, single segment
  b.writeBigUInt64LE(BigInt(data.length), 5);
  b.writeUIntLE(1 | (data.length << 3), 13, 3); // last, raw
  data.copy(b, 16);
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

  it('zstd frames are walked before anything is allocated: a declared 2^40 bytes is refused', async () => {
    await prepareZstd();
    expect(problemOf(() => scanZstdFrame(declaredFrame(2 ** 40)))).toBe('REVLOG:decompress');
    // content size larger than the caller's bound
    const t0 = performance.now();
    expect(problemOf(() => zstdDecompress(declaredFrame(100), 50))).toBe('REVLOG:decompress');
    expect(performance.now() - t0).toBeLessThan(1000);
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

  it('a small zstd frame waits for the wasm decoder unless node:zlib has zstd (its kept decoder then)', async () => {
    // node:zlib's one-shot call costs 30-40 µs per call: where node:zlib has zstd, small frames
    // take its kept decoder at once (nothing to load); elsewhere a reader that never yields to
    // the event loop waits for the wasm decoder instead of never seeing it load
    vi.resetModules();
    const fresh = await import('../../../../src/main/engine/codec/revlog-zstd');
    const frame = rawFrame(Buffer.from('hello, revlog'));
    const info = fresh.scanZstdFrame(frame);
    const native = fresh.nativeZstd() !== null;
    expect(fresh.zstdReadyFor(info, 100)).toBe(native);
    expect(fresh.zstdReadyForBound(100)).toBe(native);
    await fresh.prepareZstdDecoding();
    expect(fresh.zstdReadyFor(info, 100)).toBe(true);
    expect(Buffer.from(fresh.zstdDecompress(frame, 100)).toString()).toBe('hello, revlog');
  });

  it('prepareZstdWriting readies the encoder and the decoder of revlog chunks, loading the wasm module only without node:zlib zstd', async () => {
    vi.resetModules();
    const fresh = await import('../../../../src/main/engine/codec/zstd');
    const native = fresh.nativeZstd() !== null;
    await fresh.prepareZstdWriting();
    expect(fresh.zstdCompressReady()).toBe(true);
    const t = Buffer.from('a manifest line\n'.repeat(400));
    const frame = fresh.zstdCompressChunk(t, 3);
    expect(fresh.zstdReadyFor(fresh.scanZstdFrame(frame), t.length)).toBe(true);
    expect(Buffer.from(fresh.zstdDecompress(frame, t.length)).equals(t)).toBe(true);
    // the wasm codec (a 16 MiB heap) only where node:zlib has no zstd
    expect(fresh.zstdWasmLoaded()).toBe(!native);
  });

  it.skipIf(!nativeZstd())(
    `small zstd frames through node:zlib's kept decoder: one context, exact limits, errors retire it${
      nativeZstd() ? '' : ' (skipped: this Node has no zstd in node:zlib)'
    }`,
    async () => {
      await prepareZstd(); // the encoder (zstdCompressChunk)
      const z = nativeZstd()!;
      const text = (n: number, seed: number): Buffer => {
        const b = Buffer.alloc(n);
        for (let i = 0; i < n; i++) b[i] = (i * seed + (i >> 5)) & 0xff;
        return b;
      };
      // no content size declared: only the decoder can tell the size
      const compress = (zlib as unknown as { zstdCompressSync(b: Buffer, o: object): Buffer })
        .zstdCompressSync;
      const undeclared = (b: Buffer): Buffer =>
        compress(b, { params: { [z.constants.ZSTD_c_contentSizeFlag!]: 0 } });
      // frames one after another through the one context, views and copies
      const texts = Array.from({ length: 40 }, (_, i) => text(1 + i * 997, 3 + i));
      for (const t of texts) {
        expect(Buffer.from(zstdDecompress(zstdCompressChunk(t, 3), 1 << 20, true)).equals(t)).toBe(true);
        expect(Buffer.from(zstdDecompress(undeclared(t), t.length)).equals(t)).toBe(true);
      }
      const a = text(6000, 5);
      const b = text(6000, 11);
      const copy = zstdDecompress(undeclared(a), 1 << 20);
      const view = zstdDecompress(undeclared(a), 1 << 20, true);
      zstdDecompress(undeclared(b), 1 << 20, true);
      expect(Buffer.from(copy).equals(a)).toBe(true);
      expect(Buffer.from(view).equals(b)).toBe(true); // the kept buffer, reused
      // one byte more than the limit is an error; the next frame decodes on a fresh context
      expect(problemOf(() => zstdDecompress(undeclared(a), a.length - 1))).toBe('REVLOG:decompress');
      expect(Buffer.from(zstdDecompress(undeclared(b), b.length)).equals(b)).toBe(true);
      // corrupt frames the structural walk lets through: the decoder's error, then a fresh context
      const good = undeclared(b);
      let decoderErrors = 0;
      for (let i = 8; i < good.length; i += 7) {
        const bad = Buffer.from(good);
        bad[i] ^= 0x5a;
        if (problemOf(() => scanZstdFrame(bad)) !== undefined) continue;
        const problem = problemOf(() => zstdDecompress(bad, 1 << 20));
        if (problem === undefined) continue; // garbage out: the revlog's node check catches that
        expect(problem).toBe('REVLOG:decompress');
        decoderErrors++;
        expect(Buffer.from(zstdDecompress(undeclared(a), a.length)).equals(a)).toBe(true);
      }
      expect(decoderErrors).toBeGreaterThan(0);
      // beyond the kept buffer (1 MiB): a buffer of its own, never a view of a kept one
      const big = text(3 << 20, 7);
      const bigOut = zstdDecompress(undeclared(big), 4 << 20, true);
      expect(Buffer.from(zstdDecompress(undeclared(a), 1 << 20, true)).equals(a)).toBe(true);
      expect(Buffer.from(bigOut).equals(big)).toBe(true);
    },
  );

  it.skipIf(!nativeZstd())(
    `zstdCompressChunk through node:zlib's kept encoder: the wasm encoder's frames, one after another${
      nativeZstd() ? '' : ' (skipped: this Node has no zstd in node:zlib)'
    }`,
    async () => {
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
      // small, around the kept buffer's growth, and past its 1 MiB (a buffer of the frame's own)
      const sizes = [50, 1000, 70_000, 200_000, 1_100_000, 3, 64 << 10];
      for (const [i, n] of sizes.entries()) {
        const t = text(n, 7 + i);
        const frame = zstdCompressChunk(t, 3);
        expect(
          Buffer.from(frame).equals(Buffer.from(wasm.compressUsingDict(cctx, t, new Uint8Array(0), 3))),
        ).toBe(true);
        expect(Buffer.from(zstdDecompress(frame, n)).equals(t)).toBe(true);
      }
      // a frame handed out is the caller's: the next one does not overwrite it
      const a = zstdCompressChunk(text(5000, 3), 3);
      const keep = Buffer.from(a);
      zstdCompressChunk(text(5000, 5), 3);
      expect(Buffer.from(a).equals(keep)).toBe(true);
    },
  );

  it('zstd frames through the kept wasm context: views until the next call, large frames, errors', async () => {
    await prepareZstd();
    const text = (n: number, seed: number): Buffer => {
      const b = Buffer.alloc(n);
      for (let i = 0; i < n; i++) b[i] = (i * seed + (i >> 7)) & 0xff;
      return b;
    };
    const a = text(5000, 7);
    const b = text(7000, 13);
    const fa = zstdCompressChunk(a, 3);
    const fb = zstdCompressChunk(b, 3);
    // a transient result is the decoder's memory: the next call reuses it, a copy does not
    const view = decompressChunk(fa, 1 << 20, true);
    expect(Buffer.from(view).equals(a)).toBe(true);
    const copy = decompressChunk(fa, 1 << 20);
    expect(Buffer.from(decompressChunk(fb, 1 << 20, true)).equals(b)).toBe(true);
    expect(Buffer.from(copy).equals(a)).toBe(true);
    expect(Buffer.from(view.subarray(0, 100)).equals(b.subarray(0, 100))).toBe(true);
    // frames beyond the kept buffers (1 MiB) get buffers of their own; the kept ones still work
    const big = text(3 << 20, 31);
    expect(Buffer.from(decompressChunk(zstdCompressChunk(big, 1), 4 << 20, true)).equals(big)).toBe(true);
    expect(problemOf(() => decompressChunk(zstdCompressChunk(big, 1), 1 << 20))).toBe('REVLOG:decompress');
    // a corrupt frame is an error, and the context decodes the next frame
    const bad = Buffer.from(fb);
    for (let i = 12; i < bad.length - 4; i++) bad[i] ^= 0x5a;
    expect(problemOf(() => decompressChunk(bad, 1 << 20))).toBe('REVLOG:decompress');
    expect(Buffer.from(decompressChunk(fa, 1 << 20)).equals(a)).toBe(true);
  });

  it.skipIf(missing('zstd'))(
    `zstd: small frames one-shot, large ones streamed, large windows through the big-heap decoder${skipNote('zstd')}`,
    async () => {
      const text = Buffer.alloc(3 << 20);
      for (let i = 0; i < text.length; i += 7) text[i] = i & 0xff;
      // one-shot (content size known and small)
      const small = zstdCli(text.subarray(0, 100000), ['-3']);
      expect((await decode(small)).equals(text.subarray(0, 100000))).toBe(true);
      // streamed (content larger than the one-shot limit, window 2 MiB)
      const big = Buffer.concat([text, text, text]);
      const streamed = zstdCli(big, ['-3']);
      expect(scanZstdFrame(streamed).windowSize).toBeLessThanOrEqual(4 << 20);
      expect((await decode(streamed)).equals(big)).toBe(true); // (toEqual on MBs is slow)
      // a frame without content size (streamed input to the CLI)
      const noSize = spawnSync('sh', ['-c', 'cat | zstd -q -c -3'], { input: text.subarray(0, 5000) })
        .stdout as Buffer;
      expect(scanZstdFrame(noSize).contentSize).toBeUndefined();
      expect((await decode(noSize)).equals(text.subarray(0, 5000))).toBe(true);
      // window of 8 MiB: beyond the wasm heap's comfort, decoded by the asm.js build (or natively)
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
