// The texts stored in the three kinds of revlogs (hg-stream-formats.md §8.5): changelog entries
// (changelog.py `changelogrevision`), manifests (manifest.py `_lazymanifest` / C `find_lines`) and
// filelog copy metadata (utils/storageutil.py `parsemeta`). Names stay byte strings (latin1).
import { SluiceError } from '../errors';

function malformed(message: string): SluiceError {
  return new SluiceError('MALFORMED', message);
}

export interface ChangelogEntry {
  /** 20-byte manifest node (all zero for the empty changeset) */
  manifest: Uint8Array;
  user: string;
  /** seconds since the epoch, as hg's float() read it */
  time: number;
  tz: number;
  /** files touched, latin1 byte strings, as listed */
  files: string[];
  description: string;
}

const NL = 0x0a;

function indexOfByte(text: Uint8Array, byte: number, from: number): number {
  return text.indexOf(byte, from);
}

/** Parses a changelog text like changelogrevision + the fields cl.read() touches (date, extra). */
export function parseChangelogEntry(text: Uint8Array): ChangelogEntry {
  const buf = Buffer.from(text.buffer, text.byteOffset, text.length);
  if (text.length === 0) {
    return { manifest: new Uint8Array(20), user: '', time: 0, tz: 0, files: [], description: '' };
  }
  const nl1 = indexOfByte(text, NL, 0);
  const nl2 = nl1 < 0 ? -1 : indexOfByte(text, NL, nl1 + 1);
  const nl3 = nl2 < 0 ? -1 : indexOfByte(text, NL, nl2 + 1);
  if (nl3 < 0) throw malformed('substring not found');
  let doublenl: number;
  if (text[nl3 + 1] === NL) doublenl = nl3;
  else {
    doublenl = buf.indexOf('\n\n', nl3 + 1, 'latin1');
    if (doublenl < 0) throw malformed('substring not found');
  }
  const manifestHex = buf.toString('latin1', 0, nl1);
  if (manifestHex.length % 2 !== 0) throw malformed('Odd-length string');
  if (!/^[0-9a-fA-F]*$/.test(manifestHex)) throw malformed('Non-hexadecimal digit found');
  const manifest = Buffer.from(manifestHex, 'hex');
  const user = buf.toString('latin1', nl1 + 1, nl2);
  const dateextra = buf.toString('latin1', nl2 + 1, nl3);
  const fields = splitN(dateextra, ' ', 2);
  if (fields.length < 2) throw malformed('list index out of range');
  const time = pythonFloat(fields[0]!);
  const tzNum = /^\s*[+-]?\d+\s*$/.test(fields[1]!) ? parseInt(fields[1]!, 10) : 0;
  if (fields.length === 3) decodeExtra(fields[2]!);
  const files = nl3 === doublenl ? [] : buf.toString('latin1', nl3 + 1, doublenl).split('\n');
  const description = buf.toString('latin1', doublenl + 2);
  return { manifest, user, time, tz: tzNum, files, description };
}

/** Python's bytes.split(sep, maxsplit). */
function splitN(s: string, sep: string, maxsplit: number): string[] {
  const out: string[] = [];
  let start = 0;
  while (out.length < maxsplit) {
    const i = s.indexOf(sep, start);
    if (i < 0) break;
    out.push(s.slice(start, i));
    start = i + sep.length;
  }
  out.push(s.slice(start));
  return out;
}

function pythonFloat(s: string): number {
  const t = s.trim();
  if (/^[+-]?(\d+(_\d+)*)?(\.\d*)?([eE][+-]?\d+)?$/.test(t) && /\d/.test(t))
    return Number(t.replace(/_/g, ''));
  if (/^[+-]?(inf|infinity|nan)$/i.test(t))
    return t.toLowerCase().includes('nan') ? NaN : t.startsWith('-') ? -Infinity : Infinity;
  throw malformed(`could not convert string to float: ${JSON.stringify(s)}`);
}

/** changelog.decodeextra: `\0`-separated `key:value` items, string-escape encoded. */
export function decodeExtra(raw: string): Map<string, string> {
  const extra = new Map<string, string>([['branch', 'default']]);
  for (const item of raw.split('\0')) {
    if (!item) continue;
    const l = unescapeStr(item);
    const colon = l.indexOf(':');
    if (colon < 0) throw malformed('not enough values to unpack (expected 2, got 1)');
    extra.set(l.slice(0, colon), l.slice(colon + 1));
  }
  return extra;
}

/** codecs.escape_decode for the escapes changelog.encodeextra produces (\\, \n, \r, \0 and friends). */
function unescapeStr(s: string): string {
  if (!s.includes('\\')) return s;
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c !== '\\') {
      out += c;
      continue;
    }
    if (i + 1 >= s.length) throw malformed('\\ at end of string');
    const n = s[++i]!;
    const simple: Record<string, string> = {
      '\\': '\\',
      "'": "'",
      '"': '"',
      a: '\x07',
      b: '\b',
      f: '\f',
      n: '\n',
      r: '\r',
      t: '\t',
      v: '\v',
      '\n': '',
    };
    if (n in simple) out += simple[n];
    else if (n === 'x') {
      const h = s.slice(i + 1, i + 3);
      if (!/^[0-9a-fA-F]{2}$/.test(h)) throw malformed(`invalid \\x escape at position ${i - 1}`);
      out += String.fromCharCode(parseInt(h, 16));
      i += 2;
    } else if (n >= '0' && n <= '7') {
      let oct = n;
      while (oct.length < 3 && s[i + 1]! >= '0' && s[i + 1]! <= '7') oct += s[++i];
      out += String.fromCharCode(parseInt(oct, 8) & 0xff);
    } else out += '\\' + n;
  }
  return out;
}

