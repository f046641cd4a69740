// The few store helpers the format parsers need (owner: STORE, src/main/engine/store/). Until those
// modules land, minimal local versions live here; this file is the single switch point, so the
// parsers import from here and never from ../store directly.

import { SluiceError } from '../errors';

/** store.py decodedir: `.d.hg/`→`.d/`, `.i.hg/`→`.i/`, `.hg.hg/`→`.hg/`, only if `.hg/` occurs. */
export function decodeDir(path: string): string {
  if (!path.includes('.hg/')) return path;
  return path.replaceAll('.d.hg/', '.d/').replaceAll('.i.hg/', '.i/').replaceAll('.hg.hg/', '.hg/');
}

/** store.py encodedir: `.hg/`→`.hg.hg/`, `.i/`→`.i.hg/`, `.d/`→`.d.hg/`. */
export function encodeDir(path: string): string {
  if (!path.includes('.hg/') && !path.includes('.i/') && !path.includes('.d/')) return path;
  return path.replaceAll('.hg/', '.hg.hg/').replaceAll('.i/', '.i.hg/').replaceAll('.d/', '.d.hg/');
}

const REVLOG_SUFFIX = /\.(i|d|n|nd|idx|dat|sda)$/;
const TOP_LEVEL = /^00(changelog|manifest)\.(i|d|n|nd|idx|dat|sda)$/;
const CACHE_NAME = /^[A-Za-z0-9._-]+$/;

/**
 * Refuses every name that could escape its vfs or is not something a stream clone carries
 * (the store's assertSafeEntryName contract). Throws SluiceError('UNSAFE_PATH').
 */
export function assertSafeEntryName(vfs: 's' | 'c', name: string): void {
  const bad = (why: string): never => {
    throw new SluiceError('UNSAFE_PATH', `unsafe ${vfs === 's' ? 'store' : 'cache'} entry name ${JSON.stringify(name)}: ${why}`, {
      vfs,
      name,
    });
  };
  if (name.length === 0) bad('empty');
  if (/[\0\r\n\\]/.test(name)) bad('forbidden character');
  if (vfs === 'c') {
    if (!CACHE_NAME.test(name) || name === '.' || name === '..') bad('not a cache file name');
    return;
  }
  if (name.startsWith('/')) bad('absolute');
  if (/^[A-Za-z]:/.test(name)) bad('drive letter');
  const segments = name.split('/');
  for (const s of segments) {
    if (s === '') bad('empty segment');
    if (s === '.' || s === '..') bad('dot segment');
  }
  if (segments.length === 1) {
    if (name === 'phaseroots' || name === 'obsstore' || TOP_LEVEL.test(name)) return;
    bad('not a store file');
  }
  if ((segments[0] === 'data' || segments[0] === 'meta') && REVLOG_SUFFIX.test(name)) return;
  bad('not a revlog path');
}

/** Requirements a stream may carry that Sluice can apply (fallback list). */
const SUPPORTED = new Set([
  'revlogv1',
  'generaldelta',
  'sparserevlog',
  'revlog-compression-zstd',
  'store',
  'fncache',
  'dotencode',
  'share-safe',
  'treemanifest',
  'persistent-nodemap',
]);

export function unsupportedRequirements(reqs: Iterable<string>): string[] {
  return [...reqs].filter((r) => !SUPPORTED.has(r)).sort();
}
