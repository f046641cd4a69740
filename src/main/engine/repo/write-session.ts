// A repository opened for writing, as localrepo.transaction sets one up: `.hg/wlock` then
// `.hg/store/lock` (lock.ts), a journal left by a crash rolled back first (localrepo.recover), one
// transaction (transaction.ts), the revlog writers, and what changes at close: phaseroots,
// bookmarks and fncache (each backed up in the journal first), the changelog made visible last but
// one step (changelog._finalize), caches hg would find stale removed.

import { existsSync, lstatSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { FreeSpaceGuard, type FreeSpacePolicy } from './free-space';
import { SluiceError, toSluiceError } from '../errors';
import { maxRevisionSize } from '../format/limits';
import { prepareZstd } from '../codec/zstd';
import { RevlogWriter } from '../revlog/writer';
import { revlogFormatFor, type RevlogFormat } from '../revlog/writer-options';
import { writeNewFiles, type NewFile } from '../revlog/write-io';
import { TextBufferPool } from '../revlog/text-cache';
import { NodeChecks } from '../revlog/node-checks';
import { storePathEncoder } from '../store/encoding';
import { FncacheAdditions } from '../store/fncache';
import { entryNameProblem } from '../store/paths';
import {
  bookmarksPath,
  locateRepository,
  readSmallFileSync,
  unknownFeaturesError,
  unsupportedRequirements,
  type RepoLocation,
} from '../store/requirements';
import { ChangelogGraph, PHASE_DRAFT, PHASE_PUBLIC, computePhases, parsePhaseRoots } from './changelog-graph';
import { acquireLock, readLockTimeouts, type HeldLock, type LockOptions } from './lock';
import { addMarkersV1, mergeObsmarkers, type MarkerBlock } from './obsstore';
import { Transaction, rollbackJournal, type RepoVfs } from './transaction';
import { writeAtomic, writeReplacing } from './vfs';
import { STATE_FILE_MAX, readStateFileSync } from './state-file';

/**
 * New filelogs written together (closeFilelog): at most this many, or this many bytes. Small on
 * purpose: chunks held across many files outlive the young generation, and 512 files per batch
 * raised the clone's peak RSS from ~150 to ~200 MB for no measurable CPU gain over 32.
 */
const NEW_FILE_BATCH = 32;
const NEW_FILE_BATCH_BYTES = 1 << 20;
/**
 * Texts a filelog writer keeps for later deltas besides the last one. A file group's deltas are
 * mostly against the revision before (the last text); a larger cache mostly held texts never read
 * again, allocated afresh per revision. Apply of the history corpus's none-v2 bundle (Node 24,
 * loaded machine, 3 runs each): 4 MiB (the manifests' budget) CPU 10.9-13.9 s, peak RSS 218-229
 * MB, 2.2 GB of ArrayBuffers allocated; 1 MiB 10.2-11.3 s, 227-230 MB; 256 KiB 9.4-10.5 s,
 * 198-209 MB, 0.24 GB.
 */
const FILELOG_CACHE_BYTES = 256 << 10;
/**
 * Free text buffers kept for the next filelogs (revlog/text-cache.ts TextBufferPool). History
 * corpus apply: 373 MB of ArrayBuffers allocated in all with 2 MiB, 237 MB with 4 MiB.
 */
const TEXT_POOL_BYTES = 4 << 20;

export interface WriteSessionOptions {
  /** wait this long for a lock held by hg or another Sluice (default: ui.timeout, as hg reads it) */
  lockTimeoutMs?: number;
  /**
   * the repository's locks, taken by the caller (lockRepository) for longer than this session: a
   * pull holds them from before discovery to its last transaction, as exchange.pull does; the
   * session neither takes nor releases them
   */
  heldLocks?: RepoLocks;
  signal?: AbortSignal;
  log?: (level: 'debug' | 'info' | 'warn', message: string) => void;
  /** the transaction's description for `hg rollback` (undo.desc): `unbundle`, `pull\nURL`… */
  desc?: string;
  /** false: no undo.* at close (a follow-up transaction: `hg rollback` still undoes the one before) */
  undo?: boolean;
  /** how the revlog writes watch the free space (a changegroup declares no size) */
  freeSpace?: FreeSpacePolicy;
  /** the caller holds `.hg/wlock` already (hg.updatetotally moves a bookmark inside its wlock) */
  wlockHeld?: boolean;
}

/** A repository's `.hg/wlock` and `.hg/store/lock`, held together. */
export interface RepoLocks {
  /** wlock first, as taken (released in reverse) */
  readonly all: readonly HeldLock[];
  release(): void;
}

/**
 * localrepo.ensurerequirementsrecognized and the writer's own limits, before any lock or byte:
 * UNSUPPORTED_REQUIREMENTS in hg's words, naming each requirement.
 */
export function refuseUnwritable(location: RepoLocation): void {
  const reqs = location.requirements;
  const missing = unsupportedRequirements(reqs);
  if (missing.length) throw unknownFeaturesError(missing);
  if (!reqs.has('revlogv1') || !reqs.has('store'))
    throw new SluiceError(
      'UNSUPPORTED_REQUIREMENTS',
      'Sluice writes only to repositories with a store and revlogv1 (hg ≥ 0.9.2)',
    );
}

type LogFn = (level: 'debug' | 'info' | 'warn', message: string) => void;

/** How a writer waits for hg's locks: ui.timeout and ui.timeout.warn unless the caller says. */
async function lockOptionsFor(
  repoRoot: string,
  opts: Pick<WriteSessionOptions, 'lockTimeoutMs' | 'signal'>,
  log: LogFn,
): Promise<(description: string) => LockOptions> {
  const configured = await readLockTimeouts(repoRoot);
  return (description) => ({
    ...configured,
    ...(opts.lockTimeoutMs !== undefined ? { timeoutMs: opts.lockTimeoutMs } : {}),
    ...(opts.signal ? { signal: opts.signal } : {}),
    description,
    onWait: (message: string) => log('warn', message),
  });
}

/** hg's order: wlock, then the store lock; both released if the second cannot be had. */
async function takeLocks(
  location: RepoLocation,
  lockOpts: (description: string) => LockOptions,
  wlockHeld = false,
): Promise<RepoLocks> {
  const all: HeldLock[] = [];
  const release = (): void => {
    for (const l of [...all].reverse()) l.release();
  };
  try {
    if (!wlockHeld)
      all.push(
        await acquireLock(join(location.hgDir, 'wlock'), lockOpts(`working directory of ${location.root}`)),
      );
    all.push(await acquireLock(join(location.storeDir, 'lock'), lockOpts(`repository ${location.root}`)));
  } catch (e) {
    release();
    throw toSluiceError(e);
  }
  return { all, release };
}

/**
 * The repository at repoRoot checked as a writer would (requirements) and locked, for a caller
 * that writes in several transactions or talks to a server first (exchange.pull takes both locks
 * before discovery): a locked or read-only repository is refused before any transfer.
 */
export async function lockRepository(
  repoRoot: string,
  opts: Pick<WriteSessionOptions, 'lockTimeoutMs' | 'signal' | 'log'> = {},
): Promise<RepoLocks> {
  const location = await locateRepository(repoRoot);
  refuseUnwritable(location);
  return takeLocks(location, await lockOptionsFor(repoRoot, opts, opts.log ?? (() => undefined)));
}

/** Bookmark changes as bundle2's `bookmarks` part carries them: null deletes. */
export type BookmarkChanges = Map<string, string | null>;

export class RepoWriteSession {
  readonly tx: Transaction;
  readonly format: RevlogFormat;
  private cl: RevlogWriter | undefined;
  private readonly manifests = new Map<string, RevlogWriter>();
  /** writers with open files, closed at the end whatever happens */
  private readonly openWriters = new Set<RevlogWriter>();
  private fncache: FncacheAdditions | undefined;
  /** store directories already checked not to be symbolic links */
  private readonly auditedDirs = new Set<string>();
  /** store directories that did not exist when looked at: this session's writers create them */
  private readonly createdDirs = new Set<string>();
  private fncacheDirty = false;
  private clStart = 0;
  private targetPhase = PHASE_DRAFT;
  private phaseHeads: [number, Uint8Array][] = [];
  private bookmarks: BookmarkChanges = new Map();
  /** a share -B's bookmarks, for its source's `.hg/bookmarks` once this session's locks are released */
  private sourceBookmarks: { path: string; data: Buffer } | undefined;
  private done = false;
  /** new filelogs closed but not written yet (closeFilelog), and their bytes */
  private newFiles: NewFile[] = [];
  private newFileBytes = 0;
  /** maxRevisionSize(), read once (the environment lookup cost ~1 µs per new filelog) */
  private readonly maxText = maxRevisionSize();
  /** node checks of large texts (manifests) on a second thread (revlog/node-checks.ts) */
  private readonly checks = new NodeChecks();
  /** buffers of file texts passed from each filelog writer to the next (revlog/text-cache.ts) */
  private readonly textPool = new TextBufferPool(TEXT_POOL_BYTES);
  /** what the revlogs write, against the free space: a changegroup that never ends stops */
  private readonly space: FreeSpaceGuard;

  private constructor(
    readonly location: RepoLocation,
    readonly vfs: RepoVfs,
    private readonly locks: readonly HeldLock[],
    private readonly log: (level: 'debug' | 'info' | 'warn', message: string) => void,
    private readonly undo: boolean,
    freeSpace: FreeSpacePolicy | undefined,
    private readonly lockOptions: (description: string) => LockOptions,
  ) {
    this.format = revlogFormatFor(location.requirements);
    this.space = new FreeSpaceGuard(join(vfs.storeDir, '00changelog.i'), 'the transaction', freeSpace);
    this.tx = Transaction.open(vfs, { undo });
    // after commit every writer was flushed; after an error what is queued is rolled back anyway
    this.tx.addCleanup(() => {
      for (const w of [...this.openWriters]) w.abandon();
    });
  }

  private writerOptions() {
    return {
      tx: this.tx,
      format: this.format,
      onNewFile: (p: string) => this.noteNewFile(p),
      onClose: (w: RevlogWriter) => this.openWriters.delete(w),
      maxText: this.maxText,
      checks: this.checks,
      onWrite: (bytes: number) => this.space.take(bytes),
      textPool: this.textPool,
    };
  }

  private track(w: RevlogWriter): RevlogWriter {
    this.openWriters.add(w);
    return w;
  }

  static async open(repoRoot: string, opts: WriteSessionOptions = {}): Promise<RepoWriteSession> {
    const location = await locateRepository(repoRoot);
    const reqs = location.requirements;
    refuseUnwritable(location);
    const log = opts.log ?? (() => undefined);
    // revlog chunks to read (delta bases) are zstd: the wasm decoder loads while the locks are
    // taken and the changesets arrive, not when the first base is rebuilt
    if (reqs.has('revlog-compression-zstd')) void prepareZstd();
    const vfs: RepoVfs = {
      hgDir: location.hgDir,
      storeDir: location.storeDir,
      encode: storePathEncoder(reqs),
    };
    const lockOpts = await lockOptionsFor(repoRoot, opts, log);
    const owned = opts.heldLocks ? undefined : await takeLocks(location, lockOpts, opts.wlockHeld);
    let session: RepoWriteSession;
    try {
      if (rollbackJournal(vfs, (m) => log('warn', m))) log('warn', 'rolled back an interrupted transaction');
      session = new RepoWriteSession(
        location,
        vfs,
        owned?.all ?? [],
        log,
        opts.undo ?? true,
        opts.freeSpace,
        lockOpts,
      );
    } catch (e) {
      owned?.release();
      throw toSluiceError(e);
    }
    try {
      if (session.undo) writeJournal(location, session.changelog().length, opts.desc ?? 'unbundle');
    } catch (e) {
      await session.abort();
      throw toSluiceError(e);
    }
    return session;
  }

  get requirements(): ReadonlySet<string> {
    return this.location.requirements;
  }

  changelog(): RevlogWriter {
    if (!this.cl) {
      this.cl = this.track(
        RevlogWriter.open({ ...this.writerOptions(), radix: '00changelog', changelog: true }),
      );
      this.clStart = this.cl.length;
    }
    return this.cl;
  }

  /** The root manifest (dir '') or a tree manifest directory (`dir/` with its slash). */
  manifest(dir = ''): RevlogWriter {
    let w = this.manifests.get(dir);
    if (!w) {
      if (dir !== '') {
        if (!this.requirements.has('treemanifest'))
          throw new SluiceError(
            'UNSUPPORTED_REQUIREMENTS',
            `the changegroup has directory manifests (${JSON.stringify(dir)}) but the repository does not use treemanifest`,
          );
        checkTrackedPath(dir.replace(/\/$/, ''), 'manifest directory');
        if (!dir.endsWith('/'))
          throw new SluiceError(
            'UNSAFE_PATH',
            `manifest directory ${JSON.stringify(dir)} does not end with '/'`,
          );
      }
      const radix = dir === '' ? '00manifest' : `meta/${dir}00manifest`;
      if (dir !== '') this.checkNoSymlink(`${radix}.i`);
      w = this.track(RevlogWriter.open({ ...this.writerOptions(), radix }));
      this.manifests.set(dir, w);
    }
    return w;
  }

  /** A filelog writer for tracked path `path` (checked: nothing reaches `.hg/` or leaves the store). Close it when done. */
  filelog(path: string): RevlogWriter {
    checkTrackedPath(path, 'file');
    const radix = `data/${path}`;
    // in a directory this session creates, only the files it journaled exist (a clone: all of
    // them new, no lstat per file)
    const journaled = this.tx.findOffset(`${radix}.i`) !== undefined;
    if (journaled) this.writeNewFiles(); // it may be one of them: read from disk
    const absent = this.checkNoSymlink(`${radix}.i`) && !journaled;
    // a repository that had changesets before this session: its filelogs mostly exist (a pull)
    this.changelog();
    const likelyExists = this.clStart > 0;
    return this.track(
      RevlogWriter.open({
        ...this.writerOptions(),
        radix,
        absent,
        likelyExists,
        cacheBytes: FILELOG_CACHE_BYTES,
      }),
    );
  }

  /**
   * Closes a filelog writer. A new small filelog is written with others in a batch (one journal
   * write for up to NEW_FILE_BATCH files instead of one per file: ~20k in a clone); every
   * journal line is on disk before its file's first byte, as with hg's transaction.
   */
  closeFilelog(w: RevlogWriter): void {
    w.close((f) => {
      this.newFiles.push(f);
      this.newFileBytes += f.bytes;
      if (this.newFiles.length >= NEW_FILE_BATCH || this.newFileBytes >= NEW_FILE_BATCH_BYTES)
        this.writeNewFiles();
    });
  }

  private writeNewFiles(): void {
    if (this.newFiles.length === 0) return;
    const files = this.newFiles;
    this.newFiles = [];
    this.newFileBytes = 0;
    this.tx.flushJournal();
    writeNewFiles(files);
  }

  /**
   * The store vfs's pathauditor (_checkfs): no directory between the store and the encoded file is
   * a symbolic link, so a revlog is never created outside the store through one. Each directory
   * is looked at once. True when the file's directory did not exist when first looked at (this
   * session creates it).
   */
  private checkNoSymlink(storePath: string): boolean {
    const parts = this.vfs.encode(storePath).split('/');
    let dir = '';
    for (const part of parts.slice(0, -1)) {
      dir = dir ? `${dir}/${part}` : part;
      if (this.createdDirs.has(dir)) return true;
      if (this.auditedDirs.has(dir)) continue;
      const st = lstatSync(join(this.vfs.storeDir, dir), { throwIfNoEntry: false });
      if (st?.isSymbolicLink())
        throw new SluiceError(
          'UNSAFE_PATH',
          `path '${storePath}' traverses symbolic link '${dir}' in the store`,
          { name: storePath, through: dir },
        );
      if (st === undefined) {
        // created by the writer below here: nothing to traverse
        this.createdDirs.add(dir);
        return true;
      }
      this.auditedDirs.add(dir);
    }
    return false;
  }

  private noteNewFile(storePath: string): void {
    if (!this.requirements.has('fncache')) return;
    if (!storePath.startsWith('data/') && !storePath.startsWith('meta/')) return;
    if (!this.fncache) {
      let raw: Buffer = Buffer.alloc(0);
      try {
        raw = readFileSync(join(this.vfs.storeDir, 'fncache'));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw toSluiceError(e);
      }
      this.fncache = new FncacheAdditions(raw);
    }
    if (this.fncache.add(storePath)) this.fncacheDirty = true;
  }

  /** obsstore.mergemarkers: the part's markers the store lacks, appended in this transaction. */
  addObsmarkers(payload: Uint8Array): number {
    return mergeObsmarkers(this.vfs.storeDir, this.tx, payload);
  }

  /** obsstore.add: format-1 markers the store lacks, appended in this transaction. */
  addMarkers(markers: MarkerBlock): number {
    return addMarkersV1(this.vfs.storeDir, this.tx, markers);
  }

  /** Phase of the changesets added (hg cg.apply's targetphase: draft unless told otherwise). */
  setTargetPhase(phase: number): void {
    this.targetPhase = phase;
  }

  /** bundle2 phase-heads: ancestors of each head move to at most that phase (phases.updatephases). */
  addPhaseHeads(heads: [number, Uint8Array][]): void {
    this.phaseHeads.push(...heads);
  }

  /** bundle2 bookmarks part in 'apply' mode (bookmarks.applychanges). */
  setBookmarks(changes: BookmarkChanges): void {
    for (const [k, v] of changes) this.bookmarks.set(k, v);
  }

  /** Revs [start, end) the changelog got in this session. */
  addedRange(): { start: number; end: number } {
    const end = this.cl ? this.cl.length : this.clStart;
    return { start: this.clStart, end };
  }

  /** The changelog graph including what this session added (not yet visible on disk). */
  graph(): ChangelogGraph {
    const cl = this.changelog();
    const n = cl.length;
    const nodes: string[] = new Array(n);
    const p1 = new Int32Array(n);
    const p2 = new Int32Array(n);
    for (let r = 0; r < n; r++) {
      nodes[r] = Buffer.from(cl.node(r)).toString('latin1');
      const ps = cl.parents(r);
      p1[r] = ps[0];
      p2[r] = ps[1];
    }
    return new ChangelogGraph(nodes, p1, p2);
  }

  /** Writes phases, bookmarks, the changelog and fncache, then closes the transaction and unlocks. */
  async commit(): Promise<void> {
    if (this.done) throw new SluiceError('IO', 'write session already finished');
    try {
      // every revision hashes to its node before anything is made visible
      await this.checks.drain();
      // the revlogs' queued bytes reach their files before anything makes the changesets visible
      this.writeNewFiles();
      for (const w of this.openWriters) w.flush();
      this.writePhases();
      this.writeBookmarks();
      // the changelog goes last but fncache (hg: finalize categories `cl-…` < `flush-fncache`)
      this.tx.addFinalize('cl-finalize', () => this.cl?.finalize());
      this.tx.addFinalize('flush-fncache', () => this.writeFncache());
      this.tx.addFinalize('zz-caches', () => this.dropStaleCaches());
      await this.tx.close();
    } catch (e) {
      await this.tx.abort().catch(() => undefined);
      this.release();
      throw toSluiceError(e);
    }
    this.release();
    if (this.sourceBookmarks) await this.writeSourceBookmarks(this.sourceBookmarks);
  }

  /**
   * The share extension's recordchange/writerepo: a share -B's bookmarks written to its source too,
   * after the transaction closed, under the source's wlock. Taken once this session's locks are
   * released (hg takes it holding them: the store lock is the source's, so an hg commit there,
   * wlock then lock, would wait on this session while it waited on that commit).
   */
  private async writeSourceBookmarks({ path, data }: { path: string; data: Buffer }): Promise<void> {
    const owner = this.location.storeOwnerHgDir;
    try {
      const lock = await acquireLock(
        join(owner, 'wlock'),
        this.lockOptions(`working directory of ${dirname(owner)}`),
      );
      try {
        writeAtomic(path, data);
      } finally {
        lock.release();
      }
    } catch (e) {
      throw toSluiceError(e);
    }
  }

  /**
   * The earliest node mismatch among the checks still running (waited for), if any: after an
   * error, the one to report (a text that does not hash to its node makes later deltas fail too).
   */
  firstCheckFailure(): Promise<SluiceError | undefined> {
    return this.checks.firstFailure();
  }

  /** Rolls everything back and unlocks. Never throws. */
  async abort(): Promise<void> {
    if (this.done) return;
    try {
      await this.tx.abort();
    } catch (e) {
      this.log('warn', `rollback failed: ${(e as Error).message}`);
    }
    this.release();
  }

  private release(): void {
    this.checks.close();
    if (this.done) return;
    this.done = true;
    for (const l of [...this.locks].reverse()) l.release();
  }

  /** phases.registernew + advanceboundary, written as hg's phaseroots (roots of each phase ≥ p). */
  private writePhases(): void {
    const { start, end } = this.addedRange();
    if (end === start && this.phaseHeads.length === 0) return;
    const path = join(this.vfs.storeDir, 'phaseroots');
    const text = readSmallFileSync(path) ?? '';
    const g = this.graph();
    const roots = parsePhaseRoots(text);
    const before = computePhases(g, roots);
    const phase = Uint8Array.from(before);
    for (let r = start; r < end; r++) {
      const p1 = g.p1[r]!;
      const p2 = g.p2[r]!;
      phase[r] = Math.max(this.targetPhase, p1 >= 0 ? phase[p1]! : 0, p2 >= 0 ? phase[p2]! : 0);
    }
    // advanceboundary: public heads first, then draft (phases.updatephases walks allphases in order)
    for (const target of [...new Set(this.phaseHeads.map(([p]) => p))].sort((a, b) => a - b)) {
      const heads: number[] = [];
      for (const [p, node] of this.phaseHeads) {
        if (p !== target) continue;
        const r = g.rev(Buffer.from(node).toString('latin1'));
        if (r !== undefined) heads.push(r);
      }
      const anc = g.ancestors(heads);
      for (let r = 0; r < g.length; r++) if (anc[r] && phase[r]! > target) phase[r] = target;
    }
    let changed = false;
    for (let r = 0; r < g.length && !changed; r++)
      if (phase[r] !== (r < before.length ? before[r] : 0)) changed = true;
    if (!changed && text !== '') return;
    if (!changed && ![...phase].some((p) => p !== PHASE_PUBLIC)) return;
    const levels = [...new Set([...phase].filter((p) => p > 0))].sort((a, b) => a - b);
    let out = '';
    for (const level of levels) {
      const rs: string[] = [];
      for (let r = 0; r < g.length; r++) {
        if (phase[r]! < level) continue;
        const p1 = g.p1[r]!;
        const p2 = g.p2[r]!;
        if ((p1 >= 0 && phase[p1]! >= level) || (p2 >= 0 && phase[p2]! >= level)) continue;
        rs.push(Buffer.from(g.nodes[r]!, 'latin1').toString('hex'));
      }
      for (const h of rs.sort()) out += `${level} ${h}\n`;
    }
    this.tx.addBackup('phaseroots');
    writeAtomic(path, Buffer.from(out, 'latin1'));
  }

  /**
   * bmstore.applychanges + _write: the bookmarks as they are (a share -B's are its source's:
   * bookmarksPath) with this session's changes, in the repository's own file within the
   * transaction; a share -B's source gets the same text after it (writeSourceBookmarks).
   */
  private writeBookmarks(): void {
    if (this.bookmarks.size === 0) return;
    const inStore = this.requirements.has('bookmarksinstore');
    const path = inStore ? join(this.vfs.storeDir, 'bookmarks') : join(this.vfs.hgDir, 'bookmarks');
    const current = bookmarksPath(this.location);
    const marks = new Map<string, string>();
    try {
      for (const line of readFileSync(current, 'latin1').split('\n')) {
        const m = /^([0-9a-f]{40}) (.+)$/.exec(line);
        if (m) marks.set(m[2]!, m[1]!);
      }
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw toSluiceError(e);
    }
    const g = this.graph();
    for (const [name, hex] of this.bookmarks) {
      if (hex === null) marks.delete(name);
      else if (g.rev(Buffer.from(hex, 'hex').toString('latin1')) === undefined)
        this.log('warn', `ignoring bookmark ${name}: unknown node ${hex.slice(0, 12)}`);
      else marks.set(name, hex);
    }
    const text = [...marks]
      .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
      .map(([n, h]) => `${h} ${n}\n`)
      .join('');
    this.tx.addBackup('bookmarks', inStore ? '' : 'plain');
    writeAtomic(path, Buffer.from(text, 'latin1'));
    if (current !== path) this.sourceBookmarks = { path: current, data: Buffer.from(text, 'latin1') };
  }

  private writeFncache(): void {
    if (!this.fncacheDirty || !this.fncache?.changed) return;
    this.tx.addBackup('fncache');
    // store.fncache.write's append mode (an atomictemp copy with the new lines after the old)
    writeAtomic(join(this.vfs.storeDir, 'fncache'), this.fncache.serialize());
  }

  /**
   * Caches keyed by the changelog's tip that Sluice does not update: the persistent nodemaps
   * (hg rebuilds them when missing) and the branch/tag heads caches (hg recomputes them).
   */
  private dropStaleCaches(): void {
    const { start, end } = this.addedRange();
    if (end === start) return;
    for (const f of ['00changelog.n', '00manifest.n']) {
      const p = join(this.vfs.storeDir, f);
      if (existsSync(p)) rmSync(p, { force: true });
    }
    const cacheDir = this.location.cacheDir;
    let names: string[] = [];
    try {
      names = readdirSync(cacheDir);
    } catch {
      return;
    }
    // branch and tag heads caches are keyed by the old tip; rbc-* and hgtagsfnodes are per rev and stay valid
    for (const n of names) if (/^(branch2|tags2)(-|$)/.test(n)) rmSync(join(cacheDir, n), { force: true });
  }
}

/**
 * localrepo._writejournal: what `hg rollback` restores (as undo.*, once the transaction closed):
 * the dirstate (v1; a dirstate-v2 one is not saved, so hg's rollback leaves it), the branch, the
 * changelog length with the description, bookmarks and phaseroots as they are now.
 */
function writeJournal(location: RepoLocation, revs: number, desc: string): void {
  const { hgDir, storeDir, requirements } = location;
  const read = (path: string): Buffer =>
    readStateFileSync(path, { max: STATE_FILE_MAX.large, followLink: true }) ?? Buffer.alloc(0);
  if (!requirements.has('dirstate-v2')) {
    const ds = read(join(hgDir, 'dirstate'));
    // dirstate.savebackup writes the (empty) dirstate first when there is none
    writeReplacing(join(hgDir, 'journal.dirstate'), ds.length ? ds : Buffer.alloc(40));
  }
  const branch = read(join(hgDir, 'branch')).toString('latin1').trim() || 'default';
  writeReplacing(join(hgDir, 'journal.branch'), branch, 'latin1');
  writeReplacing(join(hgDir, 'journal.desc'), `${revs}\n${desc}\n`, 'latin1');
  const marksDir = requirements.has('bookmarksinstore') ? storeDir : hgDir;
  writeReplacing(join(marksDir, 'journal.bookmarks'), read(join(marksDir, 'bookmarks')));
  writeReplacing(join(storeDir, 'journal.phaseroots'), read(join(storeDir, 'phaseroots')));
}

/** A transaction that only changes bookmarks (bookmarks.applychanges inside repo.transaction). */
export async function commitBookmarkChanges(
  repoRoot: string,
  changes: BookmarkChanges,
  opts: WriteSessionOptions,
): Promise<void> {
  const session = await RepoWriteSession.open(repoRoot, opts);
  try {
    session.setBookmarks(changes);
    await session.commit();
  } catch (e) {
    await session.abort();
    throw e;
  }
}

/**
 * A tracked file (or manifest directory) name from a changegroup: a relative path of byte-string
 * segments, none empty, `.` or `..`, no `.hg` segment (pathutil.pathauditor), no NUL or newline.
 */
export function checkTrackedPath(path: string, what: string): void {
  const problem = entryNameProblem('s', `data/${path}.i`);
  const hgSegment = path.split('/').some((s) => s.toLowerCase() === '.hg');
  if (problem !== null || hgSegment) {
    throw new SluiceError(
      'UNSAFE_PATH',
      `unsafe ${what} name ${JSON.stringify(path.slice(0, 300))} in the changegroup: ${problem ?? "a '.hg' segment"}`,
      {
        name: path,
      },
    );
  }
}
