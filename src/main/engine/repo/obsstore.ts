// Obsolescence markers a pull brings (bundle2 `obsmarkers` part, bundle2.handleobsmarker →
// obsstore.mergemarkers): appended to `.hg/store/obsstore` in hg's format 1 (obsolete.py
// `_fm1*`), only the markers the store does not hold yet, inside the pull's transaction, and only
// when the repository has obsolescence enabled (obsolete.isenabled: `experimental.evolution`).
//
// A format-1 marker: `>IdhHBBB` (size, date, tz in minutes, flags, successors, parents, metadata
// pairs), the predecessor (20 bytes, or 32 with the sha256 flag), the successors, the parents
// (count 3: none recorded), the metadata key/value lengths (`BB` each), then the keys and values.
// A decoded marker re-encodes to the same bytes, so markers are compared as byte strings.

import { closeSync, fstatSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { SluiceError } from '../errors';
import { HgConfig, parseBool, readRepoConfig } from '../store/hgrc';
import { readUserConfig } from '../store/hgrc';
import type { Transaction } from './transaction';
import { openForUpdate } from './vfs';

const FM0_VERSION = 0;
/** `>BIB20s`: successors, metadata size, flags, predecessor */
const FM0_FIXED = 26;
const FM1_VERSION = 1;
const FM1_FIXED = 19;
const FLAG_SHA256 = 32; // usingsha256
const PARENTS_NONE = 3;

function malformed(message: string): SluiceError {
  return new SluiceError('MALFORMED', `obsolescence markers: ${message}`);
}

/**
 * Format-1 markers back to back (an obsstore after its version byte), and where each ends: a
 * million markers are two arrays, not a million Buffer objects.
 */
export interface MarkerBlock {
  data: Buffer;
  ends: number[];
}

/** obsolete._fm1readmarkers, reduced to each marker's bytes (checked to be self-consistent). */
export function splitMarkersV1(data: Uint8Array, offset: number): Buffer[] {
  const b = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  let at = offset;
  return markerEndsV1(b, offset).map((end) => b.subarray(at, (at = end)));
}

/** The end offset of each format-1 marker in `b` from `offset` (splitMarkersV1's checks). */
function markerEndsV1(b: Buffer, offset: number): number[] {
  const out: number[] = [];
  let at = offset;
  while (at < b.length) {
    if (b.length - at < FM1_FIXED) throw malformed('truncated marker header');
    const size = b.readUInt32BE(at);
    if (size < FM1_FIXED || size > b.length - at) throw malformed(`marker of ${size} bytes at ${at}`);
    const flags = b.readUInt16BE(at + 14);
    const nodeLen = flags & FLAG_SHA256 ? 32 : 20;
    const numSuc = b[at + 16]!;
    const numPar = b[at + 17]!;
    const numMeta = b[at + 18]!;
    if (numPar > PARENTS_NONE) throw malformed(`${numPar} parents`);
    const nodes = 1 + numSuc + (numPar === PARENTS_NONE ? 0 : numPar);
    const metaAt = at + FM1_FIXED + nodes * nodeLen;
    let need = metaAt + 2 * numMeta - at;
    if (need > size) throw malformed(`marker at ${at} shorter than its fields`);
    for (let i = 0; i < numMeta; i++) need += b[metaAt + 2 * i]! + b[metaAt + 2 * i + 1]!;
    if (need !== size) throw malformed(`marker at ${at}: ${size} bytes announced, ${need} used`);
    at += size;
    out.push(at);
  }
  return out;
}

/**
 * obsolete.isenabled(repo, createmarkersopt / exchangeopt): `experimental.evolution.<option>`,
 * else `experimental.evolution` as a boolean, else as a list (`all`, or naming the option).
 */
export async function obsolescenceEnabled(
  repoRoot: string,
  option: 'createmarkers' | 'exchange',
): Promise<boolean> {
  const user = readUserConfig();
  const repo = await readRepoConfig(repoRoot).catch(() => new HgConfig());
  const get = (key: string): string | undefined =>
    repo.get('experimental', key) ?? user.get('experimental', key);
  const value = (opt: string): boolean => {
    const own = get(`evolution.${opt}`);
    if (own !== undefined) return parseBool(own) ?? false;
    const generic = get('evolution');
    if (generic === undefined) return false;
    const b = parseBool(generic);
    if (b !== null) return b;
    const list = new Set(generic.split(/[,\s]+/).filter(Boolean));
    if (get('evolution.createmarkers')) list.add('createmarkers');
    return list.has('all') || list.has(opt);
  };
  // isenabled: the other options need createmarkers
  return value(option) && value('createmarkers');
}

/**
 * obsolete._readmarkers: the markers of a payload (version byte, then markers) as format-1 bytes,
 * what obsstore.add writes for them: format 1 taken as it is, format 0 (an old server's, or the
 * `obsolete` listkeys dumps) decoded and re-encoded as hg does.
 */
export function readMarkersAsV1(payload: Uint8Array): MarkerBlock {
  // _readmarkerversion of an empty payload: a struct.error in hg
  if (payload.length === 0) throw malformed('empty marker data (no version byte)');
  const b = Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
  const version = b[0]!;
  if (version === FM0_VERSION) return readMarkersV0(b, 1);
  if (version !== FM1_VERSION) throw malformed(`parsing obsolete marker: unknown version ${version}`);
  const data = b.subarray(1);
  return { data, ends: markerEndsV1(data, 0) };
}

/**
 * obsstore.mergemarkers: appends the markers of a part payload (version byte, then markers) that
 * `.hg/store/obsstore` lacks, journaled in `tx`; returns how many were new.
 */
export function mergeObsmarkers(storeDir: string, tx: Transaction, payload: Uint8Array): number {
  if (payload.length === 0) return 0;
  return addMarkersV1(storeDir, tx, readMarkersAsV1(payload));
}

/** FNV-1a of b[start, end): markers are told apart by it first, by their bytes when it matches. */
function fnv1a(b: Buffer, start: number, end: number): number {
  let h = 0x811c9dc5;
  for (let i = start; i < end; i++) h = Math.imul(h ^ b[i]!, 0x01000193);
  return h >>> 0;
}

/**
 * obsstore.add: appends the format-1 markers `.hg/store/obsstore` lacks (hg compares the decoded
 * tuples; a marker's format-1 bytes are a function of its tuple), journaled in `tx` (null: a new
 * repository not yet in place, whose files need no journal).
 */
export function addMarkersV1(storeDir: string, tx: Transaction | null, incoming: MarkerBlock): number {
  if (!incoming.ends.length) return 0;
  const path = join(storeDir, 'obsstore');
  let existing: Buffer = Buffer.alloc(0);
  try {
    existing = readFileSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  if (existing.length && existing[0] !== FM1_VERSION)
    throw new SluiceError(
      'UNSUPPORTED_REQUIREMENTS',
      `the repository's obsstore is in format ${existing[0]} (Sluice writes format 1)`,
    );
  // every marker, the store's then the incoming ones, in an open-addressing table by hash
  const known = existing.length ? markerEndsV1(existing, 1) : [];
  const nEx = known.length;
  const n = nEx + incoming.ends.length;
  const buf = (i: number): Buffer => (i < nEx ? existing : incoming.data);
  const start = (i: number): number =>
    i < nEx ? (i ? known[i - 1]! : 1) : i > nEx ? incoming.ends[i - nEx - 1]! : 0;
  const end = (i: number): number => (i < nEx ? known[i]! : incoming.ends[i - nEx]!);
  let cap = 16;
  while (cap < 2 * n) cap *= 2;
  const table = new Int32Array(cap).fill(-1);
  const hashes = new Uint32Array(n);
  const fresh: number[] = [];
  let freshBytes = 0;
  for (let i = 0; i < n; i++) {
    const b = buf(i);
    const s = start(i);
    const e = end(i);
    const h = fnv1a(b, s, e);
    hashes[i] = h;
    let slot = h & (cap - 1);
    let dup = false;
    for (let k = table[slot]!; k >= 0; slot = (slot + 1) & (cap - 1), k = table[slot]!) {
      if (hashes[k] === h && end(k) - start(k) === e - s && b.compare(buf(k), start(k), end(k), s, e) === 0) {
        dup = true;
        break;
      }
    }
    if (dup) continue;
    table[slot] = i;
    if (i >= nEx) {
      fresh.push(i);
      freshBytes += e - s;
    }
  }
  if (!fresh.length) return 0;
  // vfs(b'obsstore', b'ab'): a store hard-linked with a clone's source is copied first
  const fd = openForUpdate(path);
  try {
    const offset = fstatSync(fd).size;
    tx?.add('obsstore', offset);
    const data = Buffer.allocUnsafe((offset === 0 ? 1 : 0) + freshBytes);
    let at = 0;
    if (offset === 0) data[at++] = FM1_VERSION;
    for (const i of fresh) at += incoming.data.copy(data, at, start(i), end(i));
    for (let done = 0; done < data.length;)
      done += writeSync(fd, data, done, data.length - done, offset + done);
  } finally {
    closeSync(fd);
  }
  return fresh.length;
}

/** A format-1 marker decoded (obsolete._fm1readmarkers); nodes as 20- or 32-byte latin1 strings. */
export interface ObsMarker {
  /** the marker's bytes in the obsstore (what encodemarkers writes again) */
  bytes: Buffer;
  prec: string;
  succs: string[];
  flags: number;
  /** (key, value) pairs, in the stored (sorted) order */
  meta: [string, string][];
  date: number;
  /** offset in minutes, as stored */
  tz: number;
  /** null: no parents recorded */
  parents: string[] | null;
}

/** Decodes one marker that splitMarkersV1 has checked. */
export function decodeMarkerV1(m: Buffer): ObsMarker {
  const flags = m.readUInt16BE(14);
  const nodeLen = flags & FLAG_SHA256 ? 32 : 20;
  const numSuc = m[16]!;
  const numPar = m[17]!;
  const numMeta = m[18]!;
  let at = FM1_FIXED;
  const node = (): string => m.toString('latin1', at, (at += nodeLen));
  const prec = node();
  const succs = Array.from({ length: numSuc }, node);
  const parents = numPar === PARENTS_NONE ? null : Array.from({ length: numPar }, node);
  const lens = m.subarray(at, (at += 2 * numMeta));
  const meta: [string, string][] = [];
  for (let i = 0; i < numMeta; i++) {
    const k = m.toString('latin1', at, (at += lens[2 * i]!));
    const v = m.toString('latin1', at, (at += lens[2 * i + 1]!));
    meta.push([k, v]);
  }
  return { bytes: m, prec, succs, flags, meta, date: m.readDoubleBE(4), tz: m.readInt16BE(12), parents };
}

/** The markers of an obsstore file (its version byte, then format-1 markers). */
export function readObsstoreV1(data: Buffer): ObsMarker[] {
  if (data.length <= 1) return [];
  if (data[0] !== FM1_VERSION)
    throw new SluiceError(
      'UNSUPPORTED_REQUIREMENTS',
      `the repository's obsstore is in format ${data[0]} (Sluice reads format 1)`,
    );
  return splitMarkersV1(data, 1).map(decodeMarkerV1);
}

const cmpStr = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
function cmpList<T>(a: readonly T[], b: readonly T[], cmp: (x: T, y: T) => number): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const c = cmp(a[i]!, b[i]!);
    if (c) return c;
  }
  return a.length - b.length;
}

