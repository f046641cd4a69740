// Benchmark of the stream parsers and the bundle generator (not part of the test suite):
//   npx tsx src/main/engine/format/parse.bench.ts [/dev/shm/corpus-medium] [runs]
// Writes packed1 / v2 (none, zstd, gzip) bundles of the corpus with writeStreamBundle into
// /dev/shm/sluice-format-bench (kept between runs), then parses each with no writes: entries are
// read and their data streamed to a no-op sink, which is the parse cost the apply loop pays.

import { existsSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { writeStreamBundle } from '../generate/stream-bundle';
import { openStreamBundleFile } from './bundle-file';

async function parse(path: string): Promise<{ files: number; bytes: number }> {
  const reader = await openStreamBundleFile(path);
  let files = 0;
  let bytes = 0;
  const sink = (c: Uint8Array): void => {
    bytes += c.length;
  };
  for (;;) {
    const e = await reader.nextEntry();
    if (!e) break;
    files++;
    await reader.copyData(sink);
  }
  await reader.close();
  return { files, bytes };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function main(): Promise<void> {
  const repo = process.argv[2] ?? '/dev/shm/corpus-medium';
  const runs = Number(process.argv[3] ?? 5);
  const dir = '/dev/shm/sluice-format-bench';
  mkdirSync(dir, { recursive: true });
  const kinds = [
    { name: 'packed1', type: 'packed1', compression: 'none' },
    { name: 'v2-none', type: 'v2', compression: 'none' },
    { name: 'v2-none-4k', type: 'v2', compression: 'none', chunkSize: 4096 },
    { name: 'v2-zstd', type: 'v2', compression: 'zstd' },
    { name: 'v2-gzip', type: 'v2', compression: 'gzip' },
  ] as const;
  for (const k of kinds) {
    const out = join(dir, `${k.name}.hg`);
    const t0 = performance.now();
    const r = await writeStreamBundle(repo, out, {
      type: k.type,
      compression: k.compression,
      chunkSize: 'chunkSize' in k ? k.chunkSize : undefined,
    });
    const writeMs = performance.now() - t0;
    const times: number[] = [];
    let result = { files: 0, bytes: 0 };
    for (let i = 0; i < runs; i++) {
      const t1 = performance.now();
      result = await parse(out);
      times.push(performance.now() - t1);
    }
    console.log(
      `${k.name.padEnd(11)} ${String(r.files).padStart(6)} files ${(r.bytes / 1e6).toFixed(1)} MB data, ` +
        `${(statSync(out).size / 1e6).toFixed(1)} MB file | write ${writeMs.toFixed(0)} ms | ` +
        `parse median ${median(times).toFixed(0)} ms (min ${Math.min(...times).toFixed(0)}) ` +
        `[${result.files} files, ${result.bytes} bytes]`,
    );
  }
  for (const hgMade of ['hg-v2-none.hg', 'hg-packed1.hg']) {
    const p = join(dir, hgMade);
    if (!existsSync(p)) continue;
    const times: number[] = [];
    for (let i = 0; i < runs; i++) {
      const t1 = performance.now();
      await parse(p);
      times.push(performance.now() - t1);
    }
    console.log(`${hgMade} parse median ${median(times).toFixed(0)} ms`);
  }
}

await main();
