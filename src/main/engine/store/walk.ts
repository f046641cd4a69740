// The file list of a stream clone, exactly as Mercurial 6.3.2 builds it:
//   v1 (streamclone.generatev1): store.walk(), size-0 files skipped;
//   v2 (streamclone._v2_walk): the same store files, then phaseroots (non-publishing repos only),
//      obsstore (only when the client takes obsmarkers), then the cache files of
//      cacheutil.cachetocopy that exist.
// store.walk() = datafiles() then topfiles():
//   fncache stores: the fncache entries sorted bytewise, each stat'ed through the store encoding
//     (missing files skipped). Never derived from directory names: hashed `dh/` names are
//     irreversible.
//   plain `store` and pre-store repos: a directory walk of data/ and meta/ (their encodings are
//     reversible), sorted like basicstore._walk.
//   topfiles: the revlog files directly in the store directory, sorted as (type, name, size)
//     tuples and reversed, so data files precede their index and 00changelog.i comes last.

import { constants, lstat, lstatSync, readdir, stat, statSync, type Stats } from 'node:fs';
import { join, sep } from 'node:path';
import { cancelled, SluiceError, toSluiceError } from '../errors.js';
import { STATE_FILE_MAX, readStateFile } from '../repo/state-file.js';
import { decodeDir, decodeFilename, encodeFilename, storePathEncoder } from './encoding.js';
import { parseFncache } from './fncache.js';
import { readRepoConfig } from './hgrc.js';
import {
  assertSafeEntryName,
  displayName,
  FILEFLAGS_VOLATILE,
  isSafeEntryName,
  revlogType,
} from './paths.js';
import { locateRepository, streamRequirements, type RepoLocation } from './requirements.js';
import { StorePathAuditor } from './store-auditor.js';

export interface StoreFile {
  /** 's': relative to .hg/store, written through the store encoding; 'c': relative to .hg/cache. */
  vfs: 's' | 'c';
  /** Raw store path (= the v2 stream name; the v1 wire name is encodeDir(name)). */
  name: string;
  /** Size at listing time: exactly this many bytes are streamed. */
  size: number;
  /** Absolute path of the file on disk. */
  path: string;
  /**
   * hg's `_filefull`: the file may be rewritten rather than appended to (nodemap `.n`/`.nd`,
   * phaseroots, obsstore, caches), so a server copies it while holding the lock. False for
   * append-only revlog files, whose listed prefix stays valid after the lock is released.
   */
  full: boolean;
}

export interface ListStreamFilesOptions {
  version: 'v1' | 'v2';
  /** phases.publish; read from the repository's hgrc (default true) when not given. */
  publishing?: boolean;
  /** v2: include .hg/store/obsstore (hg does when the client's bundle2 caps accept its version). */
  includeObsmarkers?: boolean;
  /** Concurrent async stat calls (default 64). */
  concurrency?: number;
  /** 'auto' (default): sliced synchronous stats while they are cache hits, else async; see StatStrategy. */
  statStrategy?: StatStrategy;
  signal?: AbortSignal;
}

export interface StreamFileList {
  files: StoreFile[];
  /** Sum of the sizes (the stream's bytecount). */
  bytes: number;
  /** The streamed requirements: repository requirements ∩ STREAM_FIXED_REQUIREMENTS, sorted. */
  requirements: string[];
  /**
   * Size of .hg/store/obsstore, 0 when absent. hg refuses a v2 stream to a client that cannot take
   * markers when the repository has some ("server has obsolescence markers, but client cannot
   * receive them via stream clone"); a marker file holds more than its 1-byte version header.
   */
  obsstoreSize: number;
}

/** cacheutil.cachetocopy (repoview.filtertable order: visible, visible-hidden, served.hidden, served, immutable, base). */
export const CACHE_FILES_TO_COPY: readonly string[] = (() => {
  const filters = ['visible', 'visible-hidden', 'served.hidden', 'served', 'immutable', 'base'];
  return [
    'branch2',
    ...filters.map((f) => `branch2-${f}`),
    'rbc-names-v1',
    'rbc-revs-v1',
    'tags2',
    ...filters.map((f) => `tags2-${f}`),
    'hgtagsfnodes1',
  ];
})();

