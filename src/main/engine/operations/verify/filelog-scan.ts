// The expensive half of verifying a filelog (revlog.verifyintegrity in hg 6.3.2): read every
// revision through its delta chain, check its node id and size, and note its copy metadata. It
// needs nothing from the changelog or the manifests, so verify runs it on worker threads
// (filelog-worker.ts) while the main thread checks the changelog and manifests, then does the
// cheap half (linkrevs, parents, manifest entries: verify.ts) from the result and the index.
// The result is plain data (structured-clonable), the same whichever thread produced it.
import { shortNode } from '../../revlog/revlog-error';
import { performance } from 'node:perf_hooks';
import { cancelled, isSluiceError } from '../../errors';
import { Revlog } from '../../revlog/revlog';
import { RevlogIndex, type RevlogIndexData } from '../../revlog/index';
import type { RevlogIoMode } from '../../revlog/file-io';
import { NULL_REV, REVIDX_ISCENSORED, STREAM_ABOVE } from '../../revlog/constants';
import { copySource } from '../../revlog/texts';

export interface FilelogScanRequest {
  /** `data/<path>` */
  radix: string;
  indexPath: string;
  dataPath: string;
  /** sizes from the store listing (each saves an fstat) */
  indexSize?: number;
  dataSize?: number;
}

export interface FilelogScan {
  /** the revlog could not be opened: the reason for hg's "broken revlog! (…)" */
  broken?: string;
  index?: RevlogIndexData;
  /** revlog.checksize()'s dd: bytes NAME.d has beyond (or short of) what the index needs */
  dataLengthOff: number;
  /** verifyintegrity's problems, in revision order; `skip`: the text could not be read */
  revErrors: { rev: number; text: string; skip: boolean }[];
  /** copy metadata of revisions whose p1 is null (absent: no copy), or why it did not parse */
  copies: { rev: number; path?: string; node?: Uint8Array; error?: string }[];
  /** time to open the revlog and read its index */
  openMs: number;
}

export interface ScanOptions {
  io: RevlogIoMode;
  cacheBytes?: number;
  signal?: AbortSignal;
  /** texts above this size are streamed, never held whole (default revlog's STREAM_ABOVE) */
  streamAbove?: number;
}

/** The copy metadata of a streamed text is looked for in its first bytes (more: read whole). */
const META_PREFIX = 64 << 10;
/** A group of large revisions streamed in one pass holds at most this much of stored deltas... */
const GROUP_DELTA_BYTES = 32 << 20;
/** ... and at most this many revisions (one hash and one folded patch each). */
const GROUP_REVS = 16;

/** The text hg's stringutil.forcebytestr(inst) would give for our errors. */
export function reasonOf(e: unknown): string {
  if (isSluiceError(e)) {
    const d = (e.details ?? {}) as Record<string, unknown>;
    if (d.problem === 'parent-out-of-range' || d.problem === 'rev-out-of-range')
      return 'revlog index out of range';
    if (typeof d.reason === 'string') return d.reason;
    return e.message;
  }
  return e instanceof Error ? e.message : String(e);
}

/** revlog.checksize()'s first value: bytes NAME.d has beyond (or short of) what the index needs. */
export async function dataLengthOff(rl: Revlog): Promise<number> {
  if (rl.index.inline) return 0;
  const size = await rl.dataFileSize();
  if (size === undefined) return 0;
  const n = rl.length;
  const expected = n ? Math.max(0, rl.index.end(n - 1)) : 0;
  return size - expected;
}

/** Reads and checks every revision of one filelog (CANCELLED passes through; all else is a finding). */
export async function scanFilelog(req: FilelogScanRequest, opts: ScanOptions): Promise<FilelogScan> {
  const t0 = performance.now();
  let fl: Revlog;
  try {
    fl = await Revlog.open(req.indexPath, {
      name: req.radix,
      dataPath: req.dataPath,
      cacheBytes: opts.cacheBytes,
      signal: opts.signal,
      io: opts.io,
      indexSize: req.indexSize,
      dataSize: req.dataSize,
    });
  } catch (e) {
    if (isSluiceError(e) && e.code === 'CANCELLED') throw e;
    return {
      broken: reasonOf(e),
      dataLengthOff: 0,
      revErrors: [],
      copies: [],
      openMs: performance.now() - t0,
    };
  }
  const openMs = performance.now() - t0;
  try {
    const idx = fl.index;
    const revErrors: FilelogScan['revErrors'] = [];
    const copies: FilelogScan['copies'] = [];
    const dd = await dataLengthOff(fl);
    const streamAbove = opts.streamAbove ?? STREAM_ABOVE;
    /** verifyintegrity's checks of rev's text (its size, its copy metadata when p1 is null) */
    const checkText = (rev: number, size: number, head: Uint8Array): void => {
      const stored = idx.rawSize(rev);
      const l1 = stored >= 0 ? stored : size;
      if (l1 !== size) revErrors.push({ rev, text: `unpacked size is ${size}, ${l1} expected`, skip: false });
      if (idx.p1(rev) === NULL_REV) {
        try {
          const c = copySource(head);
          if (c) copies.push({ rev, path: c.path, node: c.node });
        } catch (e) {
          copies.push({ rev, error: reasonOf(e) });
        }
      }
    };
    /** verifyintegrity's "unpacking NODE: why" for a text that could not be read */
    const unreadable = (rev: number, e: unknown): void => {
      if (isSluiceError(e) && e.code === 'CANCELLED') throw e;
      const censored =
        isSluiceError(e) && (e.details as Record<string, unknown> | undefined)?.problem === 'censored';
      revErrors.push({
        rev,
        text: censored ? 'censored file data' : `unpacking ${shortNode(idx.node(rev))}: ${reasonOf(e)}`,
        skip: true,
      });
    };
    /** rev read whole (the reused build buffers): the path of every text but large ones */
    const readWhole = async (rev: number): Promise<void> => {
      try {
        const text = fl.revisionViewNow(rev) ?? (await fl.revisionView(rev));
        checkText(rev, text.length, text);
      } catch (e) {
        unreadable(rev, e);
      }
    };
    /** rev streamed alone: a large text whose node did not match in its group's pass */
    const streamAlone = async (rev: number): Promise<void> => {
      const head = { bytes: Buffer.allocUnsafe(META_PREFIX), used: 0 };
      try {
        const [size] = await fl.streamRevisions(
          [rev],
          [
            (piece) => {
              const n = Math.min(piece.length, META_PREFIX - head.used);
              if (n > 0) head.bytes.set(piece.subarray(0, n), head.used);
              head.used += n;
            },
          ],
          0,
        );
        checkText(rev, size!, head.bytes.subarray(0, head.used));
      } catch (e) {
        unreadable(rev, e);
      }
    };
    for (let rev = 0; rev < fl.length; rev++) {
      if ((rev & 1023) === 1023 && opts.signal?.aborted) throw cancelled();
      if (!streamable(fl, rev, streamAbove)) await readWhole(rev);
      else rev = await scanStreamed(fl, rev, streamAbove, checkText, readWhole, streamAlone);
    }
    return { index: idx.toData(), dataLengthOff: dd, revErrors, copies, openMs };
  } finally {
    await fl.close();
  }
}

