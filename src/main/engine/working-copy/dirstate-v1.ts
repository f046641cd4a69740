// `.hg/dirstate` in the dirstate-v1 format (hg 6.3.2 pure/parsers.py `pack_dirstate`,
// `parse_dirstate`, DirstateItem `_v1_*`): the two 20-byte parents, then per entry
// `>cllll` (state, mode, size, mtime, name length) and the name (`name\0copysource` for a copy).
// Written atomically (temp file + rename), as dirstate.write does through an atomictemp file.
import { readFileSync } from 'node:fs';
import { SluiceError } from '../errors';

/** v1 state: normal, added, removed, merged. */
export type DirstateState = 'n' | 'a' | 'r' | 'm';

export interface DirstateEntry {
  /** latin1 byte string */
  path: string;
  state: DirstateState;
  /** st_mode as hg stores it (0 when unknown) */
  mode: number;
  /** size; -1 (NONNORMAL) = look the file up, -2 (FROM_P2) */
  size: number;
  /** seconds & 0x7fffffff; -1 (AMBIGUOUS_TIME) = look the file up */
  mtime: number;
  /** dirstate-v2 only: the mtime's nanoseconds (0: none recorded) */
  mtimeNs?: number;
  /** dirstate-v2 only: MTIME_SECOND_AMBIGUOUS, the seconds alone cannot be trusted */
  mtimeSecondAmbiguous?: boolean;
  copySource?: string;
}

export interface Dirstate {
  /** 20-byte parents */
  p1: Uint8Array;
  p2: Uint8Array;
  entries: Map<string, DirstateEntry>;
}

export const AMBIGUOUS_TIME = -1;
export const NONNORMAL = -1;
/** timestamp.rangemask: dirstate mtimes are seconds modulo 2**31 */
export const RANGE_MASK = 0x7fffffff;
const HEADER = 40;
const ENTRY_HEADER = 17;

export function emptyDirstate(): Dirstate {
  return { p1: new Uint8Array(20), p2: new Uint8Array(20), entries: new Map() };
}

/** parse_dirstate. Any length is checked against what is left: a damaged file is MALFORMED. */
export function parseDirstateV1(data: Uint8Array): Dirstate {
  if (data.length === 0) return emptyDirstate();
  if (data.length < HEADER) throw new SluiceError('MALFORMED', 'too little data for parents');
  const buf = Buffer.from(data.buffer, data.byteOffset, data.length);
  const ds: Dirstate = {
    p1: Uint8Array.from(buf.subarray(0, 20)),
    p2: Uint8Array.from(buf.subarray(20, 40)),
    entries: new Map(),
  };
  let pos = HEADER;
  while (pos < buf.length) {
    if (pos + ENTRY_HEADER > buf.length)
      throw new SluiceError('MALFORMED', 'dirstate entry header truncated');
    const state = String.fromCharCode(buf[pos]!);
    if (state !== 'n' && state !== 'a' && state !== 'r' && state !== 'm')
      throw new SluiceError('MALFORMED', `unknown dirstate state ${JSON.stringify(state)}`);
    const mode = buf.readInt32BE(pos + 1);
    const size = buf.readInt32BE(pos + 5);
    const mtime = buf.readInt32BE(pos + 9);
    const len = buf.readInt32BE(pos + 13);
    pos += ENTRY_HEADER;
    if (len < 0 || pos + len > buf.length)
      throw new SluiceError('MALFORMED', 'dirstate entry name truncated');
    const name = buf.toString('latin1', pos, pos + len);
    pos += len;
    const nul = name.indexOf('\0');
    const path = nul < 0 ? name : name.slice(0, nul);
    const entry: DirstateEntry = { path, state, mode, size, mtime };
    if (nul >= 0) entry.copySource = name.slice(nul + 1);
    ds.entries.set(path, entry);
  }
  return ds;
}

/** pack_dirstate (entries sorted by name: hg's order is its dict's, any order reads the same). */
export function packDirstateV1(ds: Dirstate): Buffer {
  const entries = [...ds.entries.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  let total = HEADER;
  for (const e of entries)
    total += ENTRY_HEADER + e.path.length + (e.copySource !== undefined ? 1 + e.copySource.length : 0);
  const out = packHeader(total, ds.p1, ds.p2);
  let pos = HEADER;
  for (const e of entries) {
    const name = e.copySource !== undefined ? e.path + '\0' + e.copySource : e.path;
    pos = packEntry(out, pos, e.state.charCodeAt(0), e.mode, e.size, e.mtime, name);
  }
  return out;
}

/**
 * pack_dirstate for a working copy where every file is tracked and clean ('n', no copy source),
 * its rows as columns in path order: a checkout from null packs its 20k rows without an entry
 * object, a map or a sort each (the manifest's order is pack_dirstate's sorted order). The same
 * bytes as packDirstateV1 of those entries.
 */
export function packDirstateV1Clean(
  p1: Uint8Array,
  paths: readonly string[],
  modes: Int32Array,
  sizes: Int32Array,
  mtimes: Int32Array,
): Buffer {
  let total = HEADER;
  for (let i = 0; i < paths.length; i++) total += ENTRY_HEADER + paths[i]!.length;
  const out = packHeader(total, p1, new Uint8Array(20));
  let pos = HEADER;
  const n = 'n'.charCodeAt(0);
  for (let i = 0; i < paths.length; i++)
    pos = packEntry(out, pos, n, modes[i]!, sizes[i]!, mtimes[i]!, paths[i]!);
  return out;
}

function packHeader(total: number, p1: Uint8Array, p2: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(total);
  out.set(p1, 0);
  out.set(p2, 20);
  return out;
}

/** One `>cllll` entry and its name (latin1) at pos; returns the position after it. */
function packEntry(
  out: Buffer,
  pos: number,
  state: number,
  mode: number,
  size: number,
  mtime: number,
  name: string,
): number {
  // byte by byte: Buffer's writeInt32BE and write() allocated on every call (Node 24, ~150 bytes
  // per entry: 20k entries for a checkout of the medium corpus)
  out[pos] = state;
  putInt32BE(out, pos + 1, mode);
  putInt32BE(out, pos + 5, size);
  putInt32BE(out, pos + 9, mtime);
  putInt32BE(out, pos + 13, name.length);
  const at = pos + ENTRY_HEADER;
  for (let k = 0; k < name.length; k++) out[at + k] = name.charCodeAt(k); // a latin1 byte string
  return at + name.length;
}

/** v | 0 big-endian at pos (a Uint8Array store keeps the low 8 bits of each shift) */
function putInt32BE(out: Uint8Array, pos: number, v: number): void {
  v |= 0;
  out[pos] = v >>> 24;
  out[pos + 1] = v >>> 16;
  out[pos + 2] = v >>> 8;
  out[pos + 3] = v;
}

/** Reads `.hg/dirstate` (v1); a missing file is the null working copy. */
export function readDirstateV1(path: string): Dirstate {
  let data: Buffer;
  try {
    data = readFileSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return emptyDirstate();
    throw e;
  }
  return parseDirstateV1(data);
}
