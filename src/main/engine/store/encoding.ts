// Store filename encodings, byte-exact with Mercurial 6.3.2 store.py (and its C twin,
// cext/pathencode.c, which is what hg actually runs for dotencode stores).
//
// Every name here is a byte string held in a latin1 JS string (one char = one byte).
//
// Which encoding a repository uses is decided by its requirements (localrepo.makestore):
//   store + fncache + dotencode -> encodeStorePath        (store._pathencode / C pathencode)
//   store + fncache             -> encodeStorePathPlain   (store._plainhybridencode)
//   store                       -> encodeFilename         (store.encodefilename, reversible)
//   (none)                      -> encodeDir              (basicstore: only encodedir)

import { createHash } from 'node:crypto';
import { join, sep } from 'node:path';
import { SluiceError } from '../errors.js';

/** store._maxstorepathlen: longer default-encoded paths are hashed into `dh/`. */
export const MAX_STORE_PATH_LENGTH = 120;
const DIR_PREFIX_LENGTH = 8; // store._dirprefixlen
const MAX_SHORT_DIRS_LENGTH = 8 * (DIR_PREFIX_LENGTH + 1) - 4; // store._maxshortdirslen = 68

// ---------------------------------------------------------------------------------------------
// encodedir / decodedir: keep a file `foo` and a directory `foo.i` (or `foo.d`, `foo.hg`) apart.

/** store.encodedir: `.hg/`→`.hg.hg/`, then `.i/`→`.i.hg/`, then `.d/`→`.d.hg/` (in this order). */
export function encodeDir(path: string): string {
  // Most paths contain none of the three; three native scans beat building a new string.
  if (path.indexOf('.hg/') < 0 && path.indexOf('.i/') < 0 && path.indexOf('.d/') < 0) return path;
  return path.replaceAll('.hg/', '.hg.hg/').replaceAll('.i/', '.i.hg/').replaceAll('.d/', '.d.hg/');
}

/** store.decodedir: the inverse, applied in the reverse order, only when `.hg/` occurs. */
export function decodeDir(path: string): string {
  if (path.indexOf('.hg/') < 0) return path;
  return path.replaceAll('.d.hg/', '.d/').replaceAll('.i.hg/', '.i/').replaceAll('.hg.hg/', '.hg/');
}

// ---------------------------------------------------------------------------------------------
// Per-byte tables (store._buildencodefun, store._buildlowerencodefun).

const HEX = '0123456789abcdef';
function escape3(code: number): string {
  return '~' + HEX[code >> 4] + HEX[code & 15];
}

/** store._reserved(): 0..31, 126..255 and the Windows specials `\ : * ? " < > |`. */
function isReservedByte(code: number): boolean {
  return code < 32 || code >= 126 || '\\:*?"<>|'.indexOf(String.fromCharCode(code)) >= 0;
}

/** _encodefname's cmap: `A`→`_a`, `_`→`__`, reserved → `~xx`, everything else unchanged. */
const DEFAULT_ENCODE: readonly string[] = Array.from({ length: 256 }, (_, code) => {
  if (code >= 0x41 && code <= 0x5a) return '_' + String.fromCharCode(code + 32);
  if (code === 0x5f) return '__';
  if (isReservedByte(code)) return escape3(code);
  return String.fromCharCode(code);
});

/** lowerencode's cmap: `A`→`a`, reserved → `~xx`, everything else (including `_`) unchanged. */
const LOWER_ENCODE: readonly string[] = Array.from({ length: 256 }, (_, code) => {
  if (code >= 0x41 && code <= 0x5a) return String.fromCharCode(code + 32);
  if (isReservedByte(code)) return escape3(code);
  return String.fromCharCode(code);
});

/** Bytes that _encodefname leaves alone (so a run of them can be copied as one slice). */
const DEFAULT_KEEPS: Uint8Array = Uint8Array.from(DEFAULT_ENCODE, (s, code) =>
  s.length === 1 && s.charCodeAt(0) === code ? 1 : 0,
);

const DOT = 0x2e;
const SPACE = 0x20;

function notByteString(path: string): SluiceError {
  return new SluiceError('UNSAFE_PATH', `store path is not a byte string: ${JSON.stringify(path)}`);
}

// ---------------------------------------------------------------------------------------------
// Windows reserved basenames (store._auxencode): aux con prn nul, com1-9 lpt1-9, compared on the
// part before the first '.', which is lower case by the time _auxencode sees it.

