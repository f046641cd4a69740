// The fncache file (.hg/store/fncache): the list of `data/` and `meta/` store paths of a fncache
// store, one encodedir'd path per line. It is the only way to enumerate such a store: hashed
// `dh/` names cannot be decoded back (store.fncache).

import { SluiceError } from '../errors.js';
import { decodeDir, encodeDir } from './encoding.js';

/**
 * store.fncache._load: decodedir'd entries, duplicates dropped, in first-seen order (hg keeps a
 * set; callers that need hg's order sort). Lines are split like Python's bytes.splitlines (on
 * `\n`, `\r\n` and `\r`). MALFORMED when the data does not end with `\n` ("fncache does not ends
 * with a newline") or has an empty line ("invalid entry in fncache, line N"). An empty file is an
 * empty fncache.
 */
export function parseFncache(data: Uint8Array): string[] {
  const text = Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('latin1');
  if (text.length === 0) return [];
  if (text.charCodeAt(text.length - 1) !== 0x0a) {
    throw new SluiceError(
      'MALFORMED',
      'fncache does not end with a newline (hg debugrebuildfncache rebuilds it)',
    );
  }
  const seen = new Set<string>();
  let line = 0;
  let start = 0;
  const end = text.length;
  while (start < end) {
    line++;
    let stop = start;
    let c = 0;
    while (stop < end) {
      c = text.charCodeAt(stop);
      if (c === 0x0a || c === 0x0d) break;
      stop++;
    }
    if (stop === start) throw new SluiceError('MALFORMED', `invalid entry in fncache, line ${line}`);
    seen.add(decodeDir(text.slice(start, stop)));
    start = stop + 1;
    if (c === 0x0d && start < end && text.charCodeAt(start) === 0x0a) start++;
  }
  return [...seen];
}

/** store.fncache.write: encodedir'd entries joined by `\n`, with a final `\n` (empty → empty file). */
export function serializeFncache(names: Iterable<string>): Buffer {
  let text = '';
  for (const name of names) text += encodeDir(name) + '\n';
  return Buffer.from(text, 'latin1');
}

/** Lookups answered by scanning the file's bytes before they are parsed into a set once. */
const SCAN_LOOKUPS_MAX = 64;

/**
 * The fncache a transaction adds to, in hg's append mode (store.fncache `addls`): a name is
 * looked up in the file's bytes (its encodedir'd line) and new names are written after the old
 * bytes, instead of every entry being parsed into a set and the whole list serialized again (a
 * pull adding a few files to a 20k-entry fncache: ~50 ms less). Past SCAN_LOOKUPS_MAX lookups
 * the entries are parsed once. The file is checked as store.fncache._load checks it.
 */
export class FncacheAdditions {
  private readonly added = new Set<string>();
  private entries: Set<string> | undefined;
  private lookups = 0;

  constructor(private readonly raw: Buffer) {
    const n = raw.length;
    // anything parseFncache would refuse, or line ends a byte scan would miss: parse it now
    if (n && (raw[n - 1] !== 0x0a || raw[0] === 0x0a || raw.includes('\n\n') || raw.includes('\r')))
      this.entries = new Set(parseFncache(raw));
  }

  has(name: string): boolean {
    if (this.added.has(name)) return true;
    if (!this.entries && ++this.lookups > SCAN_LOOKUPS_MAX) this.entries = new Set(parseFncache(this.raw));
    if (this.entries) return this.entries.has(name);
    const line = encodeDir(name) + '\n';
    // the first line (lastIndexOf from 0 looks only there), then any line after a newline
    return this.raw.lastIndexOf(line, 0, 'latin1') === 0 || this.raw.includes('\n' + line, 0, 'latin1');
  }

  /** Adds name; false when the fncache has it already. */
  add(name: string): boolean {
    if (this.has(name)) return false;
    this.added.add(name);
    return true;
  }

  get changed(): boolean {
    return this.added.size > 0;
  }

  /** The file's new content: its old bytes, then the added names. */
  serialize(): Buffer {
    return Buffer.concat([this.raw, serializeFncache(this.added)]);
  }
}
