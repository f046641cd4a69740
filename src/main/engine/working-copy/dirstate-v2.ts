// `.hg/dirstate` in the dirstate-v2 format (helptext/internals/dirstate-v2.txt, hg 6.3.2
// dirstateutils/v2.py and docket.py), for repositories that require `dirstate-v2`: a docket
// (`dirstate-v2\n`, parents padded to 32 bytes, 44 bytes of tree metadata, the data size and the
// data file's id) and a data file `.hg/dirstate.<id>` holding a tree of 44-byte nodes, each
// directory's children contiguous and sorted by base name. Entries are the v1 model
// (dirstate.ts); v2 flags are derived from it as DirstateItem.v2_data does.
import { randomBytes } from 'node:crypto';
import { readFileSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { writeAtomic } from '../repo/vfs';
import { SluiceError } from '../errors';
import { AMBIGUOUS_TIME, emptyDirstate, type Dirstate, type DirstateEntry } from './dirstate-v1';

const MARKER = Buffer.from('dirstate-v2\n', 'latin1');
const DOCKET_HEADER = 125;
const NODE_SIZE = 44;

const WDIR_TRACKED = 1 << 0;
const P1_TRACKED = 1 << 1;
const P2_INFO = 1 << 2;
const MODE_EXEC_PERM = 1 << 3;
const MODE_IS_SYMLINK = 1 << 4;
const HAS_MODE_AND_SIZE = 1 << 10;
const HAS_MTIME = 1 << 11;
const MTIME_SECOND_AMBIGUOUS = 1 << 12;
const DIRECTORY = 1 << 13;

interface TreeDir {
  name: string;
  path: string;
  dirs: Map<string, TreeDir>;
  files: Map<string, DirstateEntry>;
}

/** DirstateItem.v2_data for an entry in the v1 model. */
function v2Data(e: DirstateEntry): { flags: number; size: number; mtime: number; mtimeNs: number } {
  let flags = 0;
  if (e.state === 'n' || e.state === 'a' || e.state === 'm') flags |= WDIR_TRACKED;
  if (e.state === 'n' || e.state === 'r' || e.state === 'm') flags |= P1_TRACKED;
  if (e.state === 'm' || e.size === -2) flags |= P2_INFO;
  let size = 0;
  if (e.state === 'n' && e.size >= 0 && e.mode !== 0) {
    flags |= HAS_MODE_AND_SIZE;
    if (e.mode & 0o100) flags |= MODE_EXEC_PERM;
    if ((e.mode & 0o170000) === 0o120000) flags |= MODE_IS_SYMLINK;
    size = e.size;
  }
  let mtime = 0;
  let mtimeNs = 0;
  if (e.state === 'n' && e.size >= 0 && e.mtime !== AMBIGUOUS_TIME) {
    flags |= HAS_MTIME;
    mtime = e.mtime;
    mtimeNs = e.mtimeNs ?? 0;
    if (e.mtimeSecondAmbiguous) flags |= MTIME_SECOND_AMBIGUOUS;
  }
  return { flags, size, mtime, mtimeNs };
}

function cmpBytes(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0; // latin1 strings compare as their bytes
}

/** dirstateutils/v2.pack_dirstate: (data file, tree metadata). */
export function packDirstateV2(ds: Dirstate): { data: Buffer; treeMetadata: Buffer } {
  const root: TreeDir = { name: '', path: '', dirs: new Map(), files: new Map() };
  let copies = 0;
  for (const e of ds.entries.values()) {
    if (e.copySource !== undefined) copies++;
    const parts = e.path.split('/');
    let dir = root;
    for (let i = 0; i < parts.length - 1; i++) {
      let next = dir.dirs.get(parts[i]!);
      if (!next) {
        next = {
          name: parts[i]!,
          path: dir.path ? dir.path + '/' + parts[i]! : parts[i]!,
          dirs: new Map(),
          files: new Map(),
        };
        dir.dirs.set(parts[i]!, next);
      }
      dir = next;
    }
    dir.files.set(parts[parts.length - 1]!, e);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  const append = (b: Buffer): number => {
    const at = size;
    chunks.push(b);
    size += b.length;
    return at;
  };
  /** Writes dir's subtree; returns its children's offset, count and descendant counters. */
  const writeDir = (dir: TreeDir): { offset: number; count: number; withEntry: number; tracked: number } => {
    const names = [...new Set([...dir.dirs.keys(), ...dir.files.keys()])].sort(cmpBytes);
    const nodes = Buffer.alloc(NODE_SIZE * names.length);
    let withEntry = 0;
    let tracked = 0;
    names.forEach((name, i) => {
      const o = i * NODE_SIZE;
      const sub = dir.dirs.get(name);
      const file = dir.files.get(name);
      if (sub && file) throw new SluiceError('MALFORMED', `dirstate: ${file.path} is a file and a directory`);
      const path = sub ? sub.path : file!.path;
      const pathAt = append(Buffer.from(path, 'latin1'));
      nodes.writeUInt32BE(pathAt, o);
      nodes.writeUInt16BE(path.length, o + 4);
      nodes.writeUInt16BE(path.lastIndexOf('/') + 1, o + 6);
      if (file?.copySource !== undefined) {
        nodes.writeUInt32BE(append(Buffer.from(file.copySource, 'latin1')), o + 8);
        nodes.writeUInt16BE(file.copySource.length, o + 12);
      }
      if (sub) {
        const c = writeDir(sub);
        nodes.writeUInt32BE(c.offset, o + 14);
        nodes.writeUInt32BE(c.count, o + 18);
        nodes.writeUInt32BE(c.withEntry, o + 22);
        nodes.writeUInt32BE(c.tracked, o + 26);
        nodes.writeUInt16BE(DIRECTORY, o + 30);
        withEntry += c.withEntry;
        tracked += c.tracked;
      } else {
        const d = v2Data(file!);
        nodes.writeUInt16BE(d.flags, o + 30);
        nodes.writeInt32BE(d.size, o + 32);
        nodes.writeInt32BE(d.mtime, o + 36);
        nodes.writeUInt32BE(d.mtimeNs, o + 40);
        withEntry++;
        if (d.flags & WDIR_TRACKED) tracked++;
      }
    });
    return { offset: append(nodes), count: names.length, withEntry, tracked };
  };
  const top = ds.entries.size > 0 ? writeDir(root) : { offset: 0, count: 0, withEntry: 0, tracked: 0 };
  const meta = Buffer.alloc(44);
  meta.writeUInt32BE(top.offset, 0);
  meta.writeUInt32BE(top.count, 4);
  meta.writeUInt32BE(ds.entries.size, 8);
  meta.writeUInt32BE(copies, 12);
  return { data: Buffer.concat(chunks, size), treeMetadata: meta };
}

function docketBytes(ds: Dirstate, treeMetadata: Buffer, dataSize: number, uid: string): Buffer {
  const out = Buffer.alloc(DOCKET_HEADER + uid.length);
  MARKER.copy(out, 0);
  out.set(ds.p1.subarray(0, 20), 12);
  out.set(ds.p2.subarray(0, 20), 44);
  treeMetadata.copy(out, 76);
  out.writeUInt32BE(dataSize, 120);
  out.writeUInt8(uid.length, 124);
  out.write(uid, DOCKET_HEADER, 'latin1');
  return out;
}

interface Docket {
  p1: Uint8Array;
  p2: Uint8Array;
  treeMetadata: Buffer;
  dataSize: number;
  uid: string;
}

function parseDocket(data: Buffer): Docket | null {
  if (data.length === 0) return null;
  if (data.length < DOCKET_HEADER || !data.subarray(0, 12).equals(MARKER))
    throw new SluiceError('MALFORMED', 'dirstate-v2 docket: bad marker or truncated');
  const uidLen = data[124]!;
  if (data.length < DOCKET_HEADER + uidLen)
    throw new SluiceError('MALFORMED', 'dirstate-v2 docket: truncated id');
  const uid = data.toString('latin1', DOCKET_HEADER, DOCKET_HEADER + uidLen);
  if (!/^[0-9a-zA-Z]*$/.test(uid)) throw new SluiceError('MALFORMED', 'dirstate-v2 docket: bad data file id');
  return {
    p1: Uint8Array.from(data.subarray(12, 32)),
    p2: Uint8Array.from(data.subarray(44, 64)),
    treeMetadata: data.subarray(76, 120),
    dataSize: data.readUInt32BE(120),
    uid,
  };
}

/** Reads a dirstate-v2 working copy into the v1 model (what status and update need). */
export function readDirstateV2(hgDir: string): Dirstate {
  let raw: Buffer;
  try {
    raw = readFileSync(join(hgDir, 'dirstate'));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return emptyDirstate();
    throw e;
  }
  const docket = parseDocket(raw);
  if (!docket) return emptyDirstate();
  const ds: Dirstate = { p1: docket.p1, p2: docket.p2, entries: new Map() };
  const rootCount = docket.treeMetadata.readUInt32BE(4);
  if (rootCount === 0) return ds;
  const data = readFileSync(join(hgDir, `dirstate.${docket.uid}`)).subarray(0, docket.dataSize);
  const str = (at: number, len: number): string => {
    if (at + len > data.length) throw new SluiceError('MALFORMED', 'dirstate-v2: path beyond the data');
    return data.toString('latin1', at, at + len);
  };
  let budget = data.length / NODE_SIZE + 1; // every node is visited once: a cycle cannot loop
  const walk = (offset: number, count: number): void => {
    if (offset + count * NODE_SIZE > data.length)
      throw new SluiceError('MALFORMED', 'dirstate-v2: nodes beyond the data');
    for (let i = 0; i < count; i++) {
      if (--budget < 0) throw new SluiceError('MALFORMED', 'dirstate-v2: node tree loops');
      const o = offset + i * NODE_SIZE;
      const flags = data.readUInt16BE(o + 30);
      const path = str(data.readUInt32BE(o), data.readUInt16BE(o + 4));
      const tracked = flags & (WDIR_TRACKED | P1_TRACKED | P2_INFO);
      if (tracked) {
        const wc = flags & WDIR_TRACKED;
        const p1 = flags & P1_TRACKED;
        const p2 = flags & P2_INFO;
        const state = !wc ? 'r' : p1 && p2 ? 'm' : !p1 && !p2 ? 'a' : 'n';
        const hasMode = flags & HAS_MODE_AND_SIZE;
        const mode = hasMode
          ? (flags & MODE_IS_SYMLINK ? 0o120000 : 0o100000) | (flags & MODE_EXEC_PERM ? 0o755 : 0o644)
          : 0;
        const entry: DirstateEntry = {
          path,
          state,
          mode,
          size: p2 && state === 'n' ? -2 : hasMode ? data.readInt32BE(o + 32) : -1,
          mtime: flags & HAS_MTIME ? data.readInt32BE(o + 36) : AMBIGUOUS_TIME,
        };
        if (flags & HAS_MTIME) {
          const ns = data.readUInt32BE(o + 40);
          if (ns) entry.mtimeNs = ns;
          if (flags & MTIME_SECOND_AMBIGUOUS) entry.mtimeSecondAmbiguous = true;
        }
        const copyLen = data.readUInt16BE(o + 12);
        if (copyLen) entry.copySource = str(data.readUInt32BE(o + 8), copyLen);
        ds.entries.set(path, entry);
      }
      const children = data.readUInt32BE(o + 18);
      if (children) walk(data.readUInt32BE(o + 14), children);
    }
  };
  walk(docket.treeMetadata.readUInt32BE(0), rootCount);
  return ds;
}

/** dirstatemap.write_v2_no_append: a new data file, then the docket (atomic), then the old data file goes. */
export function writeDirstateV2(hgDir: string, ds: Dirstate): void {
  let old: Docket | null = null;
  try {
    old = parseDocket(readFileSync(join(hgDir, 'dirstate')));
  } catch {
    old = null;
  }
  const { data, treeMetadata } = packDirstateV2(ds);
  const uid = randomBytes(8).toString('hex');
  writeAtomic(join(hgDir, `dirstate.${uid}`), data);
  writeAtomic(join(hgDir, 'dirstate'), docketBytes(ds, treeMetadata, data.length, uid));
  if (old?.uid) {
    try {
      unlinkSync(join(hgDir, `dirstate.${old.uid}`));
    } catch {
      // already gone
    }
  }
}
