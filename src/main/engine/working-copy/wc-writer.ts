// Writes working-copy files the way hg's wctx.write / vfs / util.setflags do: regular files
// created with 0666 & ~umask (exec files: +x for every +r bit, minus the umask), symlinks for the
// `l` flag (a plain file holding the target where the filesystem or the OS cannot make one), and
// every fd handed to the BackgroundCloser (merge.batchget writes under wvfs.backgroundclosing).
// Each file and directory a checkout creates is remembered so a failed or cancelled checkout can
// remove exactly those (nothing it did not create is ever removed).
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
  writevSync,
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

const NO_DATA = new Uint8Array(0);

const SYMLINK_UNSUPPORTED = new Set(['EPERM', 'ENOSYS', 'EOPNOTSUPP', 'ENOTSUP', 'EACCES']);

export interface WorkingCopyWriterOptions {
  /** false: write link targets as plain files (hg when checklink fails); default: try symlinks */
  symlinks?: boolean;
}

/**
 * The working copy's directories for a checkout (its files are written by FileCreator, on
 * several threads): made before any file, remembered so a failed checkout removes exactly those.
 */
export class WorkingCopyWriter {
  /** fs paths of the directories this writer created, in creation order */
  readonly createdDirs: (string | Buffer)[] = [];
  private readonly madeDirs = new Set<string>();

  constructor(private readonly auditor: PathAuditor) {}

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
   * Makes the parent directories of every path now, before any file is written there. The caller
   * has passed every target path through auditPathSet first.
   */
  ensureParents(paths: Iterable<string>): void {
    for (const p of paths) this.ensureParent(p);
  }

  /** Moves a file written elsewhere (a scratch file) into the working copy at `path` (replacing a file there). */
  moveInto(from: string | Buffer, path: string): void {
    this.ensureParent(path);
    renameSync(from, this.auditor.fsPath(path));
  }

  /** Removes `files` (those the checkout created), then the directories made here, deepest first. */
  undo(files: Iterable<string | Buffer>): void {
    for (const f of files) {
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

/**
 * Creates one working-copy file (flag '', 'x' or 'l') exclusively at a filesystem path and hands
 * its fd to the closer; used by the writer on the main thread and by checkout's file writers on
 * worker threads. `onCreated(file)` runs once the file exists (whatever happens next), so a failed
 * checkout can remove it; `file` is the caller's number for it (a number, not a closure per file).
 */
export class FileCreator {
  private readonly fileMode = 0o666;
  private readonly exeMode: number;
  private symlinks: boolean;
  /**
   * The data of the file being written, for writevSync: fs.writeSync's argument handling
   * allocated ~130-200 bytes per call where V8 runs it from Maglev code (Node 24); writevSync
   * with a kept one-buffer list allocates nothing
   */
  private readonly one: Uint8Array[] = [NO_DATA];
  /** what a synchronous create() returns, reused (no object per file) */
  private readonly written: WrittenFile = { mode: 0, size: 0, mtimeSec: 0 };

  constructor(
    private readonly closer: BackgroundCloser,
    private readonly onCreated: (file: number) => void,
    opts: WorkingCopyWriterOptions = {},
  ) {
    this.exeMode = execMode(currentUmask());
    this.symlinks = opts.symlinks ?? process.platform !== 'win32';
  }

  /**
   * Synchronous unless the closer is full (background closing): then a promise that settles once
   * the fd is handed over. The data is written before this returns either way. A synchronous
   * result is valid until the next create() (the caller copies its fields out).
   */
  create(
    fsPath: string | Buffer,
    data: Uint8Array,
    flag: string,
    file: number,
  ): WrittenFile | Promise<WrittenFile> {
    if (flag === 'l' && this.symlinks) {
      try {
        symlinkSync(Buffer.from(Buffer.from(data).toString('latin1'), 'latin1'), fsPath);
        this.onCreated(file);
        const st = lstatSync(fsPath);
        return { mode: st.mode, size: st.size, mtimeSec: Math.floor(st.mtimeMs / 1000) };
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (!code || !SYMLINK_UNSUPPORTED.has(code)) throw e;
        this.symlinks = false; // util.checklink failed: plain files from now on, as hg
      }
    }
    const fd = openSync(fsPath, 'wx', flag === 'x' ? this.exeMode : this.fileMode);
    this.onCreated(file);
    let st;
    try {
      let off = 0;
      if (data.length > 0) {
        this.one[0] = data;
        try {
          off = writevSync(fd, this.one);
        } finally {
          this.one[0] = NO_DATA;
        }
      }
      while (off < data.length) off += writeSync(fd, data, off, data.length - off); // a short write
      st = fstatSync(fd);
    } catch (e) {
      closeSync(fd);
      throw e;
    }
    const full = this.closer.close(fd);
    if (full) {
      const w: WrittenFile = { mode: st.mode, size: st.size, mtimeSec: Math.floor(st.mtimeMs / 1000) };
      return full.then(() => w);
    }
    const w = this.written;
    w.mode = st.mode;
    w.size = st.size;
    w.mtimeSec = Math.floor(st.mtimeMs / 1000);
    return w;
  }

  /**
   * Like create() for a regular file (flag '' or 'x') whose content `fill` hands over in pieces
   * (a large file streamed from its revlog): each piece is written at its offset as it comes, so
   * the file is never held whole. The file exists once `onCreated` runs: if `fill` throws (a node
   * mismatch found after the last piece), the caller's undo removes it.
   */
  async createStreamed(
    fsPath: string | Buffer,
    flag: string,
    file: number,
    fill: (write: (piece: Uint8Array) => void) => Promise<void>,
  ): Promise<WrittenFile> {
    const fd = openSync(fsPath, 'wx', flag === 'x' ? this.exeMode : this.fileMode);
    this.onCreated(file);
    let st;
    try {
      let pos = 0;
      await fill((piece) => {
        for (let off = 0; off < piece.length;) {
          const n = writeSync(fd, piece, off, piece.length - off, pos);
          off += n;
          pos += n;
        }
      });
      st = fstatSync(fd);
    } catch (e) {
      closeSync(fd);
      throw e;
    }
    const full = this.closer.close(fd);
    if (full) await full;
    return { mode: st.mode, size: st.size, mtimeSec: Math.floor(st.mtimeMs / 1000) };
  }
}

/** The error for a file that exists where the checkout creates one (hg's message). */
export function exists(path: string): SluiceError {
  return new SluiceError(
    'DEST_EXISTS',
    `untracked file in working directory differs from file in requested revision: '${displayPath(path)}'`,
    { path: displayPath(path) },
  );
}
