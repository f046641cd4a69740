// The one gate every working-copy path passes before anything is written (hg's
// pathutil.pathauditor, util.checkwinfilename, merge._checkcollision). Paths are the manifest's
// latin1 byte strings. Two levels:
// - auditPathSet: the whole target manifest at once, before the first write: file/directory
//   conflicts (which covers a path through a symlink the manifest itself creates) and, on a
//   case-insensitive filesystem, case-folding collisions.
// - PathAuditor.audit: one path: illegal components (`..`, absolute, `.hg` in any case or HFS+
//   spelling, `HG~1`, `.hg.`), Windows names when asked, then every parent directory on disk once
//   (cached, like hg's `cached=True` auditor): a symlink or a nested repository refuses the path.
import { lstatSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { SluiceError } from '../errors';

export interface PathAuditorOptions {
  /** hg's checkwinfilename, `\` as a separator; default: running on Windows */
  windows?: boolean;
  /** fold case when comparing names; default: probe the filesystem (util.fscasesensitive) */
  caseInsensitive?: boolean;
}

/** Display form of a latin1 byte-string path (as UTF-8 when it decodes). */
export function displayPath(path: string): string {
  // ASCII reads the same in both, and nearly every path is ASCII: no Buffer per path (an app job
  // names each of its files this way for its log)
  return NON_ASCII.test(path) ? Buffer.from(path, 'latin1').toString('utf8') : path;
}

const NON_ASCII = /[\u0080-\uffff]/;

function unsafe(path: string, message: string, extra: Record<string, unknown> = {}): SluiceError {
  return new SluiceError('UNSAFE_PATH', message, { path: displayPath(path), ...extra });
}

/** encoding.hfsignoreclean on lower(): code points HFS+ ignores, as UTF-8 bytes in a latin1 string. */
const HFS_IGNORED = [
  0x200c, 0x200d, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x206a, 0x206b, 0x206c, 0x206d,
  0x206e, 0x206f, 0xfeff,
].map((c) => Buffer.from(String.fromCodePoint(c), 'utf8').toString('latin1'));

function lowerClean(s: string): string {
  let out = s.toLowerCase();
  if (out.includes('\xe2') || out.includes('\xef')) for (const c of HFS_IGNORED) out = out.replaceAll(c, '');
  return out;
}

const WIN_RESERVED_NAMES = new Set([
  'con', 'prn', 'aux', 'nul',
  'com1', 'com2', 'com3', 'com4', 'com5', 'com6', 'com7', 'com8', 'com9',
  'lpt1', 'lpt2', 'lpt3', 'lpt4', 'lpt5', 'lpt6', 'lpt7', 'lpt8', 'lpt9',
]); // prettier-ignore
const WIN_RESERVED_CHARS = ':*?"<>|';

/** util.checkwinfilename: the problem with `path` on Windows, or null. */
export function checkWinFilename(path: string): string | null {
  if (path.endsWith('\\')) return "filename ends with '\\', which is invalid on Windows";
  if (path.includes('\\/')) return "directory name ends with '\\', which is invalid on Windows";
  for (const n of path.replaceAll('\\', '/').split('/')) {
    if (!n) continue;
    for (const c of n) {
      if (WIN_RESERVED_CHARS.includes(c)) return `filename contains '${c}', which is reserved on Windows`;
      if (c.charCodeAt(0) <= 31)
        return `filename contains '\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}', which is invalid on Windows`;
    }
    const base = n.split('.')[0]!;
    if (base && WIN_RESERVED_NAMES.has(base.toLowerCase()))
      return `filename contains '${base}', which is reserved on Windows`;
    const t = n.slice(-1);
    if ((t === '.' || t === ' ') && n !== '.' && n !== '..')
      return `filename ends with '${t}', which is not allowed on Windows`;
  }
  return null;
}

/** util.fscasesensitive on a fresh probe directory inside `dir` (hg probes `.hg`). */
export function isCaseSensitive(dir: string): boolean {
  const probe = mkdtempSync(join(dir, '.sluice-case-'));
  try {
    const a = statSync(probe);
    let b;
    try {
      b = statSync(join(dir, basename(probe).toUpperCase()));
    } catch {
      return true;
    }
    return !(a.ino === b.ino && a.dev === b.dev);
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
}

/** The filesystem path of working-copy path `path` (a latin1 byte string) under root: bytes kept as they are. */
export function workingPath(root: string, path: string, rootPrefix?: Buffer): string | Buffer {
  // eslint-disable-next-line no-control-regex
  if (!/[^\x00-\x7f]/.test(path)) return root + '/' + path;
  return Buffer.concat([rootPrefix ?? Buffer.from(root + '/', 'utf8'), Buffer.from(path, 'latin1')]);
}

/**
 * What any of checkName's refusals needs somewhere in a name (off Windows): NUL or a line break, a
 * `~` (short names), an empty, `.` or `..` component, `.hg` in any case, or a byte that starts a
 * UTF-8 code point HFS+ ignores (lowerClean). A name without any of them passes every check.
 */
const MAYBE_UNSAFE = /[\0\n\r~\xe2\xef]|^\/|\/$|\/\/|(?:^|\/)\.\.?(?:\/|$)|\.[hH][gG]/;

export class PathAuditor {
  readonly windows: boolean;
  readonly caseInsensitive: boolean;
  private readonly auditedDirs = new Set<string>();
  private readonly rootPrefix: Buffer;

  constructor(
    readonly root: string,
    opts: PathAuditorOptions = {},
  ) {
    this.windows = opts.windows ?? process.platform === 'win32';
    this.caseInsensitive = opts.caseInsensitive ?? !isCaseSensitive(join(root, '.hg'));
    this.rootPrefix = Buffer.from(root + '/', 'utf8');
  }

  /** The filesystem path of a working-copy path (bytes kept as they are). */
  fsPath(path: string): string | Buffer {
    return workingPath(this.root, path, this.rootPrefix);
  }

  private norm(path: string): string {
    return this.caseInsensitive ? path.toLowerCase() : path;
  }

  private split(path: string): string[] {
    return this.windows ? path.split(/[\\/]/) : path.split('/');
  }

  /** The checks on the name alone (pathauditor.__call__ before _checkfs, plus checkosfilename). */
  checkName(path: string): void {
    if (path.length === 0) throw unsafe(path, 'empty path in manifest');
    // nearly every name has nothing any check below looks for: one scan instead of all of them
    if (!this.windows && !MAYBE_UNSAFE.test(path)) return;
    if (path.includes('\0')) throw unsafe(path, `path contains NUL: ${displayPath(path)}`);
    // scmutil.checkfilename / manifest._checkforbidden: hg never stores such a name (only a forged
    // manifest has one), and a line break would split dirstate and log lines
    if (path.includes('\n') || path.includes('\r'))
      throw unsafe(path, `'\\n' and '\\r' disallowed in filenames: ${JSON.stringify(displayPath(path))}`);
    if (this.windows) {
      const problem = checkWinFilename(path);
      if (problem) throw unsafe(path, `${problem}: ${displayPath(path)}`, { reason: problem });
    }
    const parts = this.split(path);
    const drive = this.windows && /^[A-Za-z]:/.test(path);
    // hg refuses `..`, a leading separator and a leading `.hg`; `.`/empty components inside a
    // path are also refused: they would name the same file as another manifest entry.
    if (
      drive ||
      parts.some((p) => p === '..' || p === '.' || p === '') ||
      ['.hg', '.hg.'].includes(lowerClean(parts[0]!))
    )
      throw unsafe(path, `path contains illegal component: ${displayPath(path)}`);
    for (const p of parts) {
      const tilde = p.indexOf('~');
      if (tilde < 0) continue;
      const first = p.slice(0, tilde).toUpperCase();
      const last = p.slice(tilde + 1);
      if (/^[0-9]+$/.test(last) && (first === 'HG' || first === 'HG8B6C'))
        throw unsafe(path, `path contains illegal component: ${displayPath(path)}`);
    }
    if (lowerClean(path).includes('.hg')) {
      const lparts = parts.map(lowerClean);
      for (let i = 1; i < lparts.length; i++) {
        if (lparts[i] === '.hg' || lparts[i] === '.hg.') {
          const base = parts.slice(0, i).join('/');
          throw unsafe(path, `path '${displayPath(path)}' is inside nested repo '${displayPath(base)}'`);
        }
      }
    }
  }

  /**
   * Full audit of one path: the name, then each parent directory on disk once: a symlink or a
   * nested repository (a directory holding `.hg`) on the way refuses it (pathauditor._checkfs).
   */
  audit(path: string): void {
    this.checkName(path);
    const parts = this.split(path);
    let prefix = '';
    for (let i = 0; i < parts.length - 1; i++) {
      prefix = i === 0 ? parts[0]! : prefix + '/' + parts[i]!;
      const key = this.norm(prefix);
      if (this.auditedDirs.has(key)) continue;
      this.checkDirOnDisk(prefix, path);
      this.auditedDirs.add(key);
    }
  }

  /** Audits one existing directory on disk (cached): not a symlink, not a nested repository. */
  auditDir(dir: string, path: string): void {
    const key = this.norm(dir);
    if (this.auditedDirs.has(key)) return;
    this.checkDirOnDisk(dir, path);
    this.auditedDirs.add(key);
  }

  /** A directory the writer made itself: nothing to check on disk below the root. */
  markCreated(dir: string): void {
    this.auditedDirs.add(this.norm(dir));
  }

  /** Forget what was learnt about directories (after files were removed or replaced). */
  reset(): void {
    this.auditedDirs.clear();
  }

  private checkDirOnDisk(prefix: string, path: string): void {
    let st;
    try {
      st = lstatSync(this.fsPath(prefix));
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EINVAL') return;
      throw e;
    }
    if (st.isSymbolicLink())
      throw unsafe(path, `path '${displayPath(path)}' traverses symbolic link '${displayPath(prefix)}'`, {
        through: displayPath(prefix),
      });
    if (st.isDirectory()) {
      let nested = false;
      try {
        nested = lstatSync(this.fsPath(prefix + '/.hg')).isDirectory();
      } catch {
        nested = false;
      }
      if (nested)
        throw unsafe(path, `path '${displayPath(path)}' is inside nested repo '${displayPath(prefix)}'`);
    }
  }
}

/**
 * Checks a whole set of target paths before anything is written: every name (PathAuditor.checkName),
 * no path that is also a directory of another (a file and a directory cannot share a name; with
 * the first a symlink it would be a path through a symlink), and on a case-insensitive filesystem
 * no two names (files or directories) folding to the same (merge._checkcollision).
 */
export function auditPathSet(auditor: PathAuditor, paths: Iterable<string>): void {
  const files = new Set<string>();
  const dirs = new Map<string, string>();
  const folded = new Map<string, string>();
  const fold = (name: string, isDir: boolean): void => {
    if (!auditor.caseInsensitive) return;
    const key = name.toLowerCase() + (isDir ? '/' : '');
    const other = folded.get(key) ?? folded.get(isDir ? name.toLowerCase() : key + '/');
    if (other !== undefined && other !== name)
      throw unsafe(name, `case-folding collision between ${displayPath(other)} and ${displayPath(name)}`, {
        other: displayPath(other),
      });
    folded.set(key, name);
  };
  let lastDir: string | undefined;
  for (const path of paths) {
    auditor.checkName(path);
    files.add(path);
    fold(path, false);
    // sorted manifests list a directory's files together: its prefixes are in dirs already
    const parent = path.slice(0, Math.max(0, path.lastIndexOf('/')));
    if (parent === lastDir) continue;
    lastDir = parent;
    let slash = path.indexOf('/');
    while (slash >= 0) {
      const dir = path.slice(0, slash);
      if (!dirs.has(dir)) {
        dirs.set(dir, path);
        fold(dir, true);
      }
      slash = path.indexOf('/', slash + 1);
    }
  }
  for (const [dir, child] of dirs) {
    if (files.has(dir))
      throw unsafe(
        child,
        `path '${displayPath(child)}' goes through '${displayPath(dir)}', which is also a file`,
        {
          file: displayPath(dir),
        },
      );
  }
}
