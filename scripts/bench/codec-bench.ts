// Benchmark of the engine's codecs (not part of the test suite):
//   npx tsx scripts/bench/codec-bench.ts [runs]
// Texts: the .js/.ts/.md files of 1-64 KiB under node_modules (sorted, the first 6000), standing
// in for revlog chunks; CPU time (user + system) per operation, the median of `runs`.
// - revlog chunks: one zstd frame per text, level 3 (zstdCompressChunk), decoded one at a time
//   (zstdDecompress, the view the revlog reader takes)
// - bundle streams: the texts concatenated, through compressStream / decompressStream 'ZS'
// - bzip2: the concatenation compressed by the bzip2 CLI (-9, as hg), through decompressStream 'BZ'

import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import * as zstd from '../../src/main/engine/codec/zstd';
import { compressStream, decompressStream } from '../../src/main/engine/codec/compression';

function texts(): Buffer[] {
  const found: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir).sort()) {
      const p = join(dir, name);
      const st = statSync(p, { throwIfNoEntry: false });
      if (!st) continue;
      if (st.isDirectory()) walk(p);
      else if (/\.(js|ts|md)$/.test(name) && st.size >= 1024 && st.size <= 64 << 10) found.push(p);
    }
  };
  walk('node_modules');
  return found.slice(0, 6000).map((p) => readFileSync(p));
}

function cpu(f: () => void): number {
  const t = process.cpuUsage();
  f();
  const d = process.cpuUsage(t);
  return (d.user + d.system) / 1000;
}

async function cpuAsync(f: () => Promise<void>): Promise<number> {
  const t = process.cpuUsage();
  await f();
  const d = process.cpuUsage(t);
  return (d.user + d.system) / 1000;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function* pieces(b: Buffer, size = 64 << 10): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < b.length; i += size) yield b.subarray(i, i + size);
}

async function drain(src: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const out: Uint8Array[] = [];
  for await (const c of src) out.push(c);
  return Buffer.concat(out);
}

async function main(): Promise<void> {
  const runs = Number(process.argv[2] ?? 5);
  const all = texts();
  const total = all.reduce((n, t) => n + t.length, 0);
  const mb = total / 1e6;
  console.log(`node ${process.version}: ${all.length} texts, ${mb.toFixed(1)} MB`);
  // (prepareZstdWriting: the name before the node:zlib-only codec, for before/after runs)
  const z = zstd as Record<string, unknown>;
  const prep = (z.prepareZstdWriting ?? z.prepareZstd) as (() => Promise<void>) | undefined;
  if (prep) await prep();
  const frames = all.map((t) => zstd.zstdCompressChunk(t, 3));
  for (let i = 0; i < all.length; i++)
    if (!Buffer.from(zstd.zstdDecompress(frames[i]!, all[i]!.length)).equals(all[i]!))
      throw new Error('round trip');
  const enc: number[] = [];
  const dec: number[] = [];
  for (let r = 0; r < runs; r++) {
    enc.push(cpu(() => all.forEach((t) => zstd.zstdCompressChunk(t, 3))));
    dec.push(cpu(() => frames.forEach((f, i) => zstd.zstdDecompress(f, all[i]!.length))));
  }
  const line = (what: string, ms: number, n: number): void =>
    console.log(
      `${what.padEnd(34)} ${ms.toFixed(0).padStart(6)} ms CPU  ${(mb / (ms / 1000)).toFixed(0).padStart(5)} MB/s  ${((ms * 1000) / n).toFixed(1).padStart(6)} µs/op`,
    );
  line('revlog chunks: compress (level 3)', median(enc), all.length);
  line('revlog chunks: decompress', median(dec), all.length);

  const joined = Buffer.concat(all);
  const big = Buffer.concat([joined, joined, joined, joined]);
  const bigMb = big.length / 1e6;
  const packed = await drain(compressStream('ZS', pieces(big)));
  if (!(await drain(decompressStream('ZS', pieces(packed)))).equals(big)) throw new Error('ZS');
  const bz = execFileSync('bzip2', ['-9c'], { input: joined, maxBuffer: 1 << 30 });
  const sc: number[] = [];
  const sd: number[] = [];
  const bd: number[] = [];
  for (let r = 0; r < runs; r++) {
    sc.push(await cpuAsync(() => drain(compressStream('ZS', pieces(big))).then(() => undefined)));
    sd.push(await cpuAsync(() => drain(decompressStream('ZS', pieces(packed))).then(() => undefined)));
    bd.push(await cpuAsync(() => drain(decompressStream('BZ', pieces(bz))).then(() => undefined)));
  }
  const sline = (what: string, ms: number, size: number): void =>
    console.log(
      `${what.padEnd(34)} ${ms.toFixed(0).padStart(6)} ms CPU  ${(size / (ms / 1000)).toFixed(0).padStart(5)} MB/s (out)`,
    );
  sline(`bundle stream: zstd compress ${bigMb.toFixed(0)} MB`, median(sc), bigMb);
  sline(`bundle stream: zstd decompress`, median(sd), bigMb);
  sline(`bundle stream: bzip2 decompress ${mb.toFixed(0)} MB`, median(bd), mb);
}

void main();