function isWindowsReservedStem(s: string, start: number, end: number): boolean {
  // Compared on char codes: this runs once per path segment of every file of a clone.
  const stemLength = end - start;
  if (stemLength < 3) return false;
  const c0 = s.charCodeAt(start);
  const c1 = s.charCodeAt(start + 1);
  const c2 = s.charCodeAt(start + 2);
  const c3 = stemLength > 3 ? s.charCodeAt(start + 3) : DOT;
  if (c3 === DOT) {
    // 3-byte stem: aux con prn nul
    return (
      (c0 === 0x61 && c1 === 0x75 && c2 === 0x78) || // aux
      (c0 === 0x63 && c1 === 0x6f && c2 === 0x6e) || // con
      (c0 === 0x70 && c1 === 0x72 && c2 === 0x6e) || // prn
      (c0 === 0x6e && c1 === 0x75 && c2 === 0x6c) // nul
    );
  }
  if (c3 < 0x31 || c3 > 0x39) return false;
  if (stemLength > 4 && s.charCodeAt(start + 4) !== DOT) return false;
  // 4-byte stem: com1-9 lpt1-9
  return (c0 === 0x63 && c1 === 0x6f && c2 === 0x6d) || (c0 === 0x6c && c1 === 0x70 && c2 === 0x74);
}

/**
 * store._auxencode applied to one already byte-encoded segment `seg` (lower case letters only).
 * Mirrors the Python exactly: an empty segment is left alone; a leading `.`/space is escaped
 * when dotencode, otherwise a reserved stem gets its third char escaped; then a trailing
 * `.`/space of the (possibly rewritten) segment is escaped.
 */
function auxEncodeSegment(seg: string, dotencode: boolean): string {
  if (seg.length === 0) return seg;
  let n = seg;
  const first = n.charCodeAt(0);
  if (dotencode && (first === DOT || first === SPACE)) {
    n = escape3(first) + n.slice(1);
  } else if (isWindowsReservedStem(n, 0, n.length)) {
    n = n.slice(0, 2) + escape3(n.charCodeAt(2)) + n.slice(3);
  }
  const last = n.charCodeAt(n.length - 1);
  if (last === DOT || last === SPACE) n = n.slice(0, -1) + escape3(last);
  return n;
}

// ---------------------------------------------------------------------------------------------
// The reversible ("default") encoding: _encodefname + _auxencode per segment, one pass.

/**
 * `'/'.join(_auxencode(_encodefname(de).split('/'), dotencode))` for an already dir-encoded
 * path `de`. Runs of unchanged bytes are copied as slices; only the bytes that change cost a
 * concatenation, so the common short ASCII path allocates one or two strings.
 */
function defaultEncode(de: string, dotencode: boolean): string {
  let out = '';
  let copied = 0; // de[copied..i) is pending, unchanged
  const length = de.length;
  let segStart = 0;
  while (segStart <= length) {
    let segEnd = de.indexOf('/', segStart);
    if (segEnd < 0) segEnd = length;
    if (segEnd > segStart) {
      // Positions whose output differs from the plain table lookup (segment rules).
      const first = de.charCodeAt(segStart);
      let special1 = -1; // leading '.'/' ' (dotencode) or reserved third char
      if (dotencode && (first === DOT || first === SPACE)) special1 = segStart;
      else if (isWindowsReservedStem(de, segStart, segEnd)) special1 = segStart + 2;
      const lastIndex = segEnd - 1;
      const last = de.charCodeAt(lastIndex);
      // A one-byte segment whose leading '.'/' ' was escaped no longer ends in '.'/' '.
      const escapeLast =
        (last === DOT || last === SPACE) && !(special1 === segStart && lastIndex === segStart);
      for (let i = segStart; i < segEnd; i++) {
        const code = de.charCodeAt(i);
        if (i === special1 || (escapeLast && i === lastIndex)) {
          out += de.slice(copied, i) + escape3(code);
          copied = i + 1;
        } else if (DEFAULT_KEEPS[code] !== 1) {
          if (code > 0xff) throw notByteString(de);
          out += de.slice(copied, i) + DEFAULT_ENCODE[code];
          copied = i + 1;
        }
      }
    }
    segStart = segEnd + 1;
  }
  return copied === 0 ? de : out + de.slice(copied);
}

// ---------------------------------------------------------------------------------------------
// The hashed encoding (store._hashencode / pathencode.c hashencode+hashmangle). Irreversible.

function lowerEncode(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const code = s.charCodeAt(i);
    if (code > 0xff) throw notByteString(s);
    out += LOWER_ENCODE[code];
  }
  return out;
}

/** os.path.splitext(basename)[1] for a name without '/': leading dots do not start an extension. */
function extensionOf(basename: string): string {
  const dot = basename.lastIndexOf('.');
  if (dot <= 0) return '';
  for (let i = 0; i < dot; i++) if (basename.charCodeAt(i) !== DOT) return basename.slice(dot);
  return '';
}

/**
 * store._hashencode(de, dotencode) for a dir-encoded path `de` (`data/…` or `meta/…`):
 * `dh/` + up to 68 bytes of 8-byte directory prefixes + basename filler + sha1(de) + ext,
 * at most 120 bytes when the basename is long enough to fill it.
 */
