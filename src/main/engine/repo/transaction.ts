// A store transaction like hg 6.3.2's (transaction.py): before a file is first appended to, its
// length goes into `.hg/store/journal` (`<file>\0<offset>\n`, store-relative unencoded paths;
// offset 0 = a new file); files rewritten whole are first copied to `journal.backup.<name>` and
// listed in `journal.backupfiles` (`2\n`, then `<location>\0<file>\0<backup>\0<flag>\n`). Abort
// plays the journal back (truncate, unlink new files, restore backups); close runs the finalizers
// (the changelog is made visible there, last) and removes the journal. The format is hg's own, so a
// journal a crash leaves behind is rolled back by `hg recover` and by Sluice's next run alike.

import {
  closeSync,
  existsSync,
  fstatSync,
  lstatSync,
  ftruncateSync,
  openSync,
  readFileSync,
  renameSync,
  rmdirSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { SluiceError, toSluiceError } from '../errors';
import type { StorePathEncoder } from '../store/encoding';
import { copyReplacing, openForUpdate, openReplacing, unlinkQuiet, writeReplacing } from './vfs';

/** transaction.version: the first line of journal.backupfiles. */
const BACKUP_VERSION = 2;
export const JOURNAL = 'journal';

/**
 * localrepo._journalfiles after the store journal itself: what localrepo._writejournal saves when
 * a transaction starts (the dirstate, branch, a description, bookmarks and phaseroots as they were)
 * and aftertrans renames to `undo.*` at close, so `hg rollback` can undo the transaction. Names
 * are vfs-relative: 'plain' = `.hg/`, '' = the store (bookmarks live in either).
 */
export const REPO_JOURNAL_FILES: readonly [VfsLocation, string][] = [
  ['', 'journal.narrowspec'],
  ['plain', 'journal.narrowspec.dirstate'],
  ['plain', 'journal.dirstate'],
  ['plain', 'journal.dirstate.v2-data'],
  ['plain', 'journal.branch'],
  ['plain', 'journal.desc'],
  ['plain', 'journal.bookmarks'],
  ['', 'journal.bookmarks'],
  ['', 'journal.phaseroots'],
];

/** Where a file lives: '' = the store (paths encoded), 'plain' = `.hg/` itself. */
export type VfsLocation = '' | 'plain';

export interface RepoVfs {
  /** `.hg` */
  hgDir: string;
  /** `.hg/store` */
  storeDir: string;
  /** the store's path encoding (fncache/dotencode as the requirements say) */
  encode: StorePathEncoder;
}

/** Absolute path of a journaled file. */
export function vfsPath(vfs: RepoVfs, file: string, location: VfsLocation = ''): string {
  return location === 'plain' ? join(vfs.hgDir, file) : join(vfs.storeDir, vfs.encode(file));
}

type Finalizer = () => void | Promise<void>;

export class Transaction {
  private journalFd: number;
  private backupFd: number;
  private readonly offsets = new Map<string, number>();
  private readonly backups: { location: VfsLocation; file: string; backup: string }[] = [];
  private readonly backupMap = new Set<string>();
  private readonly finalizers = new Map<string, Finalizer>();
  private readonly cleanups: (() => void)[] = [];
  /** store directories missing when a new file was journaled: abort removes them again */
  private readonly newDirs: string[] = [];
  /** directories noteNewDirs already looked at (existing, or in newDirs) */
  private readonly seenDirs = new Set<string>();
  /** journal lines of addDeferred() not written yet */
  private pendingJournal = '';
  private state: 'open' | 'closed' | 'aborted' = 'open';
  /** close leaves undo.* for `hg rollback` (false: a follow-up transaction keeps the previous ones) */
  private undo = true;

  private constructor(
    readonly vfs: RepoVfs,
    journalFd: number,
    backupFd: number,
  ) {
    this.journalFd = journalFd;
    this.backupFd = backupFd;
  }

  /**
   * Starts a transaction; the caller holds the store lock and has rolled back any journal left
   * by a crash (an existing journal is ABANDONED_TRANSACTION, as hg's "abandoned transaction found").
   */
  static open(vfs: RepoVfs, opts: { undo?: boolean } = {}): Transaction {
    const journal = join(vfs.storeDir, JOURNAL);
    let jfd: number;
    try {
      jfd = openSync(journal, 'wx');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST')
        throw new SluiceError(
          'ABANDONED_TRANSACTION',
          `abandoned transaction found in ${vfs.storeDir} (run 'hg recover')`,
        );
      throw toSluiceError(e);
    }
    let bfd: number;
    try {
      bfd = openReplacing(journal + '.backupfiles');
      writeSync(bfd, `${BACKUP_VERSION}\n`);
    } catch (e) {
      closeSync(jfd);
      unlinkQuiet(journal);
      throw toSluiceError(e);
    }
    const tx = new Transaction(vfs, jfd, bfd);
    tx.undo = opts.undo ?? true;
    return tx;
  }

  get active(): boolean {
    return this.state === 'open';
  }

  /** transaction.add: records `file`'s length before its first append (later calls are no-ops). */
  add(file: string, offset: number): void {
    this.addDeferred(file, offset);
    this.flushJournal();
  }

  /**
   * add() whose journal line waits in memory until flushJournal(), which the caller runs before
   * it writes any byte of `file`: a clone journals ~20k new filelogs, and one write(2) per entry
   * (hg's `_addentry` flushes each) cost ~20 µs apiece. The order of the lines is kept.
   */
  addDeferred(file: string, offset: number): void {
    this.checkOpen();
    if (this.offsets.has(file) || this.backupMap.has(file)) return;
    this.offsets.set(file, offset);
    this.pendingJournal += `${file}\0${offset}\n`;
    if (offset === 0) this.noteNewDirs(file);
  }

  /** Writes the journal lines addDeferred() queued. */
  flushJournal(): void {
    if (this.pendingJournal === '') return;
    const text = Buffer.from(this.pendingJournal, 'latin1');
    this.pendingJournal = '';
    let done = 0;
    while (done < text.length) done += writeSync(this.journalFd, text, done, text.length - done);
  }

  /**
   * The directories a new file's writer will have to create (hg leaves them behind on abort;
   * Sluice removes them, so an aborted apply leaves the store as it was, empty folders included).
   */
  private noteNewDirs(file: string): void {
    const missing: string[] = [];
    for (let d = dirname(vfsPath(this.vfs, file)); d.length > this.vfs.storeDir.length; d = dirname(d)) {
      // each directory is asked about once (a clone adds ~20k files in ~1k directories)
      if (this.seenDirs.has(d)) break;
      this.seenDirs.add(d);
      if (existsSync(d)) break;
      missing.push(d);
    }
    this.newDirs.push(...missing);
  }

  /** transaction.replace: a new truncation point for a journaled file (a revlog split). */
  replace(file: string, offset: number): void {
    this.checkOpen();
    if (!this.offsets.has(file)) throw new SluiceError('IO', `${file} is not part of the transaction`);
    if (this.offsets.get(file) === 0 && offset === 0) return;
    this.offsets.set(file, offset);
    this.flushJournal();
    writeSync(this.journalFd, Buffer.from(`${file}\0${offset}\n`, 'latin1'));
  }

  findOffset(file: string): number | undefined {
    return this.offsets.get(file);
  }

  /** transaction.addbackup: copies `file` aside before it is rewritten (absent: removed on abort). */
  addBackup(file: string, location: VfsLocation = ''): void {
    this.checkOpen();
    if (this.offsets.has(file) || this.backupMap.has(file)) return;
    const path = vfsPath(this.vfs, file, location);
    const slash = file.lastIndexOf('/');
    const backupName = `${file.slice(0, slash + 1)}${JOURNAL}.backup.${file.slice(slash + 1)}`;
    let backup = '';
    if (existsSync(path)) {
      copyReplacing(path, vfsPath(this.vfs, backupName, location));
      backup = backupName;
    }
    this.backups.push({ location, file, backup });
    this.backupMap.add(file);
    writeSync(this.backupFd, Buffer.from(`${location}\0${file}\0${backup}\0${0}\n`, 'latin1'));
  }

  /** Runs at close, in the order of the category names (hg sorts them: `cl-…` before `flush-…`). */
  addFinalize(category: string, fn: Finalizer): void {
    this.finalizers.set(category, fn);
  }

  /** Runs after close or abort, whatever happened (closing file handles). */
  addCleanup(fn: () => void): void {
    this.cleanups.push(fn);
  }

  async close(): Promise<void> {
    this.checkOpen();
    try {
      for (const category of [...this.finalizers.keys()].sort()) await this.finalizers.get(category)!();
    } catch (e) {
      await this.abort();
      throw e;
    }
    this.state = 'closed';
    this.runCleanups();
    this.flushJournal();
    closeSync(this.journalFd);
    closeSync(this.backupFd);
    if (this.undo) {
      this.writeUndo();
      // the journal goes first (renamed to `undo`): from here on the transaction is committed
      renameOver(join(this.vfs.storeDir, JOURNAL), join(this.vfs.storeDir, 'undo'));
    } else unlinkQuiet(join(this.vfs.storeDir, JOURNAL));
    unlinkQuiet(join(this.vfs.storeDir, JOURNAL + '.backupfiles'));
    for (const [location, name] of REPO_JOURNAL_FILES) {
      const journal = plainOrStore(this.vfs, name, location);
      if (this.undo) renameOver(journal, plainOrStore(this.vfs, undoName(name), location));
      else unlinkQuiet(journal);
    }
    for (const b of this.backups) if (b.backup) unlinkQuiet(vfsPath(this.vfs, b.backup, b.location));
  }

  /** transaction._writeundo: `undo.backupfiles`, each backup copied to its `undo.backup.*` name. */
  private writeUndo(): void {
    let text = `${BACKUP_VERSION}\n`;
    for (const b of this.backups) {
      let u = '';
      if (b.backup) {
        u = undoName(b.backup);
        copyReplacing(vfsPath(this.vfs, b.backup, b.location), vfsPath(this.vfs, u, b.location));
      }
      text += `${b.location}\0${b.file}\0${u}\0${0}\n`;
    }
    writeReplacing(join(this.vfs.storeDir, 'undo.backupfiles'), text, 'latin1');
  }

  /** Plays the journal back; the repository is as it was before the transaction. */
  async abort(): Promise<void> {
    if (this.state !== 'open') return;
    this.state = 'aborted';
    this.runCleanups();
    closeSync(this.journalFd);
    closeSync(this.backupFd);
    playback(
      this.vfs,
      [...this.offsets],
      this.backups.map((b) => [b.location, b.file, b.backup]),
    );
    // deepest first; one still holding something (another writer's file) stays
    for (const d of this.newDirs.sort((a, b) => b.length - a.length)) {
      try {
        rmdirSync(d);
      } catch {
        // not empty, or already gone
      }
    }
  }

  private runCleanups(): void {
    for (const fn of this.cleanups.splice(0)) {
      try {
        fn();
      } catch {
        // closing a handle cannot make things worse than they are
      }
    }
  }

  private checkOpen(): void {
    if (this.state !== 'open') throw new SluiceError('IO', `transaction already ${this.state}`);
  }
}

/** A journal file's name in its vfs, not store-encoded (journal.* are plain names in both). */
function plainOrStore(vfs: RepoVfs, name: string, location: VfsLocation): string {
  return join(location === 'plain' ? vfs.hgDir : vfs.storeDir, name);
}

/** localrepo.undoname: `journal…` → `undo…` in the file name (not the directory). */
function undoName(file: string): string {
  const slash = file.lastIndexOf('/');
  return file.slice(0, slash + 1) + file.slice(slash + 1).replace(JOURNAL, 'undo');
}

/** aftertrans: the old `undo` file goes, then `src` takes its name (nothing when src is absent). */
function renameOver(src: string, dest: string): void {
  unlinkQuiet(dest);
  try {
    renameSync(src, dest);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
}

/** transaction._playback: truncate, unlink new files, restore backups, remove the journal. */
function playback(
  vfs: RepoVfs,
  entries: [string, number][],
  backups: [VfsLocation, string, string][],
  report: (m: string) => void = () => undefined,
): void {
  const last = new Map(entries); // dict(entries): the last offset of a file wins
  for (const [file, offset] of [...last].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))) {
    const path = vfsPath(vfs, file);
    if (offset) {
      // vfs(f, 'a'): a file still shared with a hard-linked clone's source is copied first
      const fd = openForUpdate(path);
      try {
        const size = fstatSync(fd).size;
        if (size < offset)
          throw new SluiceError(
            'ABANDONED_TRANSACTION',
            `attempted to truncate ${file} to ${offset} bytes, but it was already ${size} bytes`,
          );
        ftruncateSync(fd, offset);
      } finally {
        closeSync(fd);
      }
    } else {
      unlinkQuiet(path);
    }
  }
  for (const [location, file, backup] of backups) {
    if (file && backup) {
      try {
        copyReplacing(vfsPath(vfs, backup, location), vfsPath(vfs, file, location));
      } catch (e) {
        report(`failed to recover ${file} (${(e as Error).message})`);
      }
    } else {
      unlinkQuiet(vfsPath(vfs, file || backup, location));
    }
  }
  unlinkQuiet(join(vfs.storeDir, JOURNAL + '.backupfiles'));
  unlinkQuiet(join(vfs.storeDir, JOURNAL));
  for (const [location, , backup] of backups) if (backup) unlinkQuiet(vfsPath(vfs, backup, location));
  // what _writejournal saved for undo: hg leaves it behind on abort; Sluice leaves nothing
  for (const [location, name] of REPO_JOURNAL_FILES) unlinkQuiet(plainOrStore(vfs, name, location));
  // a changelog diverted to 00changelog.i.a by an interrupted first transaction (changelog._divert)
  unlinkQuiet(join(vfs.storeDir, '00changelog.i.a'));
}

