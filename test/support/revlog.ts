// Test-only helpers for revlog/verify tests and the fuzz suite (not imported by engine code): the
// golden fixture repos, hg on PATH, and a small revlog WRITER for synthetic cases (chains of any
// length, inline or split, generaldelta or not, entries straddling read buffers, corruptions).
import { deflateSync } from 'node:zlib';
import { zstdCompressChunk } from '../../src/main/engine/codec/zstd';
import { tempDirMaker } from './env';
import {
  FLAG_GENERALDELTA,
  FLAG_INLINE_DATA,
  NULL_NODE,
  REVLOGV1,
} from '../../src/main/engine/revlog/constants';
import { revisionNode } from '../../src/main/engine/revlog/index';

export {
  FIXTURES,
  HG_PYTHON,
  SHAPES,
  extractFixture,
  extractFixtureRepo,
  missing,
  skipNote,
  hgSync as hg,
  prng,
  removeDir,
  type Shape,
} from './env';

export const makeTempDir = tempDirMaker('revlog');

export interface SyntheticRevision {
  text: Uint8Array | string;
  /** parent revs (default: previous revision, -1) */
  p1?: number;
  p2?: number;
  link?: number;
  flags?: number;
  /** delta base (generaldelta: any earlier rev; otherwise ignored). Default: a full text for rev 0, else p1/previous */
  base?: number;
  /** store this revision as a full text */
  full?: boolean;
}

export interface BuildOptions {
  inline?: boolean;
  generalDelta?: boolean;
  /**
   * chunk encoding: stored (`u`/raw NUL), zlib, zstd (call prepareZstd() first), or the smaller of
   * zlib and stored like hg (default 'auto')
   */
  compression?: 'none' | 'zlib' | 'zstd' | 'auto';
}

export interface BuiltRevlog {
  index: Buffer;
  /** NAME.d (empty for inline) */
  data: Buffer;
  nodes: Buffer[];
  texts: Buffer[];
}

const toBuf = (t: Uint8Array | string): Buffer =>
  typeof t === 'string' ? Buffer.from(t, 'latin1') : Buffer.from(t);

/** One-hunk delta: the common prefix and suffix kept, the middle replaced (a valid mpatch delta). */
export function simpleDelta(base: Uint8Array, target: Uint8Array): Buffer {
  let pre = 0;
  const max = Math.min(base.length, target.length);
  while (pre < max && base[pre] === target[pre]) pre++;
  let suf = 0;
  while (suf < max - pre && base[base.length - 1 - suf] === target[target.length - 1 - suf]) suf++;
  const head = Buffer.alloc(12);
  head.writeInt32BE(pre, 0);
  head.writeInt32BE(base.length - suf, 4);
  head.writeInt32BE(target.length - pre - suf, 8);
  return Buffer.concat([head, Buffer.from(target.subarray(pre, target.length - suf))]);
}

/** revlog.compress(): engine output when strictly smaller, else raw (`\0`-led kept, else `u`). */
export function encodeChunk(data: Uint8Array, compression: BuildOptions['compression'] = 'auto'): Buffer {
  const raw = Buffer.from(data);
  if (raw.length === 0) return raw;
  if (compression === 'zstd') return Buffer.from(zstdCompressChunk(raw, 3));
  if (compression !== 'none' && (compression === 'zlib' || raw.length >= 44)) {
    const z = deflateSync(raw);
    if (compression === 'zlib' || z.length < raw.length) return z;
  }
  return raw[0] === 0 ? raw : Buffer.concat([Buffer.from('u'), raw]);
}

/** Writes a v1 revlog holding `revs` (node ids computed like hg). */
export function buildRevlog(revs: readonly SyntheticRevision[], opts: BuildOptions = {}): BuiltRevlog {
  const inline = opts.inline ?? true;
  const gd = opts.generalDelta ?? false;
  const entries: Buffer[] = [];
  const chunks: Buffer[] = [];
  const nodes: Buffer[] = [];
  const texts: Buffer[] = [];
  let offset = 0;
  let chainBase = 0;
  revs.forEach((r, rev) => {
    const text = toBuf(r.text);
    texts.push(text);
    const p1 = r.p1 ?? rev - 1;
    const p2 = r.p2 ?? -1;
    const node = revisionNode(text, p1 >= 0 ? nodes[p1]! : NULL_NODE, p2 >= 0 ? nodes[p2]! : NULL_NODE);
    nodes.push(node);
    let base: number;
    let payload: Buffer;
    if (rev === 0 || r.full) {
      base = rev;
      chainBase = rev;
      payload = text;
    } else if (gd) {
      base = r.base ?? Math.max(0, p1);
      payload = simpleDelta(texts[base]!, text);
    } else {
      base = chainBase;
      payload = simpleDelta(texts[rev - 1]!, text);
    }
    const chunk = encodeChunk(payload, opts.compression);
    const e = Buffer.alloc(64);
    const hi = Math.floor(offset / 0x10000);
    e.writeUInt32BE(hi >>> 0, 0);
    e.writeUInt16BE(offset % 0x10000, 4);
    e.writeUInt16BE(r.flags ?? 0, 6);
    e.writeInt32BE(chunk.length, 8);
    e.writeInt32BE(text.length, 12);
    e.writeInt32BE(base, 16);
    e.writeInt32BE(r.link ?? rev, 20);
    e.writeInt32BE(p1, 24);
    e.writeInt32BE(p2, 28);
    node.copy(e, 32);
    if (rev === 0)
      e.writeUInt32BE((REVLOGV1 | (inline ? FLAG_INLINE_DATA : 0) | (gd ? FLAG_GENERALDELTA : 0)) >>> 0, 0);
    entries.push(e);
    chunks.push(chunk);
    offset += chunk.length;
  });
  if (inline) {
    const parts: Buffer[] = [];
    entries.forEach((e, i) => parts.push(e, chunks[i]!));
    return { index: Buffer.concat(parts), data: Buffer.alloc(0), nodes, texts };
  }
  return { index: Buffer.concat(entries), data: Buffer.concat(chunks), nodes, texts };
}

/** Offsets of each 64-byte entry inside an inline (or split) NAME.i. */
export function entryOffsets(index: Uint8Array): number[] {
  const out: number[] = [];
  if (index.length < 4) return out;
  const inline = (((index[0]! << 8) | index[1]!) & 1) !== 0;
  let pos = 0;
  while (pos + 64 <= index.length) {
    out.push(pos);
    const clen = Buffer.from(index.buffer, index.byteOffset, index.length).readInt32BE(pos + 8);
    pos += 64 + (inline ? clen : 0);
  }
  return out;
}
