// Test-only helpers shared by the store tests (not imported by engine code): finding hg and its
// Python, running Mercurial's own functions over a batch of byte strings, temp dirs, fixtures.

import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { HG_PYTHON, removeDir, tempDirMaker } from './env';

export { FIXTURES, HG_PYTHON, extractFixtureRepo, missing, prng, removeDir, skipNote } from './env';

/** Runs `python` (a script reading hex lines on stdin) with hg's Python; returns stdout lines. */
export function runHgPython(script: string, input: string[]): string[] {
  const res = spawnSync(HG_PYTHON, ['-c', script], {
    input: input.join('\n') + (input.length ? '\n' : ''),
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
    env: { ...process.env, HGPLAIN: '1' },
  });
  if (res.status !== 0) throw new Error(`hg python failed: ${res.stderr}`);
  return res.stdout.split('\n').filter((l) => l.length > 0);
}

/** Runs hg with HGPLAIN and a fixed user; throws with stderr on a non-zero exit unless allowed. */
export function hg(
  args: string[],
  opts: { cwd?: string; allowFail?: boolean } = {},
): { status: number; stdout: string; stderr: string } {
  const res = spawnSync('hg', args, {
    cwd: opts.cwd,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    env: { ...process.env, HGPLAIN: '1', HGUSER: 'Test <test@example.com>', HGRCPATH: '' },
  });
  const out = { status: res.status ?? -1, stdout: res.stdout ?? '', stderr: res.stderr ?? '' };
  if (out.status !== 0 && !opts.allowFail)
    throw new Error(`hg ${args.join(' ')} failed (${out.status}): ${out.stderr}`);
  return out;
}

export const makeTempDir = tempDirMaker('store');

/**
 * A temp dir for a whole test file (made before its first test, removed after its last) handing
 * out new names in it: `path(label)` a name nothing has taken, `dir(label)` one made a directory.
 */
export function scratchArea(area: string): { path(label: string): string; dir(label: string): string } {
  let root = '';
  let n = 0;
  beforeAll(() => {
    root = makeTempDir(area);
  });
  afterAll(() => removeDir(root));
  const path = (label: string): string => join(root, `${label}-${n++}`);
  return {
    path,
    dir(label) {
      const d = path(label);
      mkdirSync(d, { recursive: true });
      return d;
    },
  };
}

export const hex = (s: string): string => Buffer.from(s, 'latin1').toString('hex');
export const unhex = (h: string): string => Buffer.from(h, 'hex').toString('latin1');

// ---------------------------------------------------------------------------------------------
// Tiny readers for the committed hg-made fixture streams (the FORMAT helper owns the real
// parsers; these only list entries so the store tests can compare against hg's own output).

export interface FixtureEntry {
  vfs: 's' | 'c';
  name: string;
  size: number;
}

function readV1Entries(buf: Buffer, start: number, count: number): FixtureEntry[] {
  const entries: FixtureEntry[] = [];
  let pos = start;
  for (let i = 0; i < count; i++) {
    const nl = buf.indexOf(0x0a, pos);
    const line = buf.subarray(pos, nl).toString('latin1');
    const nul = line.indexOf('\0');
    const size = Number(line.slice(nul + 1));
    entries.push({ vfs: 's', name: line.slice(0, nul), size });
    pos = nl + 1 + size;
  }
  if (pos !== buf.length) throw new Error(`fixture v1 stream: ${buf.length - pos} trailing bytes`);
  return entries;
}

/** Entries of a `stream_out` body (names as sent: encodedir'd). */
export function readStreamOutFixture(buf: Buffer): { entries: FixtureEntry[]; bytes: number } {
  const l1 = buf.indexOf(0x0a);
  if (buf.subarray(0, l1).toString() !== '0') throw new Error('fixture stream_out: bad status');
  const l2 = buf.indexOf(0x0a, l1 + 1);
  const [files, bytes] = buf
    .subarray(l1 + 1, l2)
    .toString()
    .split(' ')
    .map(Number) as [number, number];
  return { entries: readV1Entries(buf, l2 + 1, files), bytes };
}

/** Entries and requirements of a packed1 (HGS1) bundle (names as sent: encodedir'd). */
export function readPacked1Fixture(buf: Buffer): {
  entries: FixtureEntry[];
  bytes: number;
  requirements: string[];
} {
  if (buf.subarray(0, 6).toString() !== 'HGS1UN') throw new Error('fixture packed1: bad magic');
  const files = Number(buf.readBigUInt64BE(6));
  const bytes = Number(buf.readBigUInt64BE(14));
  const reqLength = buf.readUInt16BE(22);
  const requirements = buf
    .subarray(24, 24 + reqLength - 1)
    .toString('latin1')
    .split(',');
  return { entries: readV1Entries(buf, 24 + reqLength, files), bytes, requirements };
}

/** Entries of the stream2 part of an uncompressed HG20 stream bundle (names raw). */
export function readStreamV2Fixture(buf: Buffer): {
  entries: FixtureEntry[];
  bytes: number;
  requirements: string[];
} {
  if (buf.subarray(0, 4).toString() !== 'HG20') throw new Error('fixture v2: bad magic');
  let pos = 8 + buf.readInt32BE(4);
  const headerSize = buf.readInt32BE(pos);
  pos += 4;
  const header = buf.subarray(pos, pos + headerSize);
  pos += headerSize;
  const typeLength = header[0]!;
  if (
    header
      .subarray(1, 1 + typeLength)
      .toString()
      .toLowerCase() !== 'stream2'
  )
    throw new Error('fixture v2: not stream2');
  let h = 1 + typeLength + 4;
  const paramCount = header[h]! + header[h + 1]!;
  h += 2;
  const sizes = [...header.subarray(h, h + 2 * paramCount)];
  h += 2 * paramCount;
  const params = new Map<string, string>();
  for (let i = 0; i < paramCount; i++) {
    const k = header.subarray(h, h + sizes[2 * i]!).toString('latin1');
    h += sizes[2 * i]!;
    const v = header.subarray(h, h + sizes[2 * i + 1]!).toString('latin1');
    h += sizes[2 * i + 1]!;
    params.set(k, v);
  }
  const chunks: Buffer[] = [];
  for (;;) {
    const size = buf.readInt32BE(pos);
    pos += 4;
    if (size === 0) break;
    chunks.push(buf.subarray(pos, pos + size));
    pos += size;
  }
  const payload = Buffer.concat(chunks);
  let p = 0;
  const uvarint = (): number => {
    let result = 0;
    let shift = 0;
    for (;;) {
      const b = payload[p++]!;
      result += (b & 0x7f) * 2 ** shift;
      if (!(b & 0x80)) return result;
      shift += 7;
    }
  };
  const entries: FixtureEntry[] = [];
  const count = Number(params.get('filecount'));
  for (let i = 0; i < count; i++) {
    const vfs = String.fromCharCode(payload[p++]!) as 's' | 'c';
    const nameLength = uvarint();
    const size = uvarint();
    const name = payload.subarray(p, p + nameLength).toString('latin1');
    p += nameLength + size;
    entries.push({ vfs, name, size });
  }
  if (p !== payload.length) throw new Error('fixture v2: trailing payload');
  const requirements = decodeURIComponent(params.get('requirements') ?? '')
    .split(',')
    .filter(Boolean);
  return { entries, bytes: Number(params.get('bytecount')), requirements };
}
