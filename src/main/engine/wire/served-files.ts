// Which files a stream clone of the served repository carries, in hg's order (store.py walk:
// fncache datafiles sorted, then topfiles reversed; streamclone._v2_walk adds phaseroots for
// non-publishing repos and the cache files of cacheutil.cachetocopy). Entries of size 0 skipped.
//
// Local adapter: STORE's walk.ts (listStreamFiles) is the shared implementation; this one exists
// so the server works before it lands and reads the "full" files' contents at listing time.

import { lstatSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { SluiceError } from '../errors';
import { storePathEncoder } from '../store/encoding';
import { parseFncache } from '../store/fncache';
import { revlogType } from '../store/paths';
import type { RepoSnapshot } from './repo-state';

export interface ServedFile {
  vfs: 's' | 'c';
  /** raw store path (v2 name; v1 sends encodedir(name)) or cache file name */
  name: string;
  size: number;
  /** absolute path on disk */
  path: string;
  /** content of a "full" file, read at listing time */
  content?: Buffer;
}

/** cacheutil.cachetocopy with repoview.filtertable's order */
export const CACHE_FILES = [
  'branch2',
  'branch2-visible',
  'branch2-visible-hidden',
  'branch2-served.hidden',
  'branch2-served',
  'branch2-immutable',
  'branch2-base',
  'rbc-names-v1',
  'rbc-revs-v1',
  'tags2',
  'tags2-visible',
  'tags2-visible-hidden',
  'tags2-served.hidden',
  'tags2-served',
  'tags2-immutable',
  'tags2-base',
  'hgtagsfnodes1',
];

function sizeOf(path: string): number | null {
  try {
    const st = lstatSync(path);
    return st.isFile() ? st.size : null;
  } catch {
    return null;
  }
}

function readFull(path: string): Buffer | null {
  try {
    return readFileSync(path);
  } catch {
    return null;
  }
}

function byteCmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export async function listServedFiles(snap: RepoSnapshot, version: 'v1' | 'v2'): Promise<{ files: ServedFile[]; bytes: number }> {
  const storeDir = snap.storeDir;
  const reqs = snap.requirements;
  if (!reqs.has('fncache')) {
    throw new SluiceError('NOT_A_REPO', 'sluice serve needs a repository with the fncache store layout');
  }
  const encode = storePathEncoder(reqs);
  const files: ServedFile[] = [];
  let bytes = 0;
  const add = (f: ServedFile): void => {
    files.push(f);
    bytes += f.size;
  };

  // datafiles: fncache entries, sorted, that exist and are revlog files
  const fncache = readFull(join(storeDir, 'fncache'));
  const names = fncache ? parseFncache(fncache).sort(byteCmp) : [];
  for (const name of names) {
    if (revlogType(name) === null) continue;
    const path = join(storeDir, encode(name));
    const size = sizeOf(path);
    if (size) add({ vfs: 's', name, size, path });
  }

  // topfiles: revlog files at the top of the store, (type, name) sorted then reversed
  const top: { type: number; name: string; size: number }[] = [];
  for (const d of readdirSync(storeDir, { withFileTypes: true, encoding: 'latin1' } as never) as unknown as { name: string; isFile(): boolean }[]) {
    if (!d.isFile()) continue;
    const type = revlogType(d.name);
    if (type === null) continue;
    const size = sizeOf(join(storeDir, d.name));
    if (size !== null) top.push({ type, name: d.name, size });
  }
  top.sort((a, b) => a.type - b.type || byteCmp(a.name, b.name) || a.size - b.size).reverse();
  for (const t of top) if (t.size) add({ vfs: 's', name: t.name, size: t.size, path: join(storeDir, t.name) });

  if (version === 'v1') return { files, bytes };

  if (!snap.settings.publishing) {
    const path = join(storeDir, 'phaseroots');
    const content = readFull(path);
    if (content) add({ vfs: 's', name: 'phaseroots', size: content.length, path, content });
  }
  const cacheDir = join(snap.root, '.hg', 'cache');
  for (const name of CACHE_FILES) {
    const path = join(cacheDir, name);
    const content = readFull(path);
    if (content) add({ vfs: 'c', name, size: content.length, path, content });
  }
  return { files, bytes };
}
