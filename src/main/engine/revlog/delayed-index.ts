// The changelog's delayed index (changelog.delayupdate / _finalize): its new entries, and the
// inline data beside them, stay out of NAME.i until the transaction closes, so no reader sees a
// changeset whose manifests or files are missing. Held in memory up to a bound, then in NAME.i.a.
import { closeSync, renameSync, unlinkSync } from 'node:fs';
import type { Transaction } from '../repo/transaction';
import { openReplacing, writeReplacing } from '../repo/vfs';
import { readAt, writeAll, writevAll } from './write-io';

/**
 * Delayed entries held in memory by default; past this they go to NAME.i.a (hg's _divert file for a
 * new changelog), so a changegroup of millions of changesets, or one that never ends, costs disk
 * (watched by the free space guard), not memory.
 */
const DELAY_MEMORY = 32 << 20;
/** Copied from NAME.i.a into NAME.i this many bytes at a time. */
const COPY_BATCH = 1 << 20;

/** Where finalize() puts the delayed bytes. */
export interface DelayedIndexTarget {
  /** the index did not exist before: the delayed bytes become it, by rename */
  newIndex: boolean;
  indexPath: string;
  /** offset in NAME.i where the delayed bytes go (an existing index) */
  at: number;
  indexFd(): number;
  closeIndexFd(): void;
}

export class DelayedIndex {
  /** the pieces in memory: each a whole entry (with its inline chunk) */
  private pieces: Buffer[] = [];
  /** where each piece in memory starts, in the delayed bytes */
  private starts: number[] = [];
  /** all delayed bytes, in memory or spilled */
  length = 0;
  /** the first `spilled` bytes are in NAME.i.a (spillFd), the rest in memory */
  private spilled = 0;
  private spillFd = -1;

  constructor(
    private readonly tx: Transaction,
    private readonly radix: string,
    private readonly indexPath: string,
    private readonly memory = DELAY_MEMORY,
  ) {}

  push(piece: Buffer): void {
    this.starts.push(this.length);
    this.pieces.push(piece);
    this.length += piece.length;
    if (this.length - this.spilled > this.memory) this.spill();
  }

  /**
   * Bytes of the delayed entries: a view of the piece holding them. Joining all the pieces per
   * read made a changegroup whose deltas name old changesets as bases copy the whole delayed
   * changelog once per changeset.
   */
  read(pos: number, len: number): Uint8Array {
    // pieces are spilled whole, so an entry is either in the file or in memory
    if (pos < this.spilled) return readAt(this.spillFd, pos, len, this.radix + '.i.a');
    const starts = this.starts;
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (starts[mid]! <= pos) lo = mid;
      else hi = mid - 1;
    }
    const piece = this.pieces[lo]!;
    const at = pos - starts[lo]!;
    if (at + len <= piece.length) return piece.subarray(at, at + len);
    // across pieces (not written so): the pieces it spans, joined
    let end = lo;
    while (end < starts.length && starts[end]! < pos + len) end++;
    return Buffer.concat(this.pieces.slice(lo, end)).subarray(at, at + len);
  }

  /** The pieces in memory go to NAME.i.a (journaled as a new file: an abort removes it). */
  private spill(): void {
    if (this.spillFd < 0) {
      this.tx.add(this.radix + '.i.a', 0);
      this.spillFd = openReplacing(this.indexPath + '.a');
    }
    writevAll(this.spillFd, this.pieces, this.spilled);
    this.spilled = this.length;
    this.pieces = [];
    this.starts = [];
  }

  /** changelog._finalize: the delayed bytes go to NAME.i (a new index by rename, like _divert). */
  finalize(target: DelayedIndexTarget): void {
    if (this.length === 0) return;
    if (this.spilled > 0) return this.finalizeSpilled(target);
    const all = Buffer.concat(this.pieces, this.length);
    this.pieces = [];
    this.starts = [];
    this.length = 0;
    if (target.newIndex) {
      const tmp = this.indexPath + '.a';
      writeReplacing(tmp, all);
      target.closeIndexFd();
      renameSync(tmp, this.indexPath);
    } else {
      writeAll(target.indexFd(), all, target.at);
    }
  }

  /** finalize() with the bytes (partly) in NAME.i.a: renamed over a new index, else copied after it. */
  private finalizeSpilled(target: DelayedIndexTarget): void {
    this.spill();
    const fd = this.spillFd;
    const total = this.length;
    this.spillFd = -1;
    this.spilled = 0;
    this.length = 0;
    try {
      if (target.newIndex) {
        target.closeIndexFd();
        renameSync(this.indexPath + '.a', this.indexPath);
      } else {
        for (let at = 0; at < total; at += COPY_BATCH) {
          const piece = readAt(fd, at, Math.min(COPY_BATCH, total - at), this.radix + '.i.a');
          writeAll(target.indexFd(), piece, target.at + at);
        }
        unlinkSync(this.indexPath + '.a');
      }
    } finally {
      closeSync(fd);
    }
  }

  /** Closes NAME.i.a; after an abandoned transaction the journal removes the file. */
  close(): void {
    if (this.spillFd >= 0) closeSync(this.spillFd);
    this.spillFd = -1;
  }
}
