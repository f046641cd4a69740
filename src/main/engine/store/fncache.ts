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
