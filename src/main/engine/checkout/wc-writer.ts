// Writes working-copy files the way hg's wctx.write / vfs / util.setflags do: regular files
// created with 0666 & ~umask (exec files: +x for every +r bit, minus the umask), symlinks for the
// `l` flag (a plain file holding the target where the filesystem or the OS cannot make one), and
// every fd handed to the BackgroundCloser (merge.batchget writes under wvfs.backgroundclosing).
// Each file and directory it creates is remembered so a failed or cancelled checkout can remove
// exactly those (nothing it did not create is ever removed).
import {
  closeSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  renameSync,
  rmdirSync,
  symlinkSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import type { BackgroundCloser } from '../closer/background-closer';
import { SluiceError } from '../errors';
import { displayPath, type PathAuditor } from './path-auditor';

/** What the dirstate records of a written file (merge.batchget's filedata). */
export interface WrittenFile {
  /** st_mode */
  mode: number;
  size: number;
  /** st_mtime in seconds (whole) */
  mtimeSec: number;
}

/** The process umask, read once (hg's util.umask). */
let umaskValue: number | undefined;
export function currentUmask(): number {
  umaskValue ??= process.platform === 'win32' ? 0 : process.umask();
  return umaskValue;
}

/** util.setflags' exec mode for a file created with 0666 & ~umask. */
export function execMode(umask: number): number {
  const s = 0o666 & ~umask;
  return s | (((s & 0o444) >> 2) & ~umask);
}

const SYMLINK_UNSUPPORTED = new Set(['EPERM', 'ENOSYS', 'EOPNOTSUPP', 'ENOTSUP', 'EACCES']);

export interface WorkingCopyWriterOptions {
  /** false: write link targets as plain files (hg when checklink fails); default: try symlinks */
  symlinks?: boolean;
}

export class WorkingCopyWriter {
  /** fs paths this writer created, files then directories, in creation order */
  readonly createdFiles: (string | Buffer)[] = [];
  readonly createdDirs: (string | Buffer)[] = [];
  private readonly madeDirs = new Set<string>();
  private readonly fileMode: number;
  private readonly exeMode: number;
  private symlinks: boolean;

  constructor(
    private readonly auditor: PathAuditor,
    private readonly closer: BackgroundCloser,
    opts: WorkingCopyWriterOptions = {},
  ) {
    const umask = currentUmask();
    this.fileMode = 0o666;
    this.exeMode = execMode(umask);
    this.symlinks = opts.symlinks ?? process.platform !== 'win32';
  }

  /**
   * Creates the parent directories of `path`, remembering the ones it made. A directory mkdir
   * creates cannot be a symlink; one that exists already is audited on disk (symlink, nested
   * repository) by the auditor, once.
   */
  private ensureParent(path: string): void {
    const slash = path.lastIndexOf('/');
    if (slash < 0) return;
    const dir = path.slice(0, slash);
    if (this.madeDirs.has(dir)) return;
    let from = 0;
    for (;;) {
      const next = dir.indexOf('/', from);
      const prefix = next < 0 ? dir : dir.slice(0, next);
      if (!this.madeDirs.has(prefix)) {
        const p = this.auditor.fsPath(prefix);
        try {
          mkdirSync(p);
          this.createdDirs.push(p);
          this.auditor.markCreated(prefix);
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
          this.auditor.auditDir(prefix, path);
        }
        this.madeDirs.add(prefix);
      }
      if (next < 0) break;
      from = next + 1;
    }
  }

  /**
   * Writes one file (flag '', 'x' or 'l') at `path`, which must not exist (exclusive create).
   * The caller has passed every target path through auditPathSet first.
   * Returns its mode, size and mtime as lstat reports them after the write.
   */
  async write(path: string, data: Uint8Array, flag: string): Promise<WrittenFile> {
    this.ensureParent(path);
    try {
      return await this.writeAt(this.auditor.fsPath(path), data, flag);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') throw exists(path);
      throw e;
    }
  }

  /** Moves a file written with writeAt into the working copy at `path` (replacing a file there). */
  moveInto(from: string | Buffer, path: string): void {
    this.ensureParent(path);
    renameSync(from, this.auditor.fsPath(path));
  }

  /** write() at a filesystem path (a scratch file that moveInto puts in place later). */
  async writeAt(fsPath: string | Buffer, data: Uint8Array, flag: string): Promise<WrittenFile> {
    if (flag === 'l' && this.symlinks) {
      try {
        symlinkSync(Buffer.from(Buffer.from(data).toString('latin1'), 'latin1'), fsPath);
        this.createdFiles.push(fsPath);
        const st = lstatSync(fsPath);
        return { mode: st.mode, size: st.size, mtimeSec: Math.floor(st.mtimeMs / 1000) };
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (!code || !SYMLINK_UNSUPPORTED.has(code)) throw e;
        this.symlinks = false; // util.checklink failed: plain files from now on, as hg
      }
    }
    const fd = openSync(fsPath, 'wx', flag === 'x' ? this.exeMode : this.fileMode);
    this.createdFiles.push(fsPath);
    let st;
    try {
      let off = 0;
      while (off < data.length) off += writeSync(fd, data, off, data.length - off);
      st = fstatSync(fd);
    } catch (e) {
      closeSync(fd);
      throw e;
    }
    const full = this.closer.close(fd);
    if (full) await full;
    return { mode: st.mode, size: st.size, mtimeSec: Math.floor(st.mtimeMs / 1000) };
  }

  /** Removes what this writer created: files first, then directories deepest first. */
  undo(): void {
    for (const f of this.createdFiles.splice(0).reverse()) {
      try {
        unlinkSync(f);
      } catch {
        // already gone
      }
    }
    for (const d of this.createdDirs.splice(0).reverse()) {
      try {
        rmdirSync(d);
      } catch {
        // not empty (something else wrote there) or already gone: leave it
      }
    }
  }
}

function exists(path: string): SluiceError {
  return new SluiceError(
    'DEST_EXISTS',
    `untracked file in working directory differs from file in requested revision: '${displayPath(path)}'`,
    { path: displayPath(path) },
  );
}