/** obsutil.sortedmarkers: by (prec, succs, flags, metadata, date, parents or ()), as Python tuples. */
export function sortMarkers(markers: ObsMarker[]): ObsMarker[] {
  return [...markers].sort(
    (a, b) =>
      cmpStr(a.prec, b.prec) ||
      cmpList(a.succs, b.succs, cmpStr) ||
      a.flags - b.flags ||
      cmpList(a.meta, b.meta, (x, y) => cmpStr(x[0], y[0]) || cmpStr(x[1], y[1])) ||
      a.date - b.date ||
      a.tz - b.tz ||
      cmpList(a.parents ?? [], b.parents ?? [], cmpStr),
  );
}

/**
 * obsstore.relevantmarkers: the markers naming one of `nodes` as a successor, the prunes of them
 * and of their children, then the same for those markers' predecessors, transitively.
 */
export function relevantMarkers(markers: readonly ObsMarker[], nodes: Iterable<string>): ObsMarker[] {
  const bySucc = new Map<string, ObsMarker[]>();
  const byPrec = new Map<string, ObsMarker[]>();
  const byParent = new Map<string, ObsMarker[]>();
  const add = (map: Map<string, ObsMarker[]>, key: string, m: ObsMarker): void => {
    const list = map.get(key);
    if (list) list.push(m);
    else map.set(key, [m]);
  };
  for (const m of markers) {
    for (const s of m.succs) add(bySucc, s, m);
    add(byPrec, m.prec, m);
    for (const p of m.parents ?? []) add(byParent, p, m);
  }
  const seen = new Set<ObsMarker>();
  const seenNodes = new Set(nodes);
  let pending = [...seenNodes];
  while (pending.length) {
    const direct = new Set<ObsMarker>();
    for (const n of pending) {
      for (const m of bySucc.get(n) ?? []) direct.add(m);
      for (const m of byParent.get(n) ?? []) if (!m.succs.length) direct.add(m);
      for (const m of byPrec.get(n) ?? []) if (!m.succs.length) direct.add(m);
    }
    pending = [];
    for (const m of direct) {
      if (seen.has(m)) continue;
      seen.add(m);
      if (!seenNodes.has(m.prec)) {
        seenNodes.add(m.prec);
        pending.push(m.prec);
      }
    }
  }
  return [...seen];
}

