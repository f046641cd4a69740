// Test-only helpers of the format and generate tests (not imported by engine code).

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { isSluiceError, type ErrorCode } from '../../src/main/engine/errors';
import { fixture, tempDirMaker, type Shape } from './env';
import { ByteSource } from '../../src/main/engine/format/byte-source';
import type { StreamReader } from '../../src/main/engine/format/stream-reader';

export {
  FIXTURES,
  SHAPES,
  chunked,
  extractFixture,
  extractFixtureRepo,
  fixture,
  missing,
  removeDir,
  skipNote,
  type Shape,
} from './env';

/** Runs hg with a clean environment; throws with stderr on failure. */
export function hg(args: string[], cwd?: string): string {
  const res = spawnSync('hg', args, {
    cwd,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    env: {
      ...process.env,
      HGPLAIN: '1',
      HGUSER: 'Test <test@example.com>',
      HGRCPATH: '/dev/null',
      TZ: 'UTC',
    },
  });
  if (res.status !== 0) throw new Error(`hg ${args.join(' ')} failed (${res.status}): ${res.stderr}`);
  return res.stdout;
}

export const makeTempDir = tempDirMaker('format');

/** Splits `buf` at the given offsets (sorted or not, duplicates allowed). */
export function splitAt(buf: Uint8Array, cuts: number[]): Uint8Array[] {
  const points = [...new Set(cuts.map((c) => Math.max(0, Math.min(buf.length, c))))].sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let prev = 0;
  for (const p of [...points, buf.length]) {
    out.push(buf.subarray(prev, p));
    prev = p;
  }
  return out;
}

export interface ParsedEntry {
  vfs: 's' | 'c';
  name: string;
  size: number;
  md5: string;
}

/** Reads every entry and hashes its data (the reader is closed at the end). */
export async function readAll(reader: StreamReader): Promise<ParsedEntry[]> {
  const entries: ParsedEntry[] = [];
  try {
    for (;;) {
      const e = await reader.nextEntry();
      if (!e) break;
      const h = createHash('md5');
      let got = 0;
      await reader.copyData((c) => {
        got += c.length;
        h.update(c);
      });
      if (got !== e.size) throw new Error(`copyData gave ${got} bytes for ${e.name} (${e.size})`);
      entries.push({ vfs: e.vfs, name: e.name, size: e.size, md5: h.digest('hex') });
    }
  } finally {
    await reader.close();
  }
  return entries;
}

/** store.md5 of a fixture: on-disk store path (`./data/...`) → md5. */
export function storeMd5(shape: Shape): Map<string, string> {
  const map = new Map<string, string>();
  for (const line of fixture(shape, 'store.md5').toString('latin1').split('\n')) {
    if (!line) continue;
    const md5 = line.slice(0, 32);
    const path = line.slice(34).replace(/^\.\//, '');
    map.set(path, md5);
  }
  return map;
}

/** The code of the SluiceError `fn` rejects with; fails the test on success or on another error type. */
export async function errorCode(fn: () => Promise<unknown>): Promise<ErrorCode> {
  try {
    await fn();
  } catch (e) {
    if (isSluiceError(e)) return e.code;
    throw new Error(`expected a SluiceError, got ${String(e)}${e instanceof Error ? '\n' + e.stack : ''}`);
  }
  throw new Error('expected a SluiceError, but the call succeeded');
}

export function source(...chunks: Uint8Array[]): ByteSource {
  return new ByteSource(chunks);
}

/**
 * Walks the zstd frames of `data` (RFC 8878 §3.1.1) and returns their count; throws if the data
 * does not end exactly at a frame boundary. Used to prove a ZS bundle core is ONE frame.
 */
export function countZstdFrames(data: Uint8Array): number {
  let at = 0;
  let frames = 0;
  const need = (n: number): void => {
    if (at + n > data.length) throw new Error(`zstd frame cut at ${at}`);
  };
  while (at < data.length) {
    need(5);
    const magic = (data[at]! | (data[at + 1]! << 8) | (data[at + 2]! << 16) | (data[at + 3]! << 24)) >>> 0;
    if (magic !== 0xfd2fb528) throw new Error(`no zstd magic at ${at}`);
    const fhd = data[at + 4]!;
    at += 5;
    const fcsFlag = fhd >> 6;
    const singleSegment = (fhd >> 5) & 1;
    const checksum = (fhd >> 2) & 1;
    const dictFlag = fhd & 3;
    const fcsSize = [singleSegment ? 1 : 0, 2, 4, 8][fcsFlag]!;
    at += (singleSegment ? 0 : 1) + [0, 1, 2, 4][dictFlag]! + fcsSize;
    for (;;) {
      need(3);
      const bh = data[at]! | (data[at + 1]! << 8) | (data[at + 2]! << 16);
      at += 3;
      const last = bh & 1;
      const type = (bh >> 1) & 3;
      const size = bh >>> 3;
      at += type === 1 ? 1 : size;
      need(0);
      if (last) break;
    }
    if (checksum) at += 4;
    need(0);
    frames++;
  }
  return frames;
}