/**
 * transaction.rollback / localrepo.recover: plays back a journal left by a crash. Returns false
 * when there is none. The caller holds the store lock.
 */
export function rollbackJournal(vfs: RepoVfs, report: (m: string) => void = () => undefined): boolean {
  const journal = join(vfs.storeDir, JOURNAL);
  let text: string;
  try {
    text = readFileSync(journal, 'latin1');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw toSluiceError(e);
  }
  const entries: [string, number][] = [];
  for (const line of text.split('\n')) {
    if (!line) continue;
    const m = /^([^\0]+)\0(\d+)$/.exec(line);
    if (!m || !isJournalPath(m[1]!)) {
      report(`couldn't read journal entry ${JSON.stringify(line)}!`);
      continue;
    }
    entries.push([m[1]!, Number(m[2])]);
  }
  const backups: [VfsLocation, string, string][] = [];
  let btext = '';
  try {
    btext = readFileSync(journal + '.backupfiles', 'latin1');
  } catch {
    // no backups
  }
  const lines = btext.split('\n');
  if (lines[0] && lines[0] !== String(BACKUP_VERSION)) {
    report('journal was created by a different version of Mercurial');
  } else {
    for (const line of lines.slice(1)) {
      if (!line) continue;
      const [l, f, b] = line.split('\0');
      if ((l !== '' && l !== 'plain') || f === undefined || b === undefined) continue;
      if ((f && !isJournalPath(f)) || (b && !isJournalPath(b))) continue;
      backups.push([l, f, b]);
    }
  }
  // everything is audited before anything is played back: a refused journal changes nothing
  for (const [file, offset] of entries) auditJournalPath(vfs, file, '', offset > 0);
  for (const [location, file, backup] of backups) {
    if (file) auditJournalPath(vfs, file, location, !!backup);
    if (backup) auditJournalPath(vfs, backup, location, !!file);
  }
  playback(vfs, entries, backups, report);
  return true;
}