/** obsolete.encodemarkers(markers, addheader=True, version=1): the part payload of `obsmarkers`. */
export function encodeMarkersV1(markers: readonly ObsMarker[]): Buffer {
  return Buffer.concat([Buffer.of(FM1_VERSION), ...markers.map((m) => m.bytes)]);
}

/** Python's repr of a float as `b'%r'` writes it (2000000.0, 1764650000.25). */
function floatRepr(x: number): string {
  if (Number.isInteger(x) && Math.abs(x) < 1e16) return `${x}.0`;
  return String(x);
}

/** obsolete._fm0encodeonemarker: format 0, its date and parents moved into the metadata. */
function encodeMarkerV0(m: ObsMarker): Buffer {
  if (m.flags & FLAG_SHA256)
    throw new SluiceError('UNSUPPORTED_REQUIREMENTS', 'cannot handle sha256 with old obsstore format');
  const meta = new Map(m.meta);
  meta.set('date', `${floatRepr(m.date)} ${m.tz * 60}`);
  if (m.parents !== null) {
    if (!m.parents.length) meta.set('p0', '');
    m.parents.forEach((p, i) => meta.set(`p${i + 1}`, Buffer.from(p, 'latin1').toString('hex')));
  }
  // _fm0encodemeta: sorted keys, `key:value` joined by NUL
  const text = Buffer.from(
    [...meta.keys()]
      .sort(cmpStr)
      .map((k) => `${k}:${meta.get(k)!}`)
      .join('\0'),
    'latin1',
  );
  const head = Buffer.alloc(26);
  head[0] = m.succs.length;
  head.writeUInt32BE(text.length, 1);
  head[5] = m.flags & 0xff;
  Buffer.from(m.prec, 'latin1').copy(head, 6);
  return Buffer.concat([head, ...m.succs.map((s) => Buffer.from(s, 'latin1')), text]);
}

