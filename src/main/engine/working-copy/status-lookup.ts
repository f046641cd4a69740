// context.workingctx._checklookup: the files dirstate.status could not decide by stat are compared
// with their revision in the parent (flags, then contents, as filectx.cmp); the ones found clean
// with a reliable mtime become "fixups" that hg writes back into the dirstate so the next status
// need not read them again.
import { closeSync, fstatSync, openSync, readlinkSync, readSync, lstatSync, unlinkSync } from 'node:fs';
import { isSluiceError } from '../errors';
import type { ManifestEntry } from '../revlog/texts';
import { RANGE_MASK } from './dirstate-v1';
import type { FileTextReader } from './file-texts';
import { probeName } from './fs-caps';
import { workingPath } from './path-auditor';

/** An mtime as timestamp.py keeps it: seconds (masked to 31 bits), nanoseconds, second_ambiguous. */
export interface Timestamp {
  sec: number;
  ns: number;
  secondAmbiguous: boolean;
}

/** A file found clean whose stat can be recorded (set_clean's mode, size, mtime). */
export interface Fixup {
  path: string;
  mode: number;
  size: number;
  mtime: Timestamp;
}

export interface LookupResult {
  modified: string[];
  deleted: string[];
  clean: string[];
  fixup: Fixup[];
}

/** timestamp.get_fs_now: the filesystem's "now", the mtime of a file just created in `.hg`. */
export function fsNow(hgDir: string): Timestamp {
  const path = probeName(hgDir, 'now');
  const fd = openSync(path, 'wx');
  try {
    return bigintMtime(fstatSync(fd, { bigint: true }).mtimeNs);
  } finally {
    closeSync(fd);
    unlinkSync(path);
  }
}

function bigintMtime(ns: bigint): Timestamp {
  return {
    sec: Number(ns / 1_000_000_000n) & RANGE_MASK,
    ns: Number(ns % 1_000_000_000n),
    secondAmbiguous: false,
  };
}

/** timestamp.reliable_mtime_of: null when a write in the same second could still go unnoticed. */
export function reliableMtime(file: Timestamp, boundary: Timestamp): Timestamp | null {
  if (boundary.sec === file.sec) {
    if (file.ns && boundary.ns && file.ns < boundary.ns) return { ...file, secondAmbiguous: true };
    return null;
  }
  if (boundary.sec < file.sec && file.sec < boundary.sec + 86400) return null;
  return file;
}

export interface LookupOptions {
  root: string;
  /** p1's manifest entries by path */
  parent: ReadonlyMap<string, ManifestEntry>;
  reader: FileTextReader;
  checkExec: boolean;
  checkLink: boolean;
  /** null: no "now" could be had (a read-only .hg): nothing is fixed up */
  boundary: Timestamp | null;
}

/** The working copy's flags of a file, as workingctx.flags reads them from its lstat. */
function wdirFlag(mode: number, opts: LookupOptions): string {
  if (opts.checkLink && (mode & 0o170000) === 0o120000) return 'l';
  if (opts.checkExec && mode & 0o100) return 'x';
  return '';
}

export async function checkLookup(files: readonly string[], opts: LookupOptions): Promise<LookupResult> {
  const out: LookupResult = { modified: [], deleted: [], clean: [], fixup: [] };
  const prefix = Buffer.from(opts.root + '/', 'utf8');
  for (const f of [...files].sort()) {
    const fsPath = workingPath(opts.root, f, prefix);
    try {
      const m = opts.parent.get(f);
      const st = lstatSync(fsPath, { bigint: true });
      const mode = Number(st.mode);
      if (!m || wdirFlag(mode, opts) !== m.flag || !(await sameContents(f, fsPath, mode, m, opts))) {
        out.modified.push(f);
        continue;
      }
      if (!opts.boundary) {
        out.clean.push(f);
        continue;
      }
      const after = lstatSync(fsPath, { bigint: true });
      const mtime = reliableMtime(bigintMtime(after.mtimeNs), opts.boundary);
      if (mtime) out.fixup.push({ path: f, mode: Number(after.mode), size: Number(after.size), mtime });
      else out.clean.push(f);
    } catch (e) {
      // issue5584: a file that became unreadable or vanished meanwhile is deleted (a file system
      // error; a revlog's is no answer about the file and goes to the caller)
      if (isSluiceError(e) || !(e as NodeJS.ErrnoException).code) throw e;
      out.deleted.push(f);
    }
  }
  return out;
}

/** filectx.cmp: the working file's data (a symlink's target) against the filelog text. */
async function sameContents(
  path: string,
  fsPath: string | Buffer,
  mode: number,
  m: ManifestEntry,
  opts: LookupOptions,
): Promise<boolean> {
  const isLink = (mode & 0o170000) === 0o120000;
  // loaded here: a status the dirstate alone answers never needs node:crypto
  const { hashesToNode } = await import('./file-hash-cmp');
  if (await hashesToNode(opts.reader, path, m.nodeHex, fsPath, isLink)) return true;
  let expected: Uint8Array; // copy metadata already stripped
  try {
    expected = await opts.reader.read(path, m.nodeHex);
  } catch (e) {
    // filelog.cmp: a censored revision compares against the empty file (what hg checks out for it
    // under censor.policy=ignore)
    if (!isSluiceError(e) || (e.details as { problem?: string } | undefined)?.problem !== 'censored') throw e;
    expected = new Uint8Array(0);
  }
  if (isLink) {
    const target = readlinkSync(fsPath, { encoding: 'buffer' });
    return Buffer.compare(target, expected) === 0;
  }
  return fileEquals(fsPath, expected);
}

/** The file's bytes equal `expected`, read in pieces (a file larger than expected stops at once). */
function fileEquals(fsPath: string | Buffer, expected: Uint8Array): boolean {
  const fd = openSync(fsPath, 'r');
  try {
    const buf = Buffer.allocUnsafe(Math.min(1 << 20, expected.length + 1));
    let at = 0;
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) return at === expected.length;
      if (at + n > expected.length) return false;
      if (Buffer.compare(buf.subarray(0, n), expected.subarray(at, at + n)) !== 0) return false;
      at += n;
    }
  } finally {
    closeSync(fd);
  }
}