/**
 * The vfs pathauditor's symlink check (pathutil.pathauditor._checkfs) for a journal found on disk:
 * no directory between the vfs root and the file is a symbolic link, nor the file itself when it
 * is read, truncated or written (unlinking a link only removes the link). A hostile repository's
 * journal cannot make a rollback truncate, delete or overwrite anything outside it.
 */
function auditJournalPath(vfs: RepoVfs, file: string, location: VfsLocation, followed: boolean): void {
  const root = location === 'plain' ? vfs.hgDir : vfs.storeDir;
  const parts = (location === 'plain' ? file : vfs.encode(file)).split('/');
  let at = root;
  for (const [i, part] of parts.entries()) {
    at = join(at, part);
    if (i === parts.length - 1 && !followed) return;
    const st = lstatSync(at, { throwIfNoEntry: false });
    if (!st) return;
    if (st.isSymbolicLink())
      throw new SluiceError(
        'UNSAFE_PATH',
        `the journal of an interrupted transaction names '${file}', which traverses symbolic link '${parts.slice(0, i + 1).join('/')}': not rolled back (remove the journal files in ${vfs.storeDir} by hand)`,
        { name: file },
      );
  }
}

/** A journal names files inside the repository only (a hostile journal must not truncate /etc/…). */
function isJournalPath(p: string): boolean {
  if (p.startsWith('/') || p.includes('\\') || /^[A-Za-z]:/.test(p)) return false;
  return p.split('/').every((s) => s !== '' && s !== '.' && s !== '..');
}

/** For tests and callers that need the directory of a vfs file. */
export function vfsDir(vfs: RepoVfs, file: string, location: VfsLocation = ''): string {
  return dirname(vfsPath(vfs, file, location));
}