const B85 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~';

/** mercurial's base85.b85encode(text, pad=False) */
export function b85encode(data: Buffer): string {
  const padded = Buffer.concat([data, Buffer.alloc((4 - (data.length % 4)) % 4)]);
  let out = '';
  for (let i = 0; i < padded.length; i += 4) {
    let w = padded.readUInt32BE(i);
    const five: string[] = [];
    for (let j = 0; j < 5; j++) {
      five.unshift(B85[w % 85]!);
      w = Math.floor(w / 85);
    }
    out += five.join('');
  }
  const rem = data.length % 4;
  return out.slice(0, Math.floor(data.length / 4) * 5 + (rem ? rem + 1 : 0));
}

/**
 * obsolete.listmarkers / _pushkeyescape: the `obsolete` listkeys namespace (what a client pulls
 * markers through when the server does not offer the bundle2 part): every marker, sorted, in
 * format 0, cut into parts of at most 5300 bytes, `dump<i>` numbered from the last part.
 */
export function listkeysObsolete(markers: readonly ObsMarker[]): [string, string][] {
  const parts: Buffer[][] = [];
  let current: Buffer[] = [];
  let len = 5300 * 2;
  for (const m of sortMarkers([...markers])) {
    const data = encodeMarkerV0(m);
    if (data.length + len > 5300) {
      current = [];
      len = 0;
      parts.push(current);
    }
    current.push(data);
    len += data.length;
  }
  return parts.reverse().map((p, i) => [`dump${i}`, b85encode(Buffer.concat([Buffer.of(0), ...p]))]);
}

