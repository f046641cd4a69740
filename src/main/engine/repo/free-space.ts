// The destination's free space, checked two ways so that a pull, an apply or a download can never
// fill the disk and then fail half-way with ENOSPC (hg starts and fails):
// - a declared size (a stream's header, a Content-Length) before anything is written
//   (checkFreeSpace): a compression bomb in a stream's core, a huge announced length;
// - data without a declared size (a changegroup, a chunked download) as it is written
//   (FreeSpaceGuard): a server or bundle that never ends stops with a reserve still free.
// Both apply one rule (spaceBudget): what may be written is what is free less the reserve, so a
// declared size that the guard would stop part-way is refused at the start instead.
// Either way the error is IO with errno ENOSPC, as a real ENOSPC would be, thrown before the write.

import { existsSync, statfsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { SluiceError } from '../errors';

/**
 * What a write leaves free on its filesystem (at most half of what was free when it started, see
 * spaceBudget): the writes queued in memory between two looks, hg's journal and the rest of the
 * system need room.
 */
export const FREE_SPACE_RESERVE = 64 << 20;
/** At most this much is written between two looks at the free space (statfs costs ~1 µs). */
export const FREE_SPACE_LOOK_EVERY = 8 << 20;

/** Free bytes (for an unprivileged user) on the filesystem of `dir`, an existing folder; undefined: unknown. */
export type FreeSpaceProbe = (dir: string) => number | undefined;

/** How the guard learns the free space and what it keeps free (tests and hosts replace them). */
export interface FreeSpacePolicy {
  probe?: FreeSpaceProbe;
  /** default FREE_SPACE_RESERVE */
  reserve?: number;
}

/**
 * The one rule: of `free` bytes, an operation may write all but the reserve, which is at most
 * half of what is free (a small pull onto a nearly full disk still fits).
 */
export function spaceBudget(free: number, reserve = FREE_SPACE_RESERVE): { budget: number; reserve: number } {
  const kept = Math.min(reserve, Math.floor(free / 2));
  return { budget: free - kept, reserve: kept };
}

const statfsFree: FreeSpaceProbe = (dir) => {
  try {
    const s = statfsSync(dir);
    return s.bavail * s.bsize;
  } catch {
    return undefined;
  }
};

function noSpace(dir: string, message: string, details: Record<string, unknown>): SluiceError {
  return new SluiceError('IO', `not enough space in ${dir}: ${message}`, { errno: 'ENOSPC', ...details });
}

/** The nearest existing folder at or above `path`'s parent (what will hold it). */
function existingParent(path: string): string {
  let dir = dirname(resolve(path));
  while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
}

/**
 * Throws IO (errno ENOSPC) when `bytes` do not fit in the free space of the filesystem `path`
 * will be written to (its nearest existing parent folder) less the reserve (spaceBudget, the
 * FreeSpaceGuard's rule). `what` says who announced them ("the stream announces"). Where the free
 * space cannot be read, the writes will tell.
 */
export function checkFreeSpace(
  path: string,
  bytes: number,
  what: string,
  policy: FreeSpacePolicy = {},
): void {
  const dir = existingParent(path);
  const free = (policy.probe ?? statfsFree)(dir);
  if (free === undefined) return;
  const { budget, reserve } = spaceBudget(free, policy.reserve);
  if (bytes > budget)
    throw noSpace(dir, `${what} ${bytes} bytes, ${free} are free and Sluice leaves ${reserve} free`, {
      needed: bytes,
      free,
      reserve,
    });
}

/**
 * Counts what an operation writes under `path` and stops it (IO, ENOSPC, thrown by take() before
 * the write) when the bytes so far pass what was free at its start less the reserve, or when the
 * free space, looked at every FREE_SPACE_LOOK_EVERY bytes, falls below the reserve (something
 * else filling the disk). Bytes held in memory to be written later count as written. Where the
 * free space cannot be read, nothing is checked (the writes will tell).
 */
export class FreeSpaceGuard {
  private readonly dir: string;
  private readonly probe: FreeSpaceProbe;
  private reserve: number;
  /** bytes the operation may write in all (free at the start less the reserve); undefined: not looked yet */
  private budget: number | undefined;
  private written = 0;
  private sinceLook = 0;
  private off = false;

  constructor(
    path: string,
    /** what is being written, for the message ("the pull", "the download of URL") */
    private readonly what: string,
    policy: FreeSpacePolicy = {},
  ) {
    this.probe = policy.probe ?? statfsFree;
    this.reserve = policy.reserve ?? FREE_SPACE_RESERVE;
    this.dir = existingParent(path);
  }

  /** bytes counted so far */
  get bytes(): number {
    return this.written;
  }

  /** `n` more bytes are about to be written (or queued for writing). */
  take(n: number): void {
    this.written += n;
    if (this.off) return;
    this.sinceLook += n;
    if (this.budget === undefined || this.sinceLook >= FREE_SPACE_LOOK_EVERY) this.look();
    if (this.budget !== undefined && this.written > this.budget)
      throw noSpace(
        this.dir,
        `${this.what} stopped after ${this.written} bytes: ${this.budget + this.reserve} were free when it started, and Sluice leaves ${this.reserve} free`,
        { written: this.written, free: this.budget + this.reserve, reserve: this.reserve },
      );
  }

  private look(): void {
    this.sinceLook = 0;
    const free = this.probe(this.dir);
    if (free === undefined) {
      this.off = true;
      return;
    }
    if (this.budget === undefined) {
      ({ budget: this.budget, reserve: this.reserve } = spaceBudget(free, this.reserve));
      return;
    }
    if (free < this.reserve)
      throw noSpace(
        this.dir,
        `${this.what} stopped after ${this.written} bytes: ${free} are free, below the ${this.reserve} Sluice leaves free`,
        { written: this.written, free, reserve: this.reserve },
      );
  }
}