const DEFAULT_STAT_CONCURRENCY = 64;

// --- small promise wrappers over the callback API (fewer allocations than fs/promises) -------

function statOrNull(path: string, follow: boolean): Promise<Stats | null> {
  return new Promise((resolve, reject) => {
    (follow ? stat : lstat)(path, (err, st) => {
      if (!err) resolve(st);
      else if (err.code === 'ENOENT' || err.code === 'ENOTDIR') resolve(null);
      else reject(toSluiceError(err));
    });
  });
}

/**
 * O_NOFOLLOW where the platform has it (not Windows: there the lstat before the open decides), and
 * O_NONBLOCK: a FIFO swapped in after the listing must not hold the open waiting for a writer.
 */
export const OPEN_NO_FOLLOW = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);

/**
 * A file of the repository sent whole (phaseroots, obsstore, a cache): its content if it is a
 * regular file, null if it is absent, a symbolic link or anything else. A link is never followed:
 * one planted in a served repository would send a file from elsewhere on the server.
 */
export async function readRegularFileOrNull(path: string): Promise<Buffer | null> {
  try {
    return await readStateFile(path, { max: STATE_FILE_MAX.large });
  } catch (e) {
    if (e instanceof SluiceError && (e.code === 'UNSAFE_PATH' || e.details?.errno === 'EISDIR')) return null;
    throw e;
  }
}

interface DirEntry {
  name: string;
  isFile: boolean;
  isDirectory: boolean;
}

function listDir(dir: string): Promise<DirEntry[] | null> {
  return new Promise((resolve, reject) => {
    // latin1 names: file names are bytes, one char per byte like every engine-internal name.
    readdir(dir, { withFileTypes: true, encoding: 'latin1' as BufferEncoding }, (err, entries) => {
      if (err) {
        if (err.code === 'ENOENT' || err.code === 'ENOTDIR') resolve(null);
        else reject(toSluiceError(err));
        return;
      }
      resolve(
        entries.map((e) => ({ name: String(e.name), isFile: e.isFile(), isDirectory: e.isDirectory() })),
      );
    });
  });
}

/** What the walk keeps of a stat: sizes in a typed array (no 100k live Stats objects to collect). */
interface StatResults {
  /** Size, or -1 when the path does not exist. */
  sizes: Float64Array;
  /** 1 for a regular file. */
  regular: Uint8Array;
}

/**
 * How stats run. 'auto': synchronous stats in slices of 256 with a yield to the event loop
 * between slices, as long as they are cheap (page-cache hits: a few µs each), switching to
 * parallel async stats for the rest as soon as a slice averages more than 15 µs per file (cold
 * disk, network or Windows file systems, where overlapping requests pays). 'async': always the
 * parallel async pool. Measured on this 2-core box under load (~8), tmpfs: 100k warm stats take
 * ~0.65 s sliced-sync vs ~1.3 s through the 4-thread pool; the pool's per-request overhead only
 * pays off when a stat itself is slow.
 */
export type StatStrategy = 'auto' | 'async';

const SYNC_SLICE = 256;
const SYNC_MAX_AVERAGE_US = 15;

const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** stat (or lstat) of every path: sliced-sync while cheap (strategy 'auto'), then `concurrency` async at a time. */
interface StatOptions {
  concurrency: number;
  strategy: StatStrategy;
  signal: AbortSignal | undefined;
}

