// Branch heads for the `branchmap` command (wireprotov1server.branchmap, branchmap.branchcache):
// per named branch, the served revisions of that branch without a child on the same branch
// (closed heads included), heads ascending by rev, branches in order of first appearance.
//
// Branch names live in the changelog *texts* (extra `branch:NAME`), so this reads every revision
// of the changelog: a minimal revlog text reader (chunk decompression + mpatch deltas along the
// non-generaldelta chain the changelog always uses). Results are cached per snapshot. A
// changelog this reader cannot decode makes `branchmap` unavailable (not advertised) rather
// than wrong: hg's v1 client writes what it receives into its branch cache.

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import zlib from 'node:zlib';
import { SluiceError } from '../errors';
import { decompressStream } from '../format/compression';
import type { RepoSnapshot } from './repo-state';

const cache = new WeakMap<RepoSnapshot, Promise<Map<string, string[]> | null>>();

export function branchMapOf(snap: RepoSnapshot): Promise<Map<string, string[]> | null> {
  let p = cache.get(snap);
  if (!p) {
    p = computeBranchMap(snap).catch(() => null);
    cache.set(snap, p);
  }
  return p;
}

async function computeBranchMap(snap: RepoSnapshot): Promise<Map<string, string[]>> {
  const g = snap.graph;
  const branches = await readBranchNames(snap.storeDir, g.length);
  const byBranch = new Map<string, number[]>();
  for (let r = 0; r < g.length; r++) {
    if (!snap.visible(r)) continue;
    const b = branches[r]!;
    const list = byBranch.get(b);
    if (list) list.push(r);
    else byBranch.set(b, [r]);
  }
  const out = new Map<string, string[]>();
  const hasChildSameBranch = new Uint8Array(g.length);
  for (let r = 0; r < g.length; r++) {
    if (!snap.visible(r)) continue;
    for (const p of [g.p1[r]!, g.p2[r]!]) if (p >= 0 && branches[p] === branches[r]) hasChildSameBranch[p] = 1;
  }
  for (const [b, revs] of byBranch) out.set(b, revs.filter((r) => !hasChildSameBranch[r]).map((r) => snap.hex(r)));
  return out;
}

/** codecs.escape_decode as changelog._string_unescape uses it (after its `\0` handling). */
export function unescapeExtra(text: string): string {
  let s = text;
  if (s.includes('\\0')) s = s.replace(/\\\\/g, '\\\\\n').replace(/\\0/g, '\0').replace(/\n/g, '');
  return s.replace(/\\(x[0-9a-fA-F]{2}|[0-7]{1,3}|[\\'"abfnrtv]|\n)/g, (_m, e: string) => {
    if (e[0] === 'x') return String.fromCharCode(parseInt(e.slice(1), 16));
    if (/^[0-7]/.test(e)) return String.fromCharCode(parseInt(e, 8) & 0xff);
    const map: Record<string, string> = { '\\': '\\', "'": "'", '"': '"', a: '\x07', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v', '\n': '' };
    return map[e]!;
  });
}

/** The `branch` of a changelog text (latin1 bytes), `default` when absent. */
export function branchOfChangelogText(text: string): string {
  const lines = text.split('\n', 3);
  if (lines.length < 3) throw new SluiceError('REVLOG', 'changelog entry too short');
  const third = lines[2]!;
  // "<time> <tz>[ <extra>]": the extra starts after the second space
  const sp1 = third.indexOf(' ');
  const sp2 = sp1 < 0 ? -1 : third.indexOf(' ', sp1 + 1);
  if (sp2 < 0) return 'default';
  for (const item of third.slice(sp2 + 1).split('\0')) {
    if (!item) continue;
    const kv = unescapeExtra(item);
    const colon = kv.indexOf(':');
    if (colon > 0 && kv.slice(0, colon) === 'branch') return kv.slice(colon + 1);
  }
  return 'default';
}

async function decompressChunk(chunk: Buffer): Promise<Buffer> {
  if (chunk.length === 0) return chunk;
  const t = chunk[0]!;
  if (t === 0x75) return chunk.subarray(1); // 'u'
  if (t === 0) return chunk;
  if (t === 0x78) return zlib.inflateSync(chunk);
  if (t === 0x28) {
    const parts: Buffer[] = [];
    for await (const p of decompressStream('ZS', [chunk] as unknown as AsyncIterable<Uint8Array>)) parts.push(Buffer.from(p));
    return Buffer.concat(parts);
  }
  throw new SluiceError('REVLOG', `unknown compression type 0x${t.toString(16)} in changelog`);
}

/** mpatch: hunks `u32 start, u32 end, u32 len, data` against `base`. */
export function applyDelta(base: Buffer, delta: Buffer): Buffer {
  const out: Buffer[] = [];
  let pos = 0;
  let last = 0;
  while (pos < delta.length) {
    if (pos + 12 > delta.length) throw new SluiceError('REVLOG', 'patch cannot be decoded');
    const start = delta.readUInt32BE(pos);
    const end = delta.readUInt32BE(pos + 4);
    const len = delta.readUInt32BE(pos + 8);
    pos += 12;
    if (start < last || end < start || end > base.length || pos + len > delta.length) {
      throw new SluiceError('REVLOG', 'patch cannot be decoded');
    }
    out.push(base.subarray(last, start), delta.subarray(pos, pos + len));
    pos += len;
    last = end;
  }
  out.push(base.subarray(last));
  return Buffer.concat(out);
}

/** Branch name of every changelog revision. */
export async function readBranchNames(storeDir: string, expected: number): Promise<string[]> {
  const index = await readFile(join(storeDir, '00changelog.i')).catch(() => Buffer.alloc(0));
  if (index.length === 0) return [];
  const flags = index.readUInt32BE(0) >>> 16;
  const inline = (flags & 1) !== 0;
  const generalDelta = (flags & 2) !== 0;
  const data = inline ? index : await readFile(join(storeDir, '00changelog.d'));
  const out: string[] = [];
  let prevText: Buffer | null = null;
  let off = 0;
  for (let rev = 0; off < index.length; rev++) {
    const offset = rev === 0 ? 0 : Number(index.readBigUInt64BE(off) >> 16n);
    const compLen = index.readInt32BE(off + 8);
    const base = index.readInt32BE(off + 16);
    const start = inline ? offset + 64 * (rev + 1) : offset;
    if (start + compLen > data.length) throw new SluiceError('REVLOG', 'changelog data too short');
    const chunk = await decompressChunk(data.subarray(start, start + compLen));
    let text: Buffer;
    if (base === rev) text = chunk;
    else {
      // the changelog never uses generaldelta: a delta is against rev-1
      if (generalDelta && base !== rev - 1) throw new SluiceError('REVLOG', 'generaldelta changelog is not supported here');
      if (!prevText) throw new SluiceError('REVLOG', 'delta without base');
      text = applyDelta(prevText, chunk);
    }
    out.push(branchOfChangelogText(text.toString('latin1')));
    prevText = text;
    off += 64 + (inline ? compLen : 0);
  }
  if (out.length !== expected) throw new SluiceError('REVLOG', 'changelog changed while reading');
  return out;
}
