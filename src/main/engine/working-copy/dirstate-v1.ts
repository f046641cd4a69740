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

/**
 * A dirstate as columns, one row per entry: what status reads (20k entries make 20k strings and
 * one map, no object each). Copy sources by row; v2's nanoseconds where the format has them.
 */
export interface DirstateRows {
  p1: Uint8Array;
  p2: Uint8Array;
  /** latin1 byte strings */
  paths: string[];
  /** path → row; a path repeated in the file maps to its last row, as hg's dict keeps it */
  rows: Map<string, number>;
  /** DirstateState's character codes */
  states: Uint8Array;
  modes: Int32Array;
  sizes: Int32Array;
  mtimes: Int32Array;
  /** dirstate-v2 only: mtimeNs and mtimeSecondAmbiguous (1) by row */
  mtimeNs?: Int32Array;
  secondAmbiguous?: Uint8Array;
  copySources: Map<number, string>;
}

const STATE_CODES = new Set([...'narm'].map((c) => c.charCodeAt(0)));

/** parse_dirstate into rows. Any length is checked against what is left: a damaged file is MALFORMED. */
export function parseDirstateV1Rows(data: Uint8Array): DirstateRows {
  if (data.length === 0) return dirstateRows(emptyDirstate());
  if (data.length < HEADER) throw new SluiceError('MALFORMED', 'too little data for parents');
  const buf = Buffer.from(data.buffer, data.byteOffset, data.length);
  const view = new DataView(buf.buffer, buf.byteOffset, buf.length);
  // first pass: the entry count, every state and length checked, so the columns are sized once
  let count = 0;
  for (let pos = HEADER; pos < buf.length; count++) {
    if (pos + ENTRY_HEADER > buf.length)
      throw new SluiceError('MALFORMED', 'dirstate entry header truncated');
    const state = buf[pos]!;
    if (!STATE_CODES.has(state))
      throw new SluiceError(
        'MALFORMED',
        `unknown dirstate state ${JSON.stringify(String.fromCharCode(state))}`,
      );
    const len = view.getInt32(pos + 13);
    pos += ENTRY_HEADER;
    if (len < 0 || pos + len > buf.length)
      throw new SluiceError('MALFORMED', 'dirstate entry name truncated');
    pos += len;
  }
  const out = newRows(Uint8Array.from(buf.subarray(0, 20)), Uint8Array.from(buf.subarray(20, 40)), count);
  // one latin1 string of the whole file, names sliced from it: a slice is no copy and no call
  // into Buffer's C++ per entry
  const text = buf.toString('latin1');
  for (let pos = HEADER, i = 0; i < count; i++) {
    out.states[i] = buf[pos]!;
    out.modes[i] = view.getInt32(pos + 1);
    out.sizes[i] = view.getInt32(pos + 5);
    out.mtimes[i] = view.getInt32(pos + 9);
    const len = view.getInt32(pos + 13);
    pos += ENTRY_HEADER;
    const name = text.slice(pos, pos + len);
    pos += len;
    const nul = name.indexOf('\0');
    const path = nul < 0 ? name : name.slice(0, nul);
    if (nul >= 0) out.copySources.set(i, name.slice(nul + 1));
    out.paths[i] = path;
    out.rows.set(path, i);
  }
  return out;
}

function newRows(p1: Uint8Array, p2: Uint8Array, count: number): DirstateRows {
  return {
    p1,
    p2,
    paths: new Array<string>(count),
    rows: new Map(),
    states: new Uint8Array(count),
    modes: new Int32Array(count),
    sizes: new Int32Array(count),
    mtimes: new Int32Array(count),
    copySources: new Map(),
  };
}

/** The rows of a dirstate read as entries (dirstate-v2's reader). */
export function dirstateRows(ds: Dirstate): DirstateRows {
  const out = newRows(ds.p1, ds.p2, ds.entries.size);
  out.mtimeNs = new Int32Array(ds.entries.size);
  out.secondAmbiguous = new Uint8Array(ds.entries.size);
  let i = 0;
  for (const e of ds.entries.values()) {
    out.paths[i] = e.path;
    out.rows.set(e.path, i);
    out.states[i] = e.state.charCodeAt(0);
    out.modes[i] = e.mode;
    out.sizes[i] = e.size;
    out.mtimes[i] = e.mtime;
    out.mtimeNs[i] = e.mtimeNs ?? 0;
    out.secondAmbiguous[i] = e.mtimeSecondAmbiguous ? 1 : 0;
    if (e.copySource !== undefined) out.copySources.set(i, e.copySource);
    i++;
  }
  return out;
}

/** parse_dirstate: the rows as entries (what update and the writers work with). */
export function parseDirstateV1(data: Uint8Array): Dirstate {
  const rows = parseDirstateV1Rows(data);
  const ds: Dirstate = { p1: rows.p1, p2: rows.p2, entries: new Map() };
  for (let i = 0; i < rows.paths.length; i++) {
    const path = rows.paths[i]!;
    const entry: DirstateEntry = {
      path,
      state: String.fromCharCode(rows.states[i]!) as DirstateState,
      mode: rows.modes[i]!,
      size: rows.sizes[i]!,
      mtime: rows.mtimes[i]!,
    };
    const copySource = rows.copySources.get(i);
    if (copySource !== undefined) entry.copySource = copySource;
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
  return parseDirstateV1(readDirstateFile(path));
}

/** readDirstateV1 as rows (status). */
export function readDirstateV1Rows(path: string): DirstateRows {
  return parseDirstateV1Rows(readDirstateFile(path));
}

function readDirstateFile(path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return Buffer.alloc(0);
    throw e;
  }
}