/** A large text verify streams (a censored tombstone goes the whole way: checkNode knows it). */
function streamable(fl: Revlog, rev: number, streamAbove: number): boolean {
  return fl.index.rawSize(rev) > streamAbove && (fl.index.revFlags(rev) & REVIDX_ISCENSORED) === 0;
}

/**
 * Checks rev and the large revisions after it that share its chain's snapshot, streamed in one
 * pass over that snapshot (Revlog.streamRevisions: a few MiB plus their deltas, however large the
 * texts). Any problem (or copy metadata too long for META_PREFIX) sends the group's revisions
 * through readWhole, one by one, which finds and words the problems as for any revision. Returns
 * the group's last revision.
 */
async function scanStreamed(
  fl: Revlog,
  rev: number,
  streamAbove: number,
  checkText: (rev: number, size: number, head: Uint8Array) => void,
  readWhole: (rev: number) => Promise<void>,
  streamAlone: (rev: number) => Promise<void>,
): Promise<number> {
  const idx = fl.index;
  const group = [rev];
  try {
    const base = fl.deltaChain(rev).chain[0]!;
    const seen = new Set<number>();
    let deltaBytes = 0;
    for (let r = rev + 1; r < fl.length && group.length < GROUP_REVS && streamable(fl, r, streamAbove); r++) {
      const chain = fl.deltaChain(r).chain;
      if (chain[0] !== base) break;
      for (const d of chain.slice(1)) {
        if (!seen.has(d)) deltaBytes += Math.max(0, idx.compressedLength(d));
        seen.add(d);
      }
      if (deltaBytes > GROUP_DELTA_BYTES) break;
      group.push(r);
    }
  } catch {
    // a broken chain: readWhole words it
  }
  try {
    const heads = group.map(() => ({ bytes: Buffer.allocUnsafe(META_PREFIX), used: 0 }));
    const sizes = await fl.streamRevisions(
      group,
      heads.map((h) => (piece: Uint8Array) => {
        const n = Math.min(piece.length, META_PREFIX - h.used);
        if (n > 0) h.bytes.set(piece.subarray(0, n), h.used);
        h.used += n;
      }),
      0,
    );
    const results = group.map((r, k) => ({
      r,
      size: sizes[k]!,
      head: heads[k]!.bytes.subarray(0, heads[k]!.used),
    }));
    // metadata cut by the prefix: parsed from the whole text instead
    const cut = results.some(
      ({ r, size, head }) =>
        idx.p1(r) === NULL_REV &&
        head.length < size &&
        head[0] === 1 &&
        head[1] === 0x0a &&
        head.indexOf(Buffer.from('\x01\n'), 2) < 0,
    );
    if (!cut) {
      for (const { r, size, head } of results) checkText(r, size, head);
      return group[group.length - 1]!;
    }
  } catch (e) {
    if (isSluiceError(e) && e.code === 'CANCELLED') throw e;
    // a node mismatch: every text decoded to its end, so reading them whole would build what
    // their sizes announce, a lying size over a decompression bomb from a hostile stream clone
    // included; streamed one by one instead, worded the same (the node check is the same)
    if (isSluiceError(e) && (e.details as { problem?: string } | undefined)?.problem === 'node-mismatch') {
      for (const r of group) await streamAlone(r);
      return group[group.length - 1]!;
    }
  }
  for (const r of group) await readWhole(r);
  return group[group.length - 1]!;
}

/** The index of a scan that opened (see FilelogScan.index). */
export function scanIndex(scan: FilelogScan): RevlogIndex {
  return RevlogIndex.fromData(scan.index!);
}
