// File contents for the working copy: a filelog revision with its copy metadata stripped
// (filelog.read / storageutil.filtermetadata), node id checked as hg's filectx.data() does.
// The text comes from the revlog reader (Revlog.revision: the chain folded at once, as mpatch).
import { closeSync, fstatSync, openSync, readSync, readvSync } from 'node:fs';
import { SluiceError } from '../errors';
import type { LocalRepo } from '../repo/local-repo';
import { Revlog } from '../revlog/revlog';
import { parseFilelogMeta } from '../revlog/texts';
import { displayPath } from './path-auditor';

/** storageutil.filtermetadata: the file data after a `\1\n…\1\n` block. */
export function stripFilelogMeta(text: Uint8Array): Uint8Array {
  const meta = parseFilelogMeta(text);
  return meta ? text.subarray(meta.dataOffset) : text;
}

/**
 * A sink for a filelog text streamed in pieces that passes on the file data only: a leading
 * `\1\n…\1\n` copy-metadata block (stripFilelogMeta) is held until its end is seen (it holds
 * copy/copyrev: a few hundred bytes), checked by parseFilelogMeta as today, and dropped.
 * Call end() after the last piece.
 */
export function metaStripper(write: (piece: Uint8Array) => void): {
  push: (piece: Uint8Array) => void;
  end: () => void;
} {
  // pieces up to the block's end, joined once (each piece is searched once: no quadratic join)
  let parts: Uint8Array[] | undefined = [];
  let held = 0;
  let lastByte = -1;
  const release = (): void => {
    const data = stripFilelogMeta(Buffer.concat(parts!)); // throws on an unterminated block, as hg
    parts = undefined;
    if (data.length) write(data);
  };
  const push = (piece: Uint8Array): void => {
    if (parts === undefined) return write(piece);
    if (piece.length === 0) return;
    const from = held; // where piece starts in the held text
    parts.push(piece);
    held += piece.length;
    if (held < 2) {
      lastByte = piece[piece.length - 1]!;
      return;
    }
    const first = parts.length === 1 ? piece : Buffer.concat(parts.slice(0, 2));
    if (first[0] !== 1 || first[1] !== 10) {
      const all = parts.length === 1 ? piece : Buffer.concat(parts);
      parts = undefined;
      return write(all);
    }
    // the closing \1\n: after the opening one, maybe across this piece's start
    const b = Buffer.from(piece.buffer, piece.byteOffset, piece.length);
    const closes =
      (from >= 2 && lastByte === 1 && b[0] === 10) ||
      b.indexOf('\x01\n', Math.max(0, 2 - from), 'latin1') >= 0;
    lastByte = b[b.length - 1]!;
    if (closes) release();
  };
  const end = (): void => {
    if (parts !== undefined) release();
  };
  return { push, end };
}

/** A filelog revision opened by FileTextReader.open; give it back with FileTextReader.release. */
export interface OpenedRevision {
  revlog: Revlog;
  rev: number;
  /** the filelog was read whole into memory (release() is synchronous then) */
  inMemory: boolean;
}

/** A filelog file up to this size is read into the reader's reused buffer, larger ones through Revlog.open's windows. */
const WHOLE_FILE_MAX = 4 << 20;
/** a filelog read whole is read for one text: no text cache (one options object for all) */
const ONE_TEXT = { cacheBytes: 0 } as const;

export class FileTextReader {
  /** one per thread: every filelog is read into it (the texts built from it are copies) */
  private scratch: Buffer = Buffer.allocUnsafe(256 << 10);
  /**
   * [scratch], for readvSync: fs.readSync's argument handling (`arguments`, defaults) allocated
   * ~180 bytes per call where V8 runs it from Maglev code (Node 24, a checkout's first read of
   * every file); readvSync with a kept list allocates nothing
   */
  private readonly scratchList: Buffer[] = [this.scratch];

  constructor(private readonly repo: LocalRepo) {}