export interface ManifestEntry {
  /** path, latin1 byte string */
  path: string;
  /** 40 hex digits */
  nodeHex: string;
  /** '', 'x', 'l' or 't' */
  flag: string;
}

/**
 * Parses manifest text (or the text a manifest delta inserts) like hg's C lazymanifest: every line
 * `path\0<40 hex><flag>\n`, sorted strictly by path. Throws SluiceError('MALFORMED') with hg's words.
 */
export function parseManifest(text: Uint8Array, onEntry: (e: ManifestEntry) => void): void {
  const buf = Buffer.from(text.buffer, text.byteOffset, text.length);
  scanManifest(text, (pos, nul, flag) => {
    onEntry({
      path: buf.toString('latin1', pos, nul),
      nodeHex: buf.toString('latin1', nul + 1, nul + 41),
      flag: flag === 0 ? '' : FLAGS[flag]!,
    });
  });
}

/**
 * The checks of parseManifest without building anything: `onLine(start, nul, flag)` for each line,
 * its path at text[start, nul), its 40 hex digits after the NUL, its flag byte (0 for none; else
 * x, l or t). For readers that take the lines' bytes as they are (a checkout's file columns).
 */
export function scanManifest(
  text: Uint8Array,
  onLine: (start: number, nul: number, flag: number) => void,
): void {
  const len = text.length;
  let pos = 0;
  let prevStart = -1;
  let prevEnd = -1;
  while (pos < len) {
    if (text[pos] === 0) throw malformed('Manifest had an entry with a zero-length filename.');
    // the typed array's own search (Buffer's indexOf dispatches on its argument's type first)
    const nl = typedIndexOf.call(text, NL, pos);
    if (nl < 0) throw malformed('Manifest did not end in a newline.');
    if (nl - pos < 42) throw malformed('Manifest had implausibly-short line.');
    const nul = typedIndexOf.call(text, 0, pos);
    if (nul < 0 || nul > nl) throw malformed('Manifest line has no NUL.');
    // strictly ascending paths, compared as bytes (latin1 strings compare the same way)
    if (prevStart >= 0 && !bytesBefore(text, prevStart, prevEnd, pos, nul))
      throw malformed('Manifest lines not in sorted order.');
    prevStart = pos;
    prevEnd = nul;
    const rest = nl - nul - 1;
    if (rest !== 40 && rest !== 41) throw malformed('Invalid manifest line');
    // 40 lowercase hex digits, checked on the bytes (a RegExp on the string cost ~1 µs a line)
    for (let i = nul + 1; i <= nul + 40; i++) {
      const c = text[i]!;
      if (!((c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66))) throw malformed('Invalid manifest line');
    }
    const flag = rest === 41 ? text[nl - 1]! : 0;
    if (rest === 41 && FLAGS[flag] === undefined) throw malformed('Invalid manifest line');
    onLine(pos, nul, flag);
    pos = nl + 1;
  }
}

/** text[a, aEnd) sorts strictly before text[b, bEnd), byte by byte. */
function bytesBefore(text: Uint8Array, a: number, aEnd: number, b: number, bEnd: number): boolean {
  const n = Math.min(aEnd - a, bEnd - b);
  for (let i = 0; i < n; i++) {
    const x = text[a + i]!;
    const y = text[b + i]!;
    if (x !== y) return x < y;
  }
  return aEnd - a < bEnd - b;
}

const typedIndexOf = Uint8Array.prototype.indexOf;
/** a manifest line's flag byte: x, l, t (anything else is invalid) */
const FLAGS: Record<number, string | undefined> = { 0x78: 'x', 0x6c: 'l', 0x74: 't' };

export interface FilelogMeta {
  fields: Map<string, string>;
  /** offset of the file data after the metadata block */
  dataOffset: number;
}

/** storageutil.parsemeta: the `\1\n key: value\n … \1\n` block that may open a filelog text. */
export function parseFilelogMeta(text: Uint8Array): FilelogMeta | null {
  if (text.length < 2 || text[0] !== 1 || text[1] !== NL) return null;
  const buf = Buffer.from(text.buffer, text.byteOffset, text.length);
  const end = buf.indexOf('\x01\n', 2, 'latin1');
  if (end < 0) throw malformed("'NoneType' object has no attribute 'start'");
  const fields = new Map<string, string>();
  const mtext = buf.toString('latin1', 2, end);
  // bytes.splitlines(): no trailing empty line for a final newline
  const lines = mtext === '' ? [] : mtext.split(/\r\n|\r|\n/);
  if (lines.length && lines[lines.length - 1] === '' && /[\r\n]$/.test(mtext)) lines.pop();
  for (const line of lines) {
    const sep = line.indexOf(': ');
    if (sep < 0) throw malformed('not enough values to unpack (expected 2, got 1)');
    fields.set(line.slice(0, sep), line.slice(sep + 2));
  }
  return { fields, dataOffset: end + 2 };
}

/** filelog.renamed(): the copy source (path, 20-byte node) recorded in the metadata, or null. */
export function copySource(text: Uint8Array): { path: string; node: Uint8Array } | null {
  const meta = parseFilelogMeta(text);
  if (!meta) return null;
  const copy = meta.fields.get('copy');
  const copyrev = meta.fields.get('copyrev');
  if (copy === undefined || copyrev === undefined) return null;
  if (copyrev.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(copyrev))
    throw malformed('Non-hexadecimal digit found');
  return { path: copy, node: Buffer.from(copyrev, 'hex') };
}