function hashEncode(de: string, dotencode: boolean): string {
  const digest = createHash('sha1').update(Buffer.from(de, 'latin1')).digest('hex');
  const parts = lowerEncode(de.slice(5)).split('/'); // skips 'data/' or 'meta/'
  for (let i = 0; i < parts.length; i++) parts[i] = auxEncodeSegment(parts[i]!, dotencode);
  const basename = parts[parts.length - 1]!;
  const ext = extensionOf(basename);
  let dirs = '';
  for (let i = 0; i < parts.length - 1; i++) {
    let d = parts[i]!.slice(0, DIR_PREFIX_LENGTH);
    // Windows cannot open directories ending in '.' or ' ' (a truncation can create one).
    const last = d.charCodeAt(d.length - 1);
    if (last === DOT || last === SPACE) d = d.slice(0, -1) + '_';
    if (dirs.length > 0 && dirs.length + 1 + d.length > MAX_SHORT_DIRS_LENGTH) break;
    dirs = dirs.length > 0 ? dirs + '/' + d : d;
  }
  if (dirs.length > 0) dirs += '/';
  const spaceLeft = MAX_STORE_PATH_LENGTH - (3 + dirs.length + digest.length + ext.length);
  const filler = spaceLeft > 0 ? basename.slice(0, spaceLeft) : '';
  return 'dh/' + dirs + filler + digest + ext;
}

// ---------------------------------------------------------------------------------------------
// Public encoders.

/**
 * The on-disk name of store path `path` in a fncache+dotencode store (the default since hg 1.7):
 * store._pathencode, i.e. C `pathencode`. Called once per file of a clone: keep it lean.
 */
export function encodeStorePath(path: string): string {
  const de = encodeDir(path);
  // _pathencode: a raw path already over the limit is hashed without trying the default form.
  if (path.length > MAX_STORE_PATH_LENGTH) return hashEncode(de, true);
  const res = defaultEncode(de, true);
  return res.length > MAX_STORE_PATH_LENGTH ? hashEncode(de, true) : res;
}

/** The on-disk name in a fncache store without dotencode: store._hybridencode(path, False). */
export function encodeStorePathPlain(path: string): string {
  const de = encodeDir(path);
  const res = defaultEncode(de, false);
  return res.length > MAX_STORE_PATH_LENGTH ? hashEncode(de, false) : res;
}

/** store.encodefilename (plain `store` repos without fncache): reversible, no aux/dot rules. */
export function encodeFilename(path: string): string {
  const de = encodeDir(path);
  let out = '';
  let copied = 0;
  for (let i = 0; i < de.length; i++) {
    const code = de.charCodeAt(i);
    if (DEFAULT_KEEPS[code] !== 1) {
      if (code > 0xff) throw notByteString(path);
      out += de.slice(copied, i) + DEFAULT_ENCODE[code];
      copied = i + 1;
    }
  }
  return copied === 0 ? de : out + de.slice(copied);
}

const DEFAULT_DECODE: ReadonlyMap<string, string> = new Map(
  DEFAULT_ENCODE.map((encoded, code) => [encoded, String.fromCharCode(code)] as const),
);

/**
 * store.decodefilename: inverse of encodeFilename, used only to walk plain `store` repos (their
 * encoding is reversible; fncache stores are never walked this way). Returns null where hg would
 * raise "undecodable revlog name".
 */
export function decodeFilename(encoded: string): string | null {
  let out = '';
  let i = 0;
  while (i < encoded.length) {
    let decoded: string | undefined;
    let width = 1;
    for (; width <= 3; width++) {
      decoded = DEFAULT_DECODE.get(encoded.slice(i, i + width));
      if (decoded !== undefined) break;
    }
    if (decoded === undefined) return null;
    out += decoded;
    i += width;
  }
  return decodeDir(out);
}

export type StorePathEncoder = (path: string) => string;

/** The encoder hg's store vfs uses for a repository with these requirements (localrepo.makestore). */
export function storePathEncoder(requirements: ReadonlySet<string>): StorePathEncoder {
  if (requirements.has('store')) {
    if (requirements.has('fncache')) {
      return requirements.has('dotencode') ? encodeStorePath : encodeStorePathPlain;
    }
    return encodeFilename;
  }
  return encodeDir;
}

/**
 * Absolute path of a store file from its latin1 byte-string name (`data/foo.i`), encoded as the
 * store vfs does; the bytes of a non-ASCII name are taken as UTF-8 on disk.
 */
export function storeFilePath(storeDir: string, encode: StorePathEncoder, name: string): string {
  const enc = encode(name);
  let rel = enc;
  for (let i = 0; i < enc.length; i++) {
    if (enc.charCodeAt(i) >= 0x80) {
      rel = Buffer.from(enc, 'latin1').toString('utf8');
      break;
    }
  }
  return sep === '/' ? storeDir + '/' + rel : join(storeDir, rel);
}