async function statMany(paths: string[], follow: boolean, io: StatOptions): Promise<StatResults> {
  const { concurrency, strategy, signal } = io;
  const results: StatResults = {
    sizes: new Float64Array(paths.length),
    regular: new Uint8Array(paths.length),
  };
  let start = 0;
  if (strategy === 'auto') {
    const statSyncFn = follow ? statSync : lstatSync;
    while (start < paths.length) {
      if (signal?.aborted) throw cancelled();
      const end = Math.min(start + SYNC_SLICE, paths.length);
      const t0 = performance.now();
      for (let i = start; i < end; i++) {
        let st: Stats | undefined;
        try {
          st = statSyncFn(paths[i]!, { throwIfNoEntry: false });
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'ENOTDIR') throw toSluiceError(e);
        }
        if (st === undefined) results.sizes[i] = -1;
        else {
          results.sizes[i] = st.size;
          results.regular[i] = st.isFile() ? 1 : 0;
        }
      }
      const averageUs = ((performance.now() - t0) * 1000) / (end - start);
      start = end;
      if (averageUs > SYNC_MAX_AVERAGE_US) break;
      if (start < paths.length) await yieldToEventLoop();
    }
  }
  if (start < paths.length) await statAsync(paths, start, follow, concurrency, results, signal);
  return results;
}

/** The async pool: paths[start..] stat'ed `concurrency` at a time into `results`. */
function statAsync(
  paths: string[],
  start: number,
  follow: boolean,
  concurrency: number,
  results: StatResults,
  signal?: AbortSignal,
): Promise<void> {
  const { sizes, regular } = results;
  const statFn = follow ? stat : lstat;
  let next = start;
  let running = 0;
  let failed = false;
  return new Promise((resolve, reject) => {
    const fail = (e: SluiceError): void => {
      if (!failed) {
        failed = true;
        reject(e);
      }
    };
    const launch = (): void => {
      while (!failed && running < concurrency && next < paths.length) {
        if (signal?.aborted) return fail(cancelled());
        const i = next++;
        running++;
        statFn(paths[i]!, (err, st) => {
          running--;
          if (err) {
            if (err.code === 'ENOENT' || err.code === 'ENOTDIR') sizes[i] = -1;
            else return fail(toSluiceError(err));
          } else {
            sizes[i] = st.size;
            regular[i] = st.isFile() ? 1 : 0;
          }
          if (next >= paths.length && running === 0) {
            if (!failed) resolve();
          } else launch();
        });
      }
    };
    if (next >= paths.length) resolve();
    else launch();
  });
}

/** A store revlog file as store.walk() yields it (type = store.FILEFLAGS_* bits). */
export interface WalkedFile {
  type: number;
  name: string;
  size: number;
  path: string;
}

/** Tuple order of Python's list.sort() on (type, name, size). */
function compareWalked(a: WalkedFile, b: WalkedFile): number {
  if (a.type !== b.type) return a.type - b.type;
  if (a.name !== b.name) return a.name < b.name ? -1 : 1;
  return a.size - b.size;
}

/**
 * Absolute fs path of `rel` (a byte string) under `dir`. Node encodes path strings as UTF-8, so
 * a name with bytes >= 0x80 is handed over as its UTF-8 decoding; a name that is not valid UTF-8
 * cannot be addressed through a string path (only possible in pre-`store` repositories: every
 * store encoding escapes such bytes as `~xx`).
 */
function fsPath(dir: string, rel: string): string {
  for (let i = 0; i < rel.length; i++) {
    if (rel.charCodeAt(i) >= 0x80) {
      const bytes = Buffer.from(rel, 'latin1');
      const text = bytes.toString('utf8');
      if (!Buffer.from(text, 'utf8').equals(bytes)) {
        throw new SluiceError(
          'IO',
          `cannot address store file ${displayName(rel)}: its name is not valid UTF-8`,
        );
      }
      return join(dir, text);
    }
  }
  // path.join normalises every call (~5 µs); a plain concatenation is enough on POSIX because a
  // store-relative name never starts above the store (encodings escape `.`/`..` segments).
  return sep === '/' ? dir + '/' + rel : join(dir, rel);
}

/**
 * basicstore._walk(relpath, recurse): regular files with a revlog suffix (directory entry types,
 * i.e. lstat: symlinks are neither files nor directories), names relative to the store with
 * decodedir applied, sizes from lstat, sorted as tuples.
 */