const B85_DEC = (() => {
  const t = new Int16Array(256).fill(-1);
  for (let i = 0; i < B85.length; i++) t[B85.charCodeAt(i)] = i;
  return t;
})();

/**
 * mercurial's base85.b85decode (the C one hg runs: a last partial group is padded as if it went on
 * with the last digit and wraps modulo 2^32; a last group of one character decodes to nothing).
 */
export function b85decode(text: string): Buffer {
  const l = text.length;
  const out = Buffer.alloc(Math.floor(l / 5) * 4 + Math.max((l % 5) - 1, 0));
  let o = 0;
  for (let i = 0; i < l; i += 5) {
    const end = Math.min(i + 5, l);
    let acc = 0;
    for (let j = i; j < end; j++) {
      const c = text.charCodeAt(j);
      const d = c < 256 ? B85_DEC[c]! : -1;
      if (d < 0) throw malformed(`bad base85 character at position ${j}`);
      acc = acc * 85 + d;
    }
    const cl = end - i;
    if (cl === 5) {
      if (acc > 0xffffffff) throw malformed(`bad base85 sequence at position ${end}`);
      out.writeUInt32BE(acc, o);
      o += 4;
    } else if (cl > 1) {
      acc = (acc * 85 ** (5 - cl) + (0xffffff >>> ((cl - 2) * 8))) % 2 ** 32;
      for (let k = 0; k < cl - 1; k++) out[o++] = (acc >>> (24 - 8 * k)) & 0xff;
    }
  }
  return out;
}

const WS = /^[ \t\n\r\v\f]+|[ \t\n\r\v\f]+$/g;
const PY_INT = /^[+-]?\d(?:_?\d)*$/;
const PY_FLOAT = /^[+-]?(?:\d(?:_?\d)*(?:\.(?:\d(?:_?\d)*)?)?|\.\d(?:_?\d)*)(?:[eE][+-]?\d(?:_?\d)*)?$/;

