// The floor a checkout written in Node meets on this machine: a minimal loop doing only each
// file's unavoidable work, without Sluice's revlog reader, plan, progress or dirstate. Per inline
// filelog of REPO's store: open, read whole and close the .i file; decode its first revision's
// chunk (zstd through the engine's kept decoder, zlib, or stored as is); SHA-1 the 40 parent bytes
// and the text; create the file exclusively under OUT, write it, fstat it, close it. The first
// revision needs no delta chain, so this is a lower bound for a checkout of tip.
// Prints {"files", "bytes", "ms", "cpuMs", "faults"} for the loop alone (start-up and the store
// listing excluded). With `--part K/N` it takes every file whose index is K mod N, so N processes
// run side by side show what two cores give two independent writers (no shared heap or thread).
// Manual measurement (README, Checkout): node --import tsx scripts/bench/checkout-floor.ts REPO OUT [--part K/N]
import { closeSync, fstatSync, mkdirSync, openSync, readSync, writeSync } from 'node:fs';
import { hash } from 'node:crypto';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { inflateSync } from 'node:zlib';
import { zstdDecompress } from '../../src/main/engine/codec/zstd';
import { locateRepository } from '../../src/main/engine/store/requirements';
import { walkStore } from '../../src/main/engine/store/walk';

const [repo, out] = [process.argv[2]!, process.argv[3]!];
const part = /^(\d+)\/(\d+)$/.exec(process.argv[5] ?? '0/1')!;
const [k, n] = [Number(part[1]), Number(part[2])];
const loc = await locateRepository(repo);
const files = (await walkStore(loc))
  .filter((f) => f.name.startsWith('data/') && f.name.endsWith('.i'))
  .map((f) => f.path)
  .filter((_, i) => i % n === k);
const DIRS = 256;
mkdirSync(out, { recursive: true });
for (let d = 0; d < DIRS; d++) mkdirSync(join(out, String(d)), { recursive: true });

const scratch = Buffer.allocUnsafe(4 << 20);
const hashed = Buffer.alloc(40 + (4 << 20));
const t0 = performance.now();
const cpu0 = process.cpuUsage();
const faults0 = process.resourceUsage().minorPageFault;
let count = 0;
let bytes = 0;
for (let i = 0; i < files.length; i++) {
  const fd = openSync(files[i]!, 'r');
  const got = readSync(fd, scratch, 0, scratch.length, 0);
  closeSync(fd);
  // inline revlogs only (the .d ones are few and large): rev 0's chunk follows its 64-byte entry
  if (got < 64 || !(scratch[1]! & 1) || got === scratch.length) continue;
  const raw = scratch.subarray(64, 64 + scratch.readInt32BE(8));
  const size = scratch.readInt32BE(12);
  const text =
    raw[0] === 0x28
      ? zstdDecompress(raw, size)
      : raw[0] === 0x78
        ? inflateSync(raw)
        : raw[0] === 0x75
          ? raw.subarray(1)
          : raw;
  hashed.set(text, 40);
  hash('sha1', hashed.subarray(0, 40 + text.length), 'binary');
  const w = openSync(join(out, String(i % DIRS), String(i)), 'wx', 0o666);
  for (let off = 0; off < text.length;) off += writeSync(w, text, off, text.length - off);
  bytes += fstatSync(w).size;
  closeSync(w);
  count++;
}
const cpu = process.cpuUsage(cpu0);
console.log(
  JSON.stringify({
    files: count,
    bytes,
    ms: Math.round(performance.now() - t0),
    cpuMs: Math.round((cpu.user + cpu.system) / 1000),
    faults: process.resourceUsage().minorPageFault - faults0,
  }),
);