async function walkDirectory(
  storeDir: string,
  relpath: string,
  recurse: boolean,
  io: StatOptions,
): Promise<WalkedFile[]> {
  const signal = io.signal;
  const found: WalkedFile[] = [];
  const visit: string[] = [relpath];
  while (visit.length > 0) {
    if (signal?.aborted) throw cancelled();
    const rel = visit.pop()!;
    const entries = await listDir(rel ? fsPath(storeDir, rel) : storeDir);
    if (entries === null) continue;
    const files: Array<{ rel: string; path: string }> = [];
    for (const e of entries) {
      const childRel = rel ? `${rel}/${e.name}` : e.name;
      if (e.isFile && revlogType(e.name) !== null)
        files.push({ rel: childRel, path: fsPath(storeDir, childRel) });
      else if (e.isDirectory && recurse) visit.push(childRel);
    }
    const stats = await statMany(
      files.map((f) => f.path),
      false,
      io,
    );
    files.forEach((f, i) => {
      const size = stats.sizes[i]!;
      if (size >= 0) found.push({ type: revlogType(f.rel)!, name: decodeDir(f.rel), size, path: f.path });
    });
  }
  return found.sort(compareWalked);
}

/**
 * fncachestore.datafiles: sorted fncache entries that exist, through the store encoding. With
 * `noLinks` (what a stream sends): the store vfs's audit of the folders on the way, as hg's, and
 * only regular files (lstat), where hg follows a link in place of a revlog file.
 */
async function fncacheDataFiles(loc: RepoLocation, io: StatOptions, noLinks: boolean): Promise<WalkedFile[]> {
  const raw = await readStateFile(join(loc.storeDir, 'fncache'), {
    max: STATE_FILE_MAX.large,
    followLink: true,
  });
  const names = raw === null ? [] : parseFncache(raw);
  names.sort(); // bytewise: one UTF-16 code unit per byte
  const encode = storePathEncoder(loc.requirements);
  // Encoding keeps even a hostile entry (`data/../x.i` -> `data/~2e~2e/x.i`) inside the store.
  const encoded = names.map(encode);
  const paths = encoded.map((e) => fsPath(loc.storeDir, e));
  const stats = await statMany(paths, !noLinks, io);
  const auditor = noLinks ? new StorePathAuditor(loc.storeDir) : null;
  const files: WalkedFile[] = [];
  names.forEach((name, i) => {
    auditor?.checkFolders(encoded[i]!, name);
    const size = stats.sizes[i]!;
    if (size < 0) return; // FileNotFoundError: listed but gone (hg skips it too)
    if (stats.regular[i] !== 1)
      throw noLinks
        ? new SluiceError(
            'UNSAFE_PATH',
            `store file ${displayName(name)} is not a regular file (a symbolic link or a directory)`,
            { name },
          )
        : new SluiceError('IO', `store file ${displayName(name)} is not a regular file`);
    files.push({ type: revlogType(name)!, name, size, path: paths[i]! });
  });
  return files;
}

/** basicstore/encodedstore.datafiles: walk data/ then meta/ (each sorted), names decoded. */
async function walkedDataFiles(loc: RepoLocation, io: StatOptions): Promise<WalkedFile[]> {
  const walked = [
    ...(await walkDirectory(loc.storeDir, 'data', true, io)),
    ...(await walkDirectory(loc.storeDir, 'meta', true, io)),
  ];
  if (!loc.requirements.has('store')) return walked;
  // encodedstore.datafiles: decodefilename(f) of an already decodedir'd name. hg decodes the
  // directory part twice, so a directory named like `x.i.hg` decodes to a name whose file does not
  // exist and hg aborts reading it ("No such file or directory"); Sluice refuses the same names.
  return walked.map((f) => {
    const name = decodeFilename(f.name);
    if (name === null) throw new SluiceError('MALFORMED', `undecodable revlog name ${displayName(f.name)}`);
    if (fsPath(loc.storeDir, encodeFilename(name)) !== f.path) {
      throw new SluiceError(
        'MALFORMED',
        `store file ${displayName(f.name)} decodes to ${displayName(name)}, which hg cannot read back`,
      );
    }
    return { ...f, name };
  });
}

