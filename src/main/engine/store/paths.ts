// Validation of stream entry names before anything touches the disk.
//
// Stream names are hostile input: a v1/v2 stream or a packed1 bundle can name any bytes. hg
// itself trusts them (streamclone.consumev2 writes through the store vfs, whose path auditor and
// encoding keep names inside .hg/store). Sluice checks them up front, in one place, so every
// parser can reject a bad name before a single byte is written.
//
// Names are byte strings in latin1 JS strings. A store ('s') name is the raw, unencoded store path
// (v1 names after decodedir); it is written through the fncache+dotencode encoding, which already
// escapes leading/trailing dots and spaces, Windows device names, upper case and the Windows
// specials, and hashes long paths into `dh/`. What the encoding cannot neutralise, and what other
// store layouts (encodedir only) would not, is rejected here: absolute names, drive letters, `.`
// and `..` segments, empty segments, separators and line breaks. Cache ('c') names are written to
// .hg/cache verbatim, so they are held to a strict single-segment whitelist.

import { SluiceError } from '../errors.js';

export type StreamVfs = 's' | 'c';

/**
 * Longest name accepted. hg's C pathencode refuses store paths of 5466 bytes and more ("string
 * too long"), so no real hg store holds a longer one.
 */
export const MAX_ENTRY_NAME_LENGTH = 5465;

// store.py: REVLOG_FILES_MAIN_EXT, REVLOG_FILES_OTHER_EXT, REVLOG_FILES_VOLATILE_EXT and the
// FILEFLAGS_* bits, used both to validate names and to order the top-level files like hg.
export const FILEFLAGS_FILELOG = 1 << 11;
export const FILEFLAGS_REVLOG_MAIN = 1 << 1;
export const FILEFLAGS_REVLOG_OTHER = 1 << 0;
export const FILEFLAGS_VOLATILE = 1 << 20;
export const FILETYPE_FILELOG_OTHER = FILEFLAGS_FILELOG | FILEFLAGS_REVLOG_OTHER;

const REVLOG_MAIN_SUFFIXES = ['.i', 'i.tmpcensored'] as const;
const REVLOG_OTHER_SUFFIXES = ['.idx', '.d', '.dat', '.n', '.nd', '.sda', 'd.tmpcensored'] as const;
const REVLOG_VOLATILE_SUFFIXES = ['.n', '.nd'] as const;

/**
 * store.revlog_type: FILEFLAGS_REVLOG_MAIN for index files, FILETYPE_FILELOG_OTHER (| VOLATILE for
 * nodemap files) for the others, null for a file that is not part of a revlog.
 */
export function revlogType(name: string): number | null {
  for (const s of REVLOG_MAIN_SUFFIXES) if (name.endsWith(s)) return FILEFLAGS_REVLOG_MAIN;
  for (const s of REVLOG_OTHER_SUFFIXES) {
    if (name.endsWith(s)) {
      let t = FILETYPE_FILELOG_OTHER;
      for (const v of REVLOG_VOLATILE_SUFFIXES) if (name.endsWith(v)) t |= FILEFLAGS_VOLATILE;
      return t;
    }
  }
  return null;
}

/** Store files that are streamed but are not revlogs (streamclone._walkstreamfullstorefiles, obsstore). */
const STORE_NON_REVLOG_FILES: ReadonlySet<string> = new Set(['phaseroots', 'obsstore']);

const TOP_LEVEL_STORE_NAME = /^[A-Za-z0-9._-]+$/;
const CACHE_NAME = /^[A-Za-z0-9._-]+$/;
const DRIVE_LETTER = /^[A-Za-z]:/;
/** Windows device names (any case, any extension): a cache file written verbatim must avoid them. */
const WINDOWS_DEVICE_STEM = /^(con|prn|aux|nul|com[1-9]|lpt[1-9])(\.|$)/i;

/** Why `name` is not acceptable for `vfs`, or null when it is. */
export function entryNameProblem(vfs: StreamVfs, name: string): string | null {
  if (typeof name !== 'string' || name.length === 0) return 'empty name';
  if (name.length > MAX_ENTRY_NAME_LENGTH) return `longer than ${MAX_ENTRY_NAME_LENGTH} bytes`;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c > 0xff) return 'not a byte string';
    if (c === 0) return 'contains NUL';
    if (c === 0x0a || c === 0x0d) return 'contains a line break';
    if (c === 0x5c) return 'contains a backslash';
  }
  if (name.charCodeAt(0) === 0x2f) return 'absolute path';
  if (DRIVE_LETTER.test(name)) return 'starts with a drive letter';
  let segStart = 0;
  for (;;) {
    let segEnd = name.indexOf('/', segStart);
    if (segEnd < 0) segEnd = name.length;
    const segLength = segEnd - segStart;
    if (segLength === 0) return 'empty path segment';
    if (
      name.charCodeAt(segStart) === 0x2e &&
      (segLength === 1 || (segLength === 2 && name.charCodeAt(segStart + 1) === 0x2e))
    ) {
      return "'.' or '..' segment";
    }
    if (segEnd === name.length) break;
    segStart = segEnd + 1;
  }

  if (vfs === 'c') {
    if (name.includes('/')) return 'cache names are a single file name';
    if (!CACHE_NAME.test(name)) return 'cache names are limited to [A-Za-z0-9._-]';
    if (name.startsWith('.') || name.endsWith('.')) return 'cache name starts or ends with a dot';
    if (WINDOWS_DEVICE_STEM.test(name)) return 'cache name is a Windows device name';
    return null;
  }
  if (vfs !== 's') return 'unknown vfs';

  if (!name.includes('/')) {
    if (STORE_NON_REVLOG_FILES.has(name)) return null;
    if (!TOP_LEVEL_STORE_NAME.test(name)) return 'top-level store names are limited to [A-Za-z0-9._-]';
    if (revlogType(name) === null) return 'not a revlog file, phaseroots or obsstore';
    return null;
  }
  if (!name.startsWith('data/') && !name.startsWith('meta/'))
    return "store subdirectory other than 'data/' or 'meta/'";
  if (revlogType(name) === null) return 'not a revlog file name';
  return null;
}

export function isSafeEntryName(vfs: StreamVfs, name: string): boolean {
  return entryNameProblem(vfs, name) === null;
}

/** Printable form of a byte-string name for messages (UTF-8 when it decodes, escapes otherwise). */
export function displayName(name: string): string {
  const bytes = Buffer.from(name, 'latin1');
  const utf8 = bytes.toString('utf8');
  const text = Buffer.from(utf8, 'utf8').equals(bytes) ? utf8 : name;
  return JSON.stringify(text);
}

/**
 * Throws SluiceError('UNSAFE_PATH') naming the entry unless `name` is a store path hg could
 * stream (vfs 's': `data/…`, `meta/…`, top-level revlog files, phaseroots, obsstore) or a plain
 * cache file name (vfs 'c').
 */
export function assertSafeEntryName(vfs: StreamVfs, name: string): void {
  const problem = entryNameProblem(vfs, name);
  if (problem !== null) {
    const shown = typeof name === 'string' ? displayName(name.slice(0, 300)) : String(name);
    throw new SluiceError(
      'UNSAFE_PATH',
      `unsafe stream entry ${shown} (${vfs === 'c' ? 'cache' : 'store'}): ${problem}`,
      {
        vfs,
        name,
      },
    );
  }
}
