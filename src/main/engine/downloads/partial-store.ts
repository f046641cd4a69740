// Partial downloads kept between runs, so a download cut by a dropped network, kill -9, a quit app
// or a sleeping machine continues where it stopped. Each URL has a key (a hash: no URL text in file
// names) and three files in one folder: `<key>.part` (the bytes so far), `<key>.json` (url,
// validator, size so far, total, created, dest; written atomically) and `<key>.lock` (hg's lock
// protocol, so two runs for one URL never write one file and a killed run's lock is broken).

import { createHash } from 'node:crypto';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { SluiceError } from '../errors';
import { JsonFile } from '../json-file';
import { acquireLock, type HeldLock } from '../repo/lock';
import type { DownloadsPolicy } from './downloads-dir';
import type { PartialDownloadInfo } from '../../../shared/jobs';

export interface PartialMeta {
  /** the URL without credentials */
  url: string;
  /** strong ETag or Last-Modified of the bytes so far; null when the server gave neither */
  validator: string | null;
  received: number;
  total: number | null;
  /** epoch ms */
  created: number;
  updated: number;
  /** the clone destination it was fetched for */
  dest: string;
}

/** A partial as listed: the sidecar, the bytes on disk, and whether another run holds it. */
export type PartialInfo = PartialDownloadInfo;

/** Where a download stood, for downloadWithResume. */
export interface ResumeState {
  have: number;
  validator: string | null;
  total: number | null;
}

const KEY = /^[0-9a-f]{32}$/;
/** a sidecar is a few hundred bytes; anything larger is not ours */
const SIDECAR_MAX = 64 * 1024;

export function partialKey(url: string): string {
  return createHash('sha256').update(url).digest('hex').slice(0, 32);
}

function parseMeta(v: unknown): PartialMeta {
  const m = v as Partial<PartialMeta> | null;
  const count = (n: unknown): boolean => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
  if (
    !m ||
    typeof m.url !== 'string' ||
    (m.validator !== null && typeof m.validator !== 'string') ||
    !count(m.received) ||
    (m.total !== null && !count(m.total)) ||
    !count(m.created) ||
    !count(m.updated) ||
    typeof m.dest !== 'string'
  )
    throw new Error('not a partial download sidecar');
  return m as PartialMeta;
}

/** One partial, held (locked) by this run until release() or discard(). */
export class PartialDownload {
  private readonly sidecar: JsonFile<PartialMeta>;
  private meta: PartialMeta;
  private lastSaved = 0;

  constructor(
    readonly key: string,
    readonly path: string,
    private readonly lock: HeldLock,
    meta: PartialMeta,
    /** what an earlier run left, checked against the .part file; null: start from zero */
    readonly resume: ResumeState | null,
  ) {
    this.sidecar = new JsonFile(`${path.slice(0, -'.part'.length)}.json`, parseMeta, 'partial download');
    this.meta = meta;
  }

  /**
   * Records where the download stands. Called often; the sidecar is rewritten when the validator
   * or total changes, or every few MiB, so a run killed at any point loses at most that much.
   */
  async save(state: ResumeState): Promise<void> {
    const changed = state.validator !== this.meta.validator || state.total !== this.meta.total;
    this.meta = { ...this.meta, ...state, received: state.have, updated: Date.now() };
    if (!changed && state.have - this.lastSaved < SAVE_EVERY && state.have !== state.total) return;
    this.lastSaved = state.have;
    await this.sidecar.write(this.meta);
  }

  /** The bytes are of no more use (cloned, changed, corrupt): removes them and the lock. */
  async discard(): Promise<void> {
    await this.sidecar.flushed().catch(() => undefined);
    await rm(this.path, { force: true });
    await rm(this.sidecar.file, { force: true });
    this.lock.release();
  }

  /** Keeps the bytes for the next run. */
  async release(): Promise<void> {
    await this.sidecar.flushed().catch(() => undefined);
    this.lock.release();
  }
}

const SAVE_EVERY = 4 << 20;

export class PartialStore {
  constructor(readonly policy: DownloadsPolicy) {}

  private file(key: string, ext: 'part' | 'json' | 'lock'): string {
    return join(this.policy.dir, `${key}.${ext}`);
  }

