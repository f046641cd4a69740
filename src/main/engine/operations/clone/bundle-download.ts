// The download of a chosen clone bundle: kept among the partial downloads (so the same command run
// again continues where a stopped one ended), with progress and retry events, its first bytes
// checked for a bundle's magic and the whole checked against the manifest's digests.

import { SluiceError, toSluiceError } from '../../errors';
import { BUNDLE2_MAGIC } from '../../format/bundle2';
import { PACKED1_MAGIC } from '../../format/packed1';
import type { JobContext } from '../../context/job-context';
import { redactUrl, type HttpSession } from '../../client/http-client';
import { checkDigests } from '../../downloads/digest';
import { PartialStore, type PartialDownload } from '../../downloads/partial-store';
import { downloadWithResume, type DownloadOptions } from '../../downloads/resumable-download';
import type { CloneBundleChoice } from './clone-bundles';

export interface BundleDownloadOptions {
  /** retries after a failure without progress (default 8) */
  downloadRetries?: number;
  /** the first wait before a retry (default 500 ms) */
  downloadRetryDelayMs?: number;
}

export interface FetchedBundle {
  /** null: the bundle could not be had, the clone falls back to the server */
  file: string | null;
  /**
   * The clone ended (`failure` when it failed): the partial goes once the destination is cloned
   * or the bytes proved of no use; it stays for the next run after a cancel, or after a download
   * cut short when the clone did not succeed without it either.
   */
  settle(failure?: unknown): Promise<void>;
}

/** Errors after which the bytes so far are still good for a later run. */
const KEEP_AFTER = new Set(['TRUNCATED', 'NETWORK', 'TIMEOUT', 'CANCELLED', 'IO', 'LIMIT']);

/**
 * Downloads `choice` (into the partial store when the job has one, else into `scratchFile`); `file`
 * is null when it cannot be had (hg then falls back to the server). CANCELLED and DIGEST_MISMATCH
 * pass through: a bundle that is not the one its manifest describes is an error, not a fallback.
 */
export async function fetchCloneBundle(
  session: HttpSession,
  choice: CloneBundleChoice,
  scratchFile: string,
  dest: string,
  ctx: JobContext,
  opts: BundleDownloadOptions,
): Promise<FetchedBundle> {
  const name = redactUrl(choice.url);
  ctx.log('info', `applying clone bundle from ${name}`);
  ctx.phase('download');
  const part = await claimPartial(choice.url, dest, ctx);
  const file = part?.path ?? scratchFile;
  try {
    await downloadWithResume(session, choice.url, file, downloadOptions(part, ctx, opts));
    await checkDigests(file, choice.digests, `the clone bundle ${name}`, ctx.signal);
  } catch (e) {
    const se = toSluiceError(e);
    const keep = KEEP_AFTER.has(se.code) || se.details?.retryable === true;
    if (!keep || se.code === 'CANCELLED' || se.code === 'DIGEST_MISMATCH') {
      await (keep ? part?.release() : part?.discard());
      if (se.code === 'CANCELLED' || se.code === 'DIGEST_MISMATCH') throw se;
    }
    ctx.log('warn', `error fetching bundle: ${se.message}; falling back to the server`);
    // held while the server clones: a cut download is worth keeping only if that fails too
    return {
      file: null,
      settle: async (failure) => {
        if (!keep) return;
        await (failure !== undefined ? part?.release() : part?.discard());
      },
    };
  }
  return {
    file,
    settle: async (failure) => {
      const cancelled = failure !== undefined && toSluiceError(failure).code === 'CANCELLED';
      await (cancelled ? part?.release() : part?.discard());
    },
  };
}

async function claimPartial(url: string, dest: string, ctx: JobContext): Promise<PartialDownload | null> {
  if (!ctx.downloads) return null;
  let part: PartialDownload | null;
  try {
    part = await new PartialStore(ctx.downloads).claim(url, redactUrl(url), dest);
  } catch (e) {
    ctx.log('warn', `cannot keep the download for a later run: ${toSluiceError(e).message}`);
    return null;
  }
  if (!part) ctx.log('info', 'another run is downloading this bundle: this one downloads its own copy');
  else if (part.resume)
    ctx.log(
      'info',
      `resuming the partial download at ${part.resume.have} of ${part.resume.total ?? '?'} bytes`,
    );
  return part;
}

function downloadOptions(
  part: PartialDownload | null,
  ctx: JobContext,
  opts: BundleDownloadOptions,
): DownloadOptions {
  const started = Date.now();
  const startBytes = part?.resume?.have ?? 0;
  let lastEmit = 0;
  return {
    signal: ctx.signal,
    checkStart: checkBundleMagic,
    freeSpace: ctx.freeSpace,
    resume: part?.resume ?? null,
    ...(part ? { onState: (s) => part.save(s) } : {}),
    ...(opts.downloadRetries !== undefined ? { retries: opts.downloadRetries } : {}),
    ...(opts.downloadRetryDelayMs !== undefined ? { retryDelayMs: opts.downloadRetryDelayMs } : {}),
    log: (m) => ctx.log('warn', m),
    onRetryWait: (w) =>
      ctx.emit({
        type: 'retry',
        attempt: w.attempt,
        maxAttempts: w.maxAttempts,
        waitMs: w.waitMs,
        reason: w.reason,
        bytes: w.have,
        totalBytes: w.total,
      }),
    onProgress: (bytes, total) => {
      const now = Date.now();
      if (now - lastEmit < ctx.progressIntervalMs && bytes !== total) return;
      lastEmit = now;
      const elapsedMs = now - started;
      ctx.emit({
        type: 'progress',
        bytes,
        files: 0,
        totalBytes: total ?? 0,
        totalFiles: 0,
        // the rate of this run: bytes an earlier run left are not counted as fetched now
        bytesPerSec: elapsedMs > 0 ? (Math.max(0, bytes - startBytes) * 1000) / elapsedMs : 0,
        elapsedMs,
      });
    },
  };
}

/**
 * A clone bundle starts with a bundle's magic (HG10 changegroup, HG20 bundle2, HGS1 packed1);
 * anything else is given up after its first bytes, not downloaded to its end (which a hostile
 * URL may never reach) before the reader refuses it.
 */
function checkBundleMagic(start: Buffer): void {
  const magic = start.toString('latin1');
  if (!['HG10', BUNDLE2_MAGIC, PACKED1_MAGIC].includes(magic))
    throw new SluiceError('BAD_MAGIC', `not a Mercurial bundle: starts with ${JSON.stringify(magic)}`);
}