/** store.walk(): the revlog files of the store in hg's order, size-0 files included. */
export async function walkStore(
  loc: RepoLocation,
  options: Partial<StatOptions> & { noLinks?: boolean } = {},
): Promise<WalkedFile[]> {
  const io: StatOptions = {
    concurrency: options.concurrency ?? DEFAULT_STAT_CONCURRENCY,
    strategy: options.strategy ?? 'auto',
    signal: options.signal,
  };
  const data =
    loc.requirements.has('store') && loc.requirements.has('fncache')
      ? await fncacheDataFiles(loc, io, options.noLinks ?? false)
      : await walkedDataFiles(loc, io);
  // basicstore.topfiles: reversed((type, name, size)-sorted listing of the store directory).
  const top = (await walkDirectory(loc.storeDir, '', false, io)).reverse();
  return [...data, ...top];
}

/**
 * The files a stream clone of `repoRoot` sends, in hg's order, with sizes, for v1 (stream_out,
 * packed1) or v2 (stream2 part). Every store name is checked with assertSafeEntryName.
 */
export async function listStreamFiles(
  repoRoot: string,
  options: ListStreamFilesOptions,
): Promise<StreamFileList> {
  const signal = options.signal;
  const loc = await locateRepository(repoRoot);
  const files: StoreFile[] = [];
  let bytes = 0;
  const walked = await walkStore(loc, {
    concurrency: options.concurrency,
    strategy: options.statStrategy,
    signal,
    // a link planted in a served repository must not send a file from elsewhere
    noLinks: true,
  });
  for (const f of walked) {
    if (f.size === 0) continue; // generatev1 / _v2_walk: `if size:`
    if (f.name.includes('/')) {
      // A data/meta revlog hg would stream but a receiver must refuse: fail loudly, a clone
      // without it would be broken.
      assertSafeEntryName('s', f.name);
    } else if (!isSafeEntryName('s', f.name)) {
      // A stray top-level file (say `copy of 00manifest.i`) belongs to no revlog hg reads: leave
      // it out rather than refuse to serve the repository.
      continue;
    }
    files.push({
      vfs: 's',
      name: f.name,
      size: f.size,
      path: f.path,
      full: (f.type & FILEFLAGS_VOLATILE) !== 0,
    });
    bytes += f.size;
  }

  const obsstoreSize = (await statOrNull(join(loc.storeDir, 'obsstore'), false))?.size ?? 0;

  if (options.version === 'v2') {
    // svfs.exists then svfs.lstat for the size; no size filter for these. hg follows a link
    // here (and reads as many bytes of its target as the link's own length): only a regular file
    // is sent, a link or anything else is left out as if absent.
    const addFull = async (vfs: 's' | 'c', dir: string, name: string): Promise<void> => {
      const path = join(dir, name);
      const st = await statOrNull(path, false);
      if (st === null || !st.isFile()) return;
      files.push({ vfs, name, size: st.size, path, full: true });
      bytes += st.size;
    };
    const publishing =
      options.publishing ?? (await readRepoConfig(repoRoot)).getBool('phases', 'publish', true);
    if (!publishing) await addFull('s', loc.storeDir, 'phaseroots');
    if (options.includeObsmarkers) await addFull('s', loc.storeDir, 'obsstore');
    // a cache folder that is a link to elsewhere sends nothing (the caches are optional)
    if (!(await statOrNull(loc.cacheDir, false))?.isSymbolicLink())
      for (const name of CACHE_FILES_TO_COPY) await addFull('c', loc.cacheDir, name);
  }
  if (signal?.aborted) throw cancelled();
  return { files, bytes, requirements: streamRequirements(loc.requirements), obsstoreSize };
}