  /**
   * Takes the partial for `url` (null when another run holds it: that run keeps it, this one
   * downloads without it) and evicts the oldest others to keep the folder within its bound.
   */
  async claim(url: string, safeUrl: string, dest: string): Promise<PartialDownload | null> {
    await mkdir(this.policy.dir, { recursive: true });
    const key = partialKey(url);
    const lock = await this.tryLock(key);
    if (!lock) return null;
    try {
      const path = this.file(key, 'part');
      const earlier = await this.readMeta(key);
      const size = await fileSize(path);
      let resume: ResumeState | null = null;
      if (
        earlier &&
        earlier.url === safeUrl &&
        earlier.validator !== null &&
        earlier.total !== null &&
        size !== null &&
        size > 0 &&
        size <= earlier.total
      ) {
        // the .part file is the truth: its bytes were written before the sidecar last said so
        resume = { have: size, validator: earlier.validator, total: earlier.total };
      } else {
        // what is there cannot be continued: no sidecar may describe the bytes to come but theirs
        await rm(this.file(key, 'json'), { force: true });
        await rm(path, { force: true });
      }
      const now = Date.now();
      const meta: PartialMeta = {
        url: safeUrl,
        validator: resume?.validator ?? null,
        received: resume?.have ?? 0,
        total: resume?.total ?? null,
        created: resume && earlier ? earlier.created : now,
        updated: now,
        dest,
      };
      await this.evict(key);
      return new PartialDownload(key, path, lock, meta, resume);
    } catch (e) {
      lock.release();
      throw e;
    }
  }

  async list(): Promise<PartialInfo[]> {
    const out: PartialInfo[] = [];
    for (const key of await this.keys()) {
      const meta = await this.readMeta(key);
      if (!meta) continue;
      const lock = await this.tryLock(key);
      lock?.release();
      const bytes = (await fileSize(this.file(key, 'part'))) ?? 0;
      const { url, dest, total, created, updated } = meta;
      out.push({ key, url, dest, bytes, total, created, updated, inUse: !lock });
    }
    return out.sort((a, b) => a.updated - b.updated);
  }

  /** Removes one partial (false when it is in use by a running download). */
  async remove(key: string): Promise<boolean> {
    if (!KEY.test(key)) throw new SluiceError('USAGE', `not a partial download key: ${key}`);
    const lock = await this.tryLock(key);
    if (!lock) return false;
    try {
      await this.removeFiles(key);
    } finally {
      lock.release();
    }
    return true;
  }

  /** Removes every partial not in use; returns how many. */
  async clear(): Promise<number> {
    let n = 0;
    for (const key of await this.keys()) if (await this.remove(key)) n++;
    return n;
  }

  /** Oldest first, the partials other than `keep` go until the rest fit in maxBytes. */
  private async evict(keep: string): Promise<void> {
    const all = await this.list();
    const described = new Set(all.map((p) => p.key));
    // files without a readable sidecar cannot be resumed: they go first
    for (const key of await this.keys()) if (key !== keep && !described.has(key)) await this.remove(key);
    let total = all.reduce((s, p) => s + p.bytes, 0);
    for (const p of all) {
      if (total <= this.policy.maxBytes) break;
      if (p.key === keep || p.inUse) continue;
      if (await this.remove(p.key)) total -= p.bytes;
    }
  }

  private async tryLock(key: string): Promise<HeldLock | null> {
    try {
      return await acquireLock(this.file(key, 'lock'), { timeoutMs: 0, description: 'partial download' });
    } catch (e) {
      if (e instanceof SluiceError && e.code === 'LOCKED') return null;
      throw e;
    }
  }

  private async readMeta(key: string): Promise<PartialMeta | null> {
    const file = this.file(key, 'json');
    const size = await fileSize(file);
    if (size === null || size > SIDECAR_MAX) return null;
    return (await new JsonFile(file, parseMeta, 'partial download').read()) ?? null;
  }

  /** Keys with any file in the folder (a sidecar set aside as corrupt, an orphan .part). */
  private async keys(): Promise<string[]> {
    let names: string[];
    try {
      names = await readdir(this.policy.dir);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw e;
    }
    return [...new Set(names.map((n) => n.slice(0, 32)).filter((k) => KEY.test(k)))];
  }

  private async removeFiles(key: string): Promise<void> {
    const names = await readdir(this.policy.dir);
    for (const n of names)
      if (n.startsWith(`${key}.`) && !n.endsWith('.lock') && !n.endsWith('.lock.break'))
        await rm(join(this.policy.dir, n), { force: true });
  }
}

async function fileSize(path: string): Promise<number | null> {
  try {
    const st = await stat(path);
    return st.isFile() ? st.size : null;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}