/** Python's float() of a byte string, undefined where it raises ValueError. */
function pyFloat(s: string): number | undefined {
  const t = s.replace(WS, '');
  const special = /^([+-]?)(inf|infinity|nan)$/i.exec(t);
  if (special) return special[2]!.toLowerCase() === 'nan' ? NaN : special[1] === '-' ? -Infinity : Infinity;
  return PY_FLOAT.test(t) ? Number(t.replace(/_/g, '')) : undefined;
}

/** Python's int() of a byte string, undefined where it raises ValueError. */
function pyInt(s: string): number | undefined {
  const t = s.replace(WS, '');
  return PY_INT.test(t) ? Number(t.replace(/_/g, '')) : undefined;
}

/** node.bin of a parent's hex, null where _fm0readmarkers drops the parents (not hex, not 20 bytes). */
function parentNode(hex: string): Buffer | null {
  return /^[0-9a-fA-F]{40}$/.test(hex) ? Buffer.from(hex, 'hex') : null;
}

/** obsolete._fm1encodeonemarker; the bounds its struct.pack enforces are MALFORMED here. */
function encodeMarkerV1(
  prec: Buffer,
  succs: readonly Buffer[],
  flags: number,
  meta: readonly [string, string][],
  date: number,
  tzSeconds: number,
  parents: readonly Buffer[] | null,
): Buffer {
  const nodeLen = flags & FLAG_SHA256 ? 32 : 20;
  const tz = Math.floor(tzSeconds / 60);
  if (!(tz >= -0x8000 && tz <= 0x7fff)) throw malformed(`timezone offset ${tzSeconds} out of range`);
  if (meta.length > 255) throw malformed(`${meta.length} metadata entries in one marker`);
  const nodes = [prec, ...succs, ...(parents ?? [])];
  let size = FM1_FIXED + nodes.length * nodeLen + 2 * meta.length;
  const kv = meta.map(([k, v]) => [Buffer.from(k, 'latin1'), Buffer.from(v, 'latin1')] as const);
  for (const [k, v] of kv) {
    if (k.length > 255 || v.length > 255)
      throw malformed(
        `metadata entry longer than 255 bytes (key ${JSON.stringify(k.toString('latin1').slice(0, 40))})`,
      );
    size += k.length + v.length;
  }
  const m = Buffer.alloc(size); // zeros: a 20-byte node under the sha256 flag is padded as '32s' pads
  m.writeUInt32BE(size, 0);
  m.writeDoubleBE(date, 4);
  m.writeInt16BE(tz, 12);
  m.writeUInt16BE(flags, 14);
  m[16] = succs.length;
  m[17] = parents === null ? PARENTS_NONE : parents.length;
  m[18] = meta.length;
  let at = FM1_FIXED;
  for (const n of nodes) {
    n.copy(m, at, 0, Math.min(n.length, nodeLen));
    at += nodeLen;
  }
  for (const [k, v] of kv) {
    m[at++] = k.length;
    m[at++] = v.length;
  }
  for (const [k, v] of kv) at += k.copy(m, at) + v.copy(m, at + k.length);
  return m;
}

/**
 * obsolete._fm0readmarkers, each marker re-encoded in format 1 as obsstore.add writes it: the
 * date and parents come out of the metadata (`date`, `p1`/`p2`; a `p0` marks "no parents" and
 * stays in the metadata, as hg leaves it), the rest sorted by key.
 */
