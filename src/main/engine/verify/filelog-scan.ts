// The expensive half of verifying a filelog (revlog.verifyintegrity in hg 6.3.2): read every
// revision through its delta chain, check its node id and size, and note its copy metadata. It
// needs nothing from the changelog or the manifests, so verify runs it on worker threads
// (filelog-worker.ts) while the main thread checks the changelog and manifests, then does the
// cheap half (linkrevs, parents, manifest entries: verify.ts) from the result and the index.
// The result is plain data (structured-clonable), the same whichever thread produced it.
import { performance } from 'node:perf_hooks';
import { cancelled, isSluiceError } from '../errors';
import { Revlog } from '../revlog/revlog';
import { RevlogIndex, type RevlogIndexData } from '../revlog/index';
import type { RevlogIoMode } from '../revlog/file-io';
import { NULL_REV } from '../revlog/constants';
import { copySource } from '../revlog/texts';

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
}

function short(node: Uint8Array): string {
  return Buffer.from(node.buffer, node.byteOffset, Math.min(node.length, 6)).toString('hex');
}

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
    for (let rev = 0; rev < fl.length; rev++) {
      if ((rev & 1023) === 1023 && opts.signal?.aborted) throw cancelled();
      try {
        const text = fl.revisionViewNow(rev) ?? (await fl.revisionView(rev));
        const stored = idx.rawSize(rev);
        const l1 = stored >= 0 ? stored : text.length;
        if (l1 !== text.length)
          revErrors.push({ rev, text: `unpacked size is ${text.length}, ${l1} expected`, skip: false });
        if (idx.p1(rev) === NULL_REV) {
          try {
            const c = copySource(text);
            if (c) copies.push({ rev, path: c.path, node: c.node });
          } catch (e) {
            copies.push({ rev, error: reasonOf(e) });
          }
        }
      } catch (e) {
        if (isSluiceError(e) && e.code === 'CANCELLED') throw e;
        const censored =
          isSluiceError(e) && (e.details as Record<string, unknown> | undefined)?.problem === 'censored';
        revErrors.push({
          rev,
          text: censored ? 'censored file data' : `unpacking ${short(idx.node(rev))}: ${reasonOf(e)}`,
          skip: true,
        });
      }
    }
    return { index: idx.toData(), dataLengthOff: dd, revErrors, copies, openMs };
  } finally {
    await fl.close();
  }
}

/** The index of a scan that opened (see FilelogScan.index). */
export function scanIndex(scan: FilelogScan): RevlogIndex {
  return RevlogIndex.fromData(scan.index!);
}
