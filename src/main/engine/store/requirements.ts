// Repository requirements (.hg/requires, .hg/store/requires) as Mercurial 6.3.2 reads and writes
// them: requirements.py, localrepo.makelocalrepository/_readrequires/newreporequirements,
// scmutil.writereporequirements/filterrequirements, streamclone.new_stream_clone_requirements.

import { statSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { isAbsolute, join, normalize } from 'node:path';
import { SluiceError, toSluiceError } from '../errors.js';
import { STATE_FILE_MAX, readStateFileSync } from '../repo/state-file.js';

/** requirements.STREAM_FIXED_REQUIREMENTS: formats a stream imposes on the receiving repository. */
export const STREAM_FIXED_REQUIREMENTS: ReadonlySet<string> = new Set([
  'exp-archived-phase',
  'bookmarksinstore',
  'exp-changelog-v2',
  'exp-copies-sidedata-changeset',
  'generaldelta',
  'internal-phase-2',
  'revlog-compression-zstd',
  'revlogv1',
  'exp-revlogv2.2',
  'sparserevlog',
  'treemanifest',
]);

/** requirements.WORKING_DIR_REQUIREMENTS: what stays in .hg/requires when share-safe splits them. */
export const WORKING_DIR_REQUIREMENTS: ReadonlySet<string> = new Set([
  'exp-sparse',
  'shared',
  'relshared',
  'share-safe',
  'dirstate-tracked-key-v1',
  'dirstate-v2',
]);

/**
 * What Sluice can apply (write as streamed bytes) and read (walk, serve, verify). Each entry is here
 * because the stream carries the whole feature as opaque file bytes, or because it concerns only
 * parts of a repository Sluice never touches:
 * - revlogv1: the revlog format Sluice reads and writes.
 * - generaldelta, sparserevlog: only change which base a delta uses; revlog readers follow `base`.
 * - revlog-compression-zstd: chunks are self-describing (`(` = zstd frame); Sluice decompresses them.
 * - exp-compression-none (format.revlog-compression=none): chunks stored uncompressed (`u` or NUL-led),
 *   which every revlog reader reads; new chunks are written so too.
 * - store, fncache, dotencode: the store layout Sluice encodes (encoding.ts) and walks (walk.ts).
 * - share-safe: only moves the store requirements into .hg/store/requires (writeRequirements).
 * - persistent-nodemap: `.n`/`.nd` files are streamed (as volatile files) and are a cache hg
 *   validates against the changelog; nothing else changes.
 * - treemanifest: directory manifests are `meta/…` revlogs listed in the fncache, so they stream
 *   and apply exactly like filelogs. (A verifier must treat `meta/` revlogs as manifests.)
 * - internal-phase-2: adds phase 96 lines to phaseroots, which is copied verbatim, never parsed.
 * - dirstate-v2, dirstate-tracked-key-v1, exp-sparse: working-copy formats; Sluice clones without a
 *   working copy and never reads one, so a source repository using them is served unchanged.
 * - shared, relshared: locateRepository follows .hg/sharedpath to the source store.
 * Not supported (a stream needing them is refused, as an hg lacking them would):
 * bookmarksinstore (bookmarks are not streamed; the follow-up would write them to the wrong file),
 * exp-changelog-v2 / exp-revlogv2.2 / exp-copies-sidedata-changeset (other revlog formats with
 * docket and sidedata files), exp-archived-phase (experimental, unstable), narrowhg-experimental
 * (partial store plus narrowspec), lfs / largefiles (content outside the revlogs),
 * other exp-compression-* engines (none that hg 6.3.2 ships).
 */
export const SUPPORTED_REQUIREMENTS: ReadonlySet<string> = new Set([
  'revlogv1',
  'generaldelta',
  'sparserevlog',
  'revlog-compression-zstd',
  'exp-compression-none',
  'store',
  'fncache',
  'dotencode',
  'share-safe',
  'persistent-nodemap',
  'treemanifest',
  'internal-phase-2',
  'dirstate-v2',
  'dirstate-tracked-key-v1',
  'exp-sparse',
  'shared',
  'relshared',
]);

/**
 * localrepo.newreporequirements with hg 6.3.2's default configuration (zstd importable), i.e.
 * exactly what `hg init` writes: share-safe in .hg/requires, the rest in .hg/store/requires.
 */
export const DEFAULT_NEW_REPO_REQUIREMENTS: readonly string[] = [
  'dotencode',
  'fncache',
  'generaldelta',
  'revlog-compression-zstd',
  'revlogv1',
  'share-safe',
  'sparserevlog',
  'store',
];

const sorted = (items: Iterable<string>): string[] => [...items].sort();

/** streamclone.streamed_requirements: the repository's requirements that a stream imposes, sorted. */
export function streamRequirements(requirements: Iterable<string>): string[] {
  return sorted(new Set([...requirements].filter((r) => STREAM_FIXED_REQUIREMENTS.has(r))));
}

/** Requirements Sluice cannot honour, sorted (empty when everything is supported). */
export function unsupportedRequirements(requirements: Iterable<string>): string[] {
  return sorted(new Set([...requirements].filter((r) => !SUPPORTED_REQUIREMENTS.has(r))));
}

/**
 * Requirements a stream's list may not carry: they describe a share (whose store is elsewhere,
 * named by a `.hg/sharedpath` no stream holds) or a sparse working copy, never the streamed store.
 * No hg server sends them (streamclone.streamed_requirements; older servers' supportedformats);
 * from a hostile one they would make a clone neither hg nor Sluice can open.
 */
const NEVER_STREAMED: ReadonlySet<string> = new Set(['shared', 'relshared', 'exp-sparse']);

/** At most this many requirement names go into a message or an error's details. */
const MAX_NAMES_SHOWN = 10;

/** A list of names from a server, bounded for a message: the first few, each cut, and a count. */
function boundedNames(names: readonly string[]): string {
  const shown = names.slice(0, MAX_NAMES_SHOWN).map((n) => (n.length > 100 ? `${n.slice(0, 100)}…` : n));
  const more = names.length - shown.length;
  return shown.join(', ') + (more > 0 ? ` and ${more} more` : '');
}

/**
 * Why a stream (v1 `streamreqs`, a v2 part or a packed1 header) cannot be applied, or null: what
 * Sluice cannot honour, or what no store stream may carry (NEVER_STREAMED). Bounded in length
 * whatever the server listed.
 */
export function streamRequirementsProblem(streamed: readonly string[]): string | null {
  const unsupported = unsupportedRequirements(streamed);
  if (unsupported.length) return `unsupported format: ${boundedNames(unsupported)}`;
  const notStore = sorted(new Set(streamed.filter((r) => NEVER_STREAMED.has(r))));
  if (notStore.length)
    return `the stream requires ${notStore.join(', ')}, which describes a share or a working copy, not a store (no hg server sends it)`;
  return null;
}

/** streamRequirementsProblem as the refusal of a stream clone (UNSUPPORTED_REQUIREMENTS), or null. */
export function streamRequirementsError(streamed: readonly string[]): SluiceError | null {
  const problem = streamRequirementsProblem(streamed);
  if (problem === null) return null;
  const refused = [...unsupportedRequirements(streamed), ...streamed.filter((r) => NEVER_STREAMED.has(r))];
  return new SluiceError('UNSUPPORTED_REQUIREMENTS', `unable to apply stream clone: ${problem}`, {
    unsupported: refused.slice(0, MAX_NAMES_SHOWN),
    count: refused.length,
  });
}

/**
 * Requirements hg 6.3.2 honours (itself, or through largefiles, lfs and narrow, which it bundles)
 * that Sluice does not support yet, with the feature each one means.
 */
const NOT_YET_SUPPORTED: ReadonlyMap<string, string> = new Map([
  ['largefiles', 'largefiles (the largefiles extension)'],
  ['lfs', 'lfs (the lfs extension)'],
  ['narrowhg-experimental', 'a narrow clone (narrowhg-experimental)'],
  ['bookmarksinstore', 'bookmarks in the store (bookmarksinstore)'],
  ['exp-changelog-v2', 'changelog v2 (exp-changelog-v2)'],
  ['exp-revlogv2.2', 'revlog v2 (exp-revlogv2.2)'],
  ['exp-copies-sidedata-changeset', 'copies in sidedata (exp-copies-sidedata-changeset)'],
  ['exp-archived-phase', 'the archived phase (exp-archived-phase)'],
]);

/**
 * The refusal of a repository whose requirements Sluice cannot honour (hg exits 255): one nobody
 * knows in localrepo.ensurerequirementsrecognized's words, a feature hg has and Sluice does not
 * support yet named as such.
 */
export function unknownFeaturesError(missing: Iterable<string>): SluiceError {
  const names = sorted(new Set(missing));
  if (!names.some((r) => NOT_YET_SUPPORTED.has(r)))
    return new SluiceError(
      'UNSUPPORTED_REQUIREMENTS',
      `repository requires features unknown to this Mercurial: ${names.join(' ')}`,
      {
        unsupported: names,
        hint: 'see https://mercurial-scm.org/wiki/MissingRequirement for more information',
      },
    );
  return new SluiceError(
    'UNSUPPORTED_REQUIREMENTS',
    `repository requires features Sluice does not support yet: ${names.map((r) => NOT_YET_SUPPORTED.get(r) ?? r).join(', ')}`,
    { unsupported: names, hint: 'use hg for this repository' },
  );
}

/**
 * streamclone.new_stream_clone_requirements(defaults, streamed): what a fresh clone gets, i.e.
 * the defaults of a new repository minus the stream-fixed ones, plus what the stream needs.
 * Sorted. With the 6.3.2 defaults this is {dotencode, fncache, share-safe, store} ∪ streamed.
 */
export function cloneRequirements(streamed: Iterable<string>): string[] {
  const result = new Set(DEFAULT_NEW_REPO_REQUIREMENTS.filter((r) => !STREAM_FIXED_REQUIREMENTS.has(r)));
  for (const r of streamed) result.add(r);
  return sorted(result);
}

/** localrepo.ensurerequirementsrecognized's corruption test: empty or not starting alphanumeric. */
function isWellFormedRequirement(r: string): boolean {
  return /^[A-Za-z0-9][^\n\r]*$/.test(r);
}

function parseRequiresFile(text: string, what: string): Set<string> {
  // localrepo._readrequires: set(data.splitlines())
  const lines = text.split(/\r\n|\r|\n/);
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  for (const r of lines) {
    if (!isWellFormedRequirement(r)) throw new SluiceError('MALFORMED', `${what} file is corrupt`);
  }
  return new Set(lines);
}

/**
 * A small file read synchronously: locateRepository reads a few of them before any job, and an
 * async read would start libuv's threadpool (sized for the background closer: 52 threads, ~15 ms
 * of the main thread's CPU at every `sluice update`'s start, on its serial path), which a checkout
 * closing its files synchronously (Linux, macOS) never needs otherwise (revsymbol's bookmarks and
 * tags files too). Null when it does not exist; a link is followed as hg does (these files are
 * the user's own), but only a regular file within the bound is read (repo/state-file.ts).
 */
export function readSmallFileSync(path: string): string | null {
  return readStateFileSync(path, { max: STATE_FILE_MAX.lines, followLink: true })?.toString('latin1') ?? null;
}

/** Requirements whose store layout LocalRepo (repo/local-repo.ts) does not understand (a tree manifest has no flat `00manifest`). */
export const UNREADABLE_REQUIREMENTS: readonly string[] = [
  'treemanifest',
  'exp-changelog-v2',
  'exp-revlogv2.2',
  'narrowhg-experimental',
];

export interface RepoLocation {
  /** Repository root (the directory holding `.hg`). */
  root: string;
  /** `<root>/.hg` */
  hgDir: string;
  /** The `.hg` directory that owns the store: hgDir, or the share source's `.hg`. */
  storeOwnerHgDir: string;
  /** Where store files live: `<owner>/.hg/store`, or `<owner>/.hg` itself without the `store` requirement. */
  storeDir: string;
  /** `.hg/cache` of the store owner (a share uses its source's caches, like localrepo). */
  cacheDir: string;
  requirements: Set<string>;
}

/**
 * localrepo.makelocalrepository's requirement and store resolution: reads .hg/requires (a missing
 * file means no requirements), follows .hg/sharedpath for `shared`/`relshared`, and adds
 * .hg/store/requires when share-safe. NOT_A_REPO when there is no .hg directory.
 */
export async function locateRepository(repoRoot: string): Promise<RepoLocation> {
  const hgDir = join(repoRoot, '.hg');
  try {
    if (!statSync(hgDir).isDirectory()) throw new Error('not a directory');
  } catch {
    throw new SluiceError('NOT_A_REPO', `repository ${repoRoot} not found`);
  }
  const requirements = parseRequiresFile(readSmallFileSync(join(hgDir, 'requires')) ?? '', '.hg/requires');

  let storeOwnerHgDir = hgDir;
  if (requirements.has('shared') || requirements.has('relshared')) {
    // localrepo._getsharedvfs: absolute for `shared`, relative to .hg for `relshared`.
    const raw = readSmallFileSync(join(hgDir, 'sharedpath'));
    if (raw === null)
      throw new SluiceError('NOT_A_REPO', `shared repository ${repoRoot} has no .hg/sharedpath`);
    const shared = raw.replace(/\n+$/, '');
    storeOwnerHgDir =
      requirements.has('relshared') || !isAbsolute(shared) ? normalize(join(hgDir, shared)) : shared;
    try {
      statSync(storeOwnerHgDir);
    } catch {
      throw new SluiceError(
        'NOT_A_REPO',
        `.hg/sharedpath points to nonexistent directory ${storeOwnerHgDir}`,
      );
    }
  }
  if (requirements.has('share-safe')) {
    const storeRequires = readSmallFileSync(join(storeOwnerHgDir, 'store', 'requires'));
    if (storeRequires === null) {
      throw new SluiceError('NOT_A_REPO', `share-safe repository ${repoRoot} has no .hg/store/requires`);
    }
    for (const r of parseRequiresFile(storeRequires, '.hg/store/requires')) requirements.add(r);
  }
  // localrepo.makestore: without the `store` requirement (hg < 0.9.2 layout) revlogs live in .hg.
  const storeDir = requirements.has('store') ? join(storeOwnerHgDir, 'store') : storeOwnerHgDir;
  return {
    root: repoRoot,
    hgDir,
    storeOwnerHgDir,
    storeDir,
    cacheDir: join(storeOwnerHgDir, 'cache'),
    requirements,
  };
}

/**
 * The file holding the repository's bookmarks (bookmarks.bookmarksvfs): the store's with
 * `bookmarksinstore`; the share source's `.hg/bookmarks` for a share made with `hg share -B` (its
 * `.hg/shared` lists `bookmarks`: the share extension's getbkfile, the only way to make such a
 * share, reads them there); else `.hg/bookmarks`.
 */
export function bookmarksPath(loc: RepoLocation): string {
  if (loc.requirements.has('bookmarksinstore')) return join(loc.storeDir, 'bookmarks');
  if (loc.storeOwnerHgDir !== loc.hgDir) {
    const shared = readSmallFileSync(join(loc.hgDir, 'shared'));
    if (shared !== null && shared.split('\n').includes('bookmarks'))
      return join(loc.storeOwnerHgDir, 'bookmarks');
  }
  return join(loc.hgDir, 'bookmarks');
}

/** The repository's full requirement set (share-safe's two files merged). */
export async function readRequirements(repoRoot: string): Promise<Set<string>> {
  return (await locateRepository(repoRoot)).requirements;
}

/** scmutil.filterrequirements: (working-dir, store) sets; store is null without share-safe. */
export function splitRequirements(requirements: Iterable<string>): { wc: string[]; store: string[] | null } {
  const all = sorted(new Set(requirements));
  if (!all.includes('share-safe')) return { wc: all, store: null };
  return {
    wc: all.filter((r) => WORKING_DIR_REQUIREMENTS.has(r)),
    store: all.filter((r) => !WORKING_DIR_REQUIREMENTS.has(r)),
  };
}

/** scmutil.writerequires: sorted, one per line, each `\n`-terminated. */
export function formatRequires(requirements: Iterable<string>): string {
  return sorted(new Set(requirements))
    .map((r) => r + '\n')
    .join('');
}

async function writeAtomically(path: string, text: string): Promise<void> {
  // atomictemp like hg: a crash leaves the old file or the new one, never half of one.
  const tmp = `${path}.sluice-tmp-${process.pid}`;
  await writeFile(tmp, text, 'latin1');
  await rename(tmp, path);
}

/**
 * scmutil.writereporequirements for the repository whose `.hg` is `hgDir`: with share-safe the
 * working-dir requirements go to .hg/requires and the rest to .hg/store/requires; without it
 * everything goes to .hg/requires and a stale .hg/store/requires is removed (hg does so whenever
 * format.usestore is on, its default).
 */
export async function writeRequirements(hgDir: string, requirements: Iterable<string>): Promise<void> {
  const all = [...requirements];
  for (const r of all) {
    if (!isWellFormedRequirement(r))
      throw new SluiceError('MALFORMED', `invalid requirement name ${JSON.stringify(r)}`);
  }
  const { wc, store } = splitRequirements(all);
  try {
    await writeAtomically(join(hgDir, 'requires'), formatRequires(wc));
    if (store !== null) {
      await mkdir(join(hgDir, 'store'), { recursive: true });
      await writeAtomically(join(hgDir, 'store', 'requires'), formatRequires(store));
    } else {
      await rm(join(hgDir, 'store', 'requires'), { force: true });
    }
  } catch (e) {
    throw toSluiceError(e);
  }
}