export function readMarkersV0(data: Uint8Array, offset: number): MarkerBlock {
  const b = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const out = new MarkerBlockWriter();
  let at = offset;
  while (at < b.length) {
    if (b.length - at < FM0_FIXED) throw malformed(`truncated format-0 marker at ${at}`);
    const numSuc = b[at]!;
    const mdSize = b.readUInt32BE(at + 1);
    const flags = b[at + 5]!;
    const prec = b.subarray(at + 6, at + FM0_FIXED);
    at += FM0_FIXED;
    if (b.length - at < 20 * numSuc) throw malformed(`format-0 marker: ${numSuc} successors past the end`);
    const succs: Buffer[] = [];
    for (let i = 0; i < numSuc; i++, at += 20) succs.push(b.subarray(at, at + 20));
    if (mdSize > b.length - at)
      throw malformed(`metadata is too short, ${mdSize} bytes expected, got ${b.length - at}`);
    const meta = new Map<string, string>();
    for (const entry of b.toString('latin1', at, (at += mdSize)).split('\0')) {
      if (!entry) continue;
      const colon = entry.indexOf(':');
      if (colon < 0) throw malformed(`metadata entry without ':' (${JSON.stringify(entry.slice(0, 40))})`);
      meta.set(entry.slice(0, colon), entry.slice(colon + 1));
    }
    let date = 0;
    let tz = 0;
    const when = (meta.get('date') ?? '0 0').split(' ');
    meta.delete('date');
    const secs = when.length === 2 ? pyFloat(when[0]!) : undefined;
    const offs = when.length === 2 ? pyInt(when[1]!) : undefined;
    if (secs !== undefined && offs !== undefined) [date, tz] = [secs, offs];
    let hexes: (string | undefined)[] | null = null;
    if (meta.has('p2')) hexes = [meta.get('p1'), meta.get('p2')];
    else if (meta.has('p1')) hexes = [meta.get('p1')];
    else if (meta.has('p0')) hexes = [];
    if (hexes?.length) {
      meta.delete('p1');
      meta.delete('p2');
    }
    // a p2 without p1: hg's bin(None) raises
    if (hexes?.includes(undefined)) throw malformed('marker metadata has p2 without p1');
    const nodes = hexes?.map((h) => parentNode(h!));
    const parents = nodes?.every((n) => n !== null) ? (nodes as Buffer[]) : null;
    const sorted = [...meta].sort((x, y) => cmpStr(x[0], y[0]));
    out.push(encodeMarkerV1(prec, succs, flags, sorted, date, tz, parents));
  }
  return out.finish();
}

/** A MarkerBlock made of markers one at a time (gathered in 1 MiB pieces, joined once). */
class MarkerBlockWriter {
  private pieces: Buffer[] = [];
  private current: Buffer[] = [];
  private currentBytes = 0;
  private size = 0;
  private readonly ends: number[] = [];

  push(marker: Buffer): void {
    this.current.push(marker);
    this.currentBytes += marker.length;
    this.size += marker.length;
    this.ends.push(this.size);
    if (this.currentBytes >= 1 << 20) this.flush();
  }

  /** another block's markers after these */
  append(block: MarkerBlock): void {
    this.flush();
    this.pieces.push(block.data);
    for (const end of block.ends) this.ends.push(this.size + end);
    this.size += block.data.length;
  }

  finish(): MarkerBlock {
    this.flush();
    return { data: Buffer.concat(this.pieces, this.size), ends: this.ends };
  }

  private flush(): void {
    if (!this.current.length) return;
    this.pieces.push(Buffer.concat(this.current, this.currentBytes));
    this.current = [];
    this.currentBytes = 0;
  }
}

/**
 * exchange._pullobsolete: the markers of the `obsolete` listkeys namespace (`dump0`..`dumpN`,
 * base85 of a version byte and markers), as format-1 bytes in the order hg adds them (the keys
 * sorted in reverse); undefined when there is no `dump0` (hg then adds nothing).
 */
export function markersFromListkeys(keys: ReadonlyMap<string, string>): MarkerBlock | undefined {
  if (!keys.has('dump0')) return undefined;
  const out = new MarkerBlockWriter();
  for (const key of [...keys.keys()].sort(cmpStr).reverse()) {
    if (key.startsWith('dump')) out.append(readMarkersAsV1(b85decode(keys.get(key)!)));
  }
  return out.finish();
}
