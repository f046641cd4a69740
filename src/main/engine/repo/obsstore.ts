// Obsolescence markers a pull brings (bundle2 `obsmarkers` part, bundle2.handleobsmarker →
// obsstore.mergemarkers): appended to `.hg/store/obsstore` in hg's format 1 (obsolete.py
// `_fm1*`), only the markers the store does not hold yet, inside the pull's transaction, and only
// when the repository has obsolescence enabled (obsolete.isenabled: `experimental.evolution`).
//
// A format-1 marker: `>IdhHBBB` (size, date, tz in minutes, flags, successors, parents, metadata
// pairs), the predecessor (20 bytes, or 32 with the sha256 flag), the successors, the parents
// (count 3: none recorded), the metadata key/value lengths (`BB` each), then the keys and values.
// A decoded marker re-encodes to the same bytes, so markers are compared as byte strings.

import { closeSync, fstatSync, openSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { SluiceError } from '../errors';
import { HgConfig, parseBool, readRepoConfig } from '../store/hgrc';
import { readUserConfig } from '../wire/ssh-command';
import type { Transaction } from './transaction';

const FM1_VERSION = 1;
const FM1_FIXED = 19;
const FLAG_SHA256 = 32; // usingsha256
const PARENTS_NONE = 3;

function malformed(message: string): SluiceError {
  return new SluiceError('MALFORMED', `obsolescence markers: ${message}`);
}

/** obsolete._fm1readmarkers, reduced to each marker's bytes (checked to be self-consistent). */
export function splitMarkersV1(data: Uint8Array, offset: number): Buffer[] {
  const b = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const out: Buffer[] = [];
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
    out.push(b.subarray(at, at + size));
    at += size;
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
 * obsstore.mergemarkers: appends the markers of a part payload (version byte, then markers) that
 * `.hg/store/obsstore` lacks, journaled in `tx`; returns how many were new.
 */
export function mergeObsmarkers(storeDir: string, tx: Transaction, payload: Uint8Array): number {
  if (payload.length === 0) return 0;
  const version = payload[0]!;
  if (version !== FM1_VERSION)
    throw new SluiceError(
      'UNSUPPORTED_COMPRESSION',
      `obsolescence markers in format ${version} (Sluice reads format 1)`,
    );
  const incoming = splitMarkersV1(payload, 1);
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
  const known = new Set(existing.length ? splitMarkersV1(existing, 1).map((m) => m.toString('latin1')) : []);
  const fresh: Buffer[] = [];
  for (const m of incoming) {
    const key = m.toString('latin1');
    if (known.has(key)) continue;
    known.add(key);
    fresh.push(m);
  }
  if (!fresh.length) return 0;
  const fd = openSync(path, 'a');
  try {
    const offset = fstatSync(fd).size;
    tx.add('obsstore', offset);
    const data = Buffer.concat([offset === 0 ? Buffer.of(FM1_VERSION) : Buffer.alloc(0), ...fresh]);
    for (let done = 0; done < data.length;) done += writeSync(fd, data, done);
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