  /**
   * A small store file whole, in one read into the reused buffer (no fstat unless it fills the
   * buffer); null when missing, undefined when larger than WHOLE_FILE_MAX. Valid until the next call.
   */
  private readWhole(path: string | Buffer): Uint8Array | null | undefined {
    let fd: number;
    try {
      fd = openSync(path, 'r');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
    try {
      let got = readvSync(fd, this.scratchList, 0);
      if (got < this.scratch.length) return this.scratch.subarray(0, got);
      const size = fstatSync(fd).size;
      if (size > WHOLE_FILE_MAX) return undefined;
      const grown = Buffer.allocUnsafe(size + 1);
      grown.set(this.scratch);
      this.scratch = this.scratchList[0] = grown;
      for (let n; got < grown.length && (n = readSync(fd, grown, got, grown.length - got, got)) > 0;)
        got += n;
      return grown.subarray(0, got);
    } finally {
      closeSync(fd);
    }
  }

  /**
   * `path`'s filelog read whole into memory (index and data up to WHOLE_FILE_MAX each; a missing
   * NAME.i is an empty revlog), undefined when it is larger (openLarge then).
   */
  private openInMemory(radix: string): Revlog | undefined {
    const index = this.readWhole(this.repo.storePath(radix + '.i'));
    if (index === undefined) return undefined;
    if (index === null) return Revlog.fromBytes(radix, new Uint8Array(0), undefined, ONE_TEXT);
    // inline (every small filelog): NAME.i holds the chunks too
    if (index.length >= 4 && index[1]! & 1) return Revlog.fromBytes(radix, index, undefined, ONE_TEXT);
    const indexCopy = Buffer.from(index); // the data file is read into the same buffer
    const data = this.readWhole(this.repo.storePath(radix + '.d'));
    if (data === undefined) return undefined;
    return Revlog.fromBytes(radix, indexCopy, data ?? undefined, ONE_TEXT);
  }

  private opened(
    path: string,
    revlog: Revlog,
    inMemory: boolean,
    node: Uint8Array,
    at: number,
  ): OpenedRevision {
    const rev = revlog.index.scanRev(node, at);
    if (rev === undefined) {
      if (!inMemory) void revlog.close();
      const nodeHex = Buffer.from(node.buffer, node.byteOffset + at, 20).toString('hex');
      throw new SluiceError('REVLOG', `${displayPath(path)}@${nodeHex.slice(0, 12)}: no match found`, {
        path: displayPath(path),
        node: nodeHex,
      });
    }
    return { revlog, rev, inMemory };
  }

  /**
   * Opens `path`'s filelog and finds the revision of the 20-byte node at `node[at]` (or a hex
   * node): synchronously when the filelog is small enough to be read whole (nearly every one), else
   * a promise. The text built from it may live in the reader's buffers: release() it before the
   * next open.
   */
  open(path: string, node: Uint8Array | string, at = 0): OpenedRevision | Promise<OpenedRevision> {
    const bytes = typeof node === 'string' ? Buffer.from(node, 'hex') : node;
    const radix = 'data/' + path;
    const small = this.openInMemory(radix);
    if (small) return this.opened(path, small, true, bytes, at);
    return this.repo
      .openRevlog(radix, 'sync', { cacheBytes: 0 })
      .then((revlog) => this.opened(path, revlog, false, bytes, at));
  }

  /** Gives back what open() returned: synchronous for a filelog read whole. */
  release(o: OpenedRevision): Promise<void> | undefined {
    if (!o.inMemory) return o.revlog.close();
    o.revlog.clearCache(); // its build buffers go back to the thread's spares
    return undefined;
  }

  /** The working-copy data of `path` at filelog node `nodeHex`. */
  async read(path: string, nodeHex: string): Promise<Uint8Array> {
    const o = await this.open(path, nodeHex);
    try {
      return stripFilelogMeta(await o.revlog.revision(o.rev));
    } finally {
      await this.release(o);
    }
  }
}
