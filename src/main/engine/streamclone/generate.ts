// Producing stream clones from a repository on disk:
//   packed1 bundles  (hg debugcreatestreamclonebundle; streamclone.generatebundlev1)
//   stream v2 bundles (hg bundle -a -t '<comp>-v2;stream=v2'; bundle2.addpartbundlestream2)
//   the stream_out body and the stream2 part a server sends (generatev1wireproto, generatev2).
// packed1 and uncompressed v2 output is byte-identical to hg's for the same store; gzip and zstd
// cores are identical once decompressed (the compressed bytes depend on the compressor build).

import { randomBytes } from 'node:crypto';
import { mkdir, open, rename, unlink, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { BundleCompression, BundleType } from '../../../shared/jobs';
import { cancelled, SluiceError, toSluiceError } from '../errors';
import { Bundle2Writer, DEFAULT_CHUNK_SIZE, type Bundle2OutPart } from '../format/bundle2';
import { packed1Header } from '../format/packed1';
import type { CompressionKey } from '../format/stream-reader';
import { streamOutPreamble } from '../format/stream-v1';
import { STREAM2_PART, stream2Params } from '../format/stream2';
import { listStreamFiles } from '../store/walk';
import { v1Entries, v2Entries, type EmitOptions, type StreamSourceFile } from './entries';

/** A listed stream: what listStreamFiles returns, or a hand-made list (tests). */
export interface StreamListing {
  files: readonly StreamSourceFile[];
  bytes: number;
  /** streamed requirements (repository requirements ∩ STREAM_FIXED_REQUIREMENTS) */
  requirements: readonly string[];
}

export interface WriteStreamBundleOptions {
  type: BundleType;
  /** v2 only; packed1 is always uncompressed. Default none. */
  compression?: BundleCompression;
  /** bundle2 payload chunk size (v2): default 32768; 4096 reproduces hg before 4.5 */
  chunkSize?: number;
  /** v2: phases.publish of the source (default: read from its hgrc, true when unset) */
  publishing?: boolean;
  signal?: AbortSignal;
  /** after each file, with running totals of files and data bytes */
  onProgress?: (filesDone: number, bytesDone: number, totalFiles: number, totalBytes: number) => void;
  /** called once the file list is known, before any data is read */
  onListed?: (listing: StreamListing) => void;
}

export interface WriteStreamBundleResult {
  path: string;
  type: BundleType;
  compression: CompressionKey;
  files: number;
  bytes: number;
  requirements: string[];
  /** bytes written to the bundle file */
  size: number;
}

const COMPRESSION_KEYS: Record<BundleCompression, CompressionKey> = { none: 'UN', gzip: 'GZ', zstd: 'ZS' };

/** The packed1 bundle of a listing (v1 file list: store files only). */
export async function* packed1Chunks(
  listing: StreamListing,
  options: EmitOptions = {},
): AsyncGenerator<Uint8Array> {
  yield packed1Header(listing.files.length, listing.bytes, listing.requirements);
  yield* v1Entries(listing.files, options);
}

/** The stream2 part of a listing, payload generated lazily (for a bundle or a getbundle reply). */
export function stream2PartOf(listing: StreamListing, options: EmitOptions = {}): Bundle2OutPart {
  return {
    type: STREAM2_PART,
    mandatory: true,
    mandatoryParams: stream2Params(listing.files.length, listing.bytes, listing.requirements),
    data: v2Entries(listing.files, options),
  };
}

/** A stream v2 bundle: HG20, optional Compression param, one stream2 part, end marker. */
export function stream2BundleChunks(
  listing: StreamListing,
  options: { compression?: CompressionKey; chunkSize?: number } & EmitOptions = {},
): AsyncIterable<Uint8Array> {
  const writer = new Bundle2Writer({
    compression: options.compression ?? 'UN',
    chunkSize: options.chunkSize ?? DEFAULT_CHUNK_SIZE,
  });
  writer.addPart(stream2PartOf(listing, options));
  return writer.chunks();
}

/**
 * The body of a successful `stream_out` reply: `0\n`, `<files> <bytes>\n`, the v1 entries.
 * (Status `1\n` — stream not allowed — is the server's decision, see streamOutForbidden.)
 */
export async function* streamOutBody(
  repoRoot: string,
  options: EmitOptions = {},
): AsyncGenerator<Uint8Array> {
  const listing = await listStreamFiles(repoRoot, { version: 'v1', signal: options.signal });
  yield streamOutPreamble(listing.files.length, listing.bytes);
  yield* v1Entries(listing.files, options);
}

/** generatev1wireproto's answer when allowservergeneration() is false. */
export const streamOutForbidden = (): Uint8Array => Buffer.from('1\n', 'latin1');

/**
 * The stream2 part for a getbundle reply (`stream=1`): listed now (its counts are part params),
 * data read while the payload is consumed.
 */
export async function stream2Part(
  repoRoot: string,
  options: EmitOptions & { publishing?: boolean; includeObsmarkers?: boolean } = {},
): Promise<Bundle2OutPart & { files: number; bytes: number }> {
  const listing = await listStreamFiles(repoRoot, {
    version: 'v2',
    publishing: options.publishing,
    includeObsmarkers: options.includeObsmarkers,
    signal: options.signal,
  });
  return { ...stream2PartOf(listing, options), files: listing.files.length, bytes: listing.bytes };
}

/**
 * Writes a stream clone bundle of the repository at `repoRoot` to `outPath`, through a temporary
 * file beside it that is renamed into place at the end (removed on failure or cancel).
 */
export async function writeStreamBundle(
  repoRoot: string,
  outPath: string,
  options: WriteStreamBundleOptions,
): Promise<WriteStreamBundleResult> {
  const compression = COMPRESSION_KEYS[options.compression ?? 'none'];
  if (!compression)
    throw new SluiceError('USAGE', `unknown bundle compression ${String(options.compression)}`);
  if (options.type === 'packed1' && compression !== 'UN') {
    // streamclone.generatebundlev1: "we do not support the compression argument yet"
    throw new SluiceError(
      'USAGE',
      'packed1 bundles are always uncompressed (use a v2 bundle for gzip or zstd)',
    );
  }
  if (options.type !== 'packed1' && options.type !== 'v2')
    throw new SluiceError('USAGE', `unknown bundle type ${String(options.type)}`);
  const listing = await listStreamFiles(repoRoot, {
    version: options.type === 'packed1' ? 'v1' : 'v2',
    publishing: options.publishing,
    signal: options.signal,
  });
  options.onListed?.(listing);
  const emit: EmitOptions = {
    signal: options.signal,
    onFile: options.onProgress
      ? (_f, filesDone, bytesDone) =>
          options.onProgress!(filesDone, bytesDone, listing.files.length, listing.bytes)
      : undefined,
  };
  const chunks =
    options.type === 'packed1'
      ? packed1Chunks(listing, emit)
      : stream2BundleChunks(listing, { ...emit, compression, chunkSize: options.chunkSize });
  const size = await writeFileAtomically(outPath, chunks, options.signal);
  return {
    path: outPath,
    type: options.type,
    compression,
    files: listing.files.length,
    bytes: listing.bytes,
    requirements: [...listing.requirements],
    size,
  };
}

const WRITE_BATCH = 1024 * 1024;

/** Streams `chunks` into a temp file beside `outPath`, then renames it; returns the size. */
export async function writeFileAtomically(
  outPath: string,
  chunks: AsyncIterable<Uint8Array>,
  signal?: AbortSignal,
): Promise<number> {
  const tmp = join(
    dirname(outPath),
    `.${basename(outPath)}.sluice-${process.pid}-${randomBytes(4).toString('hex')}.tmp`,
  );
  let fh: FileHandle | undefined;
  try {
    // like an apply's destination, the bundle's folder is created when missing (the app's
    // comparisons write their generated bundles into a fresh results folder)
    await mkdir(dirname(outPath), { recursive: true });
    fh = await open(tmp, 'wx');
  } catch (e) {
    throw toSluiceError(e);
  }
  let size = 0;
  let done = false;
  try {
    let batch: Uint8Array[] = [];
    let batchBytes = 0;
    const flush = async (): Promise<void> => {
      let pending = batch;
      while (pending.length) {
        const { bytesWritten } = await fh!.writev(pending);
        pending = skipWritten(pending, bytesWritten);
      }
      batch = [];
      batchBytes = 0;
    };
    for await (const chunk of chunks) {
      if (signal?.aborted) throw cancelled();
      if (!chunk.length) continue;
      batch.push(chunk);
      batchBytes += chunk.length;
      size += chunk.length;
      if (batchBytes >= WRITE_BATCH) await flush();
    }
    await flush();
    await fh.close();
    fh = undefined;
    await rename(tmp, outPath);
    done = true;
    return size;
  } catch (e) {
    throw toSluiceError(e);
  } finally {
    if (fh) await fh.close().catch(() => undefined);
    if (!done) await unlink(tmp).catch(() => undefined);
  }
}

/** What is left of `buffers` after the first `n` bytes were written (short writev). */
function skipWritten(buffers: Uint8Array[], n: number): Uint8Array[] {
  let i = 0;
  while (i < buffers.length && n >= buffers[i]!.length) n -= buffers[i++]!.length;
  if (i === buffers.length) return [];
  const rest = buffers.slice(i);
  rest[0] = rest[0]!.subarray(n);
  return rest;
}
