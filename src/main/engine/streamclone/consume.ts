// applyStream: writes a stream clone (packed1, stream v1 body or stream2 part; one StreamReader
// interface for all three) into a new repository at DEST. Mirrors streamclone.consumev1/consumev2
// plus what hg does around them (applybundlev1/v2, hg.clone): requirements, fncache, the
// `.hg/00changelog.i` guard, nodemap cleanup, an hgrc with the source as default path.
//
// The inner loop is hg's: next entry → open → copy exactly `size` bytes → hand the fd to the
// closer. Policy sits around it: the atomic destination (repo/destination.ts), the background
// closer (closer/), progress (context/progress.ts). Writes are synchronous on purpose: measured on
// Linux (tmpfs and ext4), openSync/writeSync/closeSync per file beat any threadpool variant
// (the per-request handoff costs more than the syscalls), and the engine runs off the UI thread.

import { mkdirSync, openSync, closeSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { CloseStats, JobKind, StreamFormat } from '../../../shared/events';
import type { CloserOptions } from '../../../shared/jobs';
import { BackgroundCloser, planCloser, type CloseImpl } from '../closer/background-closer';
import { SluiceError, cancelled, toSluiceError } from '../errors';
import type { StreamReader } from '../format/stream-reader';
import type { JobContext } from '../context/job-context';
import { ProgressTracker } from '../context/progress';
import { createTempDestination, type TempDestination } from '../repo/destination';
import { checkFreeSpace } from '../repo/free-space';
import {
  cloneRequirements,
  createRepoSkeleton,
  DEFAULT_NEW_REPO_REQUIREMENTS,
  encodeDir,
  storePathEncoder,
  streamRequirementsError,
} from './store-adapter';

export interface ApplyStreamOptions {
  /** job kind for the start event (default 'apply') */
  kind?: JobKind;
  /**
   * Where the stream came from. A clone passes the URL: it becomes `[paths] default` in
   * .hg/hgrc (never with credentials: the caller strips them). Undefined: no hgrc.
   */
  source?: string;
  /** shown as the start event's source when `source` is undefined (e.g. the bundle path) */
  label?: string;
  /**
   * Streamed requirements when the stream does not carry them (stream_out bodies: the
   * `stream`/`streamreqs` capability). Default: the stream header's.
   */
  requirements?: readonly string[];
  /**
   * Default true: requirements computed like hg's stream clone (new_stream_clone_requirements).
   * false: the requirements `hg init` would write, untouched by the stream — hg's packed1 quirk
   * (applybundlev1 never rewrites requires), kept only for comparisons.
   */
  writeRequirements?: boolean;
  closer?: Partial<CloserOptions>;
  /** tests: a slow or failing close for the background closer */
  closeImpl?: CloseImpl;
  /** called with the temporary repository root after the last file, before the rename (bookmarks, phases) */
  beforeCommit?: (tmpRepoRoot: string) => Promise<void>;
  /**
   * Check out a working copy in the temporary repository after beforeCommit and before the
   * rename (hg.clone's update), so DEST appears only with its files: `rev` as hg's -u REV.
   */
  checkout?: { rev?: string };
}

export interface ApplyStats {
  format: StreamFormat;
  /** final repository path */
  dest: string;
  files: number;
  bytes: number;
  /** requirements written to the repository */
  requirements: string[];
  close: CloseStats;
}

/**
 * nodemap.post_stream_cleanup: a clone without persistent-nodemap drops streamed nodemap files
 * (`00changelog.n`, `00changelog-<hex>.nd`, `.n.a`). Sluice never writes them instead of writing
 * and deleting them.
 */
const NODEMAP_FILE = /^(00changelog|00manifest)(-[0-9a-f]+\.nd|\.n(\.a)?)$/;

export async function applyStream(
  reader: StreamReader,
  dest: string,
  opts: ApplyStreamOptions,
  ctx: JobContext,
): Promise<ApplyStats> {
  try {
    return await applyOpened(reader, dest, opts, ctx);
  } finally {
    await reader.close();
  }
}

async function applyOpened(
  reader: StreamReader,
  dest: string,
  opts: ApplyStreamOptions,
  ctx: JobContext,
): Promise<ApplyStats> {
  const header = reader.header;
  const streamed = opts.requirements ?? header.requirements;
  // applybundlev1/v2: refuse before anything is written.
  const refused = streamRequirementsError(streamed);
  if (refused) throw refused;
  checkFreeSpace(dest, header.bytes, 'the stream announces', ctx.freeSpace);
  const requirements =
    opts.writeRequirements === false ? [...DEFAULT_NEW_REPO_REQUIREMENTS] : cloneRequirements(streamed);
  ctx.throwIfCancelled();
  ctx.emit({
    type: 'start',
    kind: opts.kind ?? 'apply',
    format: header.format,
    files: header.files,
    bytes: header.bytes,
    requirements: [...streamed],
    source: opts.source ?? opts.label ?? '',
    dest,
  });

  let tmp: TempDestination | undefined;
  let closer: BackgroundCloser | undefined;
  try {
    tmp = await createTempDestination(dest);
    const root = tmp.root;
    ctx.phase('write');
    await createRepoSkeleton(root, {
      requirements,
      ...(opts.source !== undefined ? { defaultPath: opts.source } : {}),
    });
    closer = new BackgroundCloser(planCloser(opts.closer, header.files), opts.closeImpl);
    if (closer.background) ctx.log('debug', `starting ${closer.threads} threads for background file closing`);
    const progress = new ProgressTracker(ctx, { bytes: header.bytes, files: header.files });
    await writeEntries(reader, root, new Set(requirements), closer, progress, ctx);
    const close = await closer.drain();
    progress.finish();

    ctx.phase('finalize');
    if (opts.beforeCommit) await opts.beforeCommit(root);
    if (opts.checkout) {
      // loaded on demand: an apply without a checkout does not pay for the checkout's modules
      const { checkoutAfterClone } = await import('../operations/update/update');
      await checkoutAfterClone(
        root,
        { ...opts.checkout, closer: opts.closer, closeImpl: opts.closeImpl },
        ctx,
      );
    }
    ctx.throwIfCancelled();
    await tmp.commit();
    return {
      format: header.format,
      dest: tmp.dest,
      files: progress.files,
      bytes: progress.bytes,
      requirements: [...requirements],
      close,
    };
  } catch (e) {
    const err = toSluiceError(e);
    if (closer) await closer.drain().catch(() => undefined); // every fd closed before the tree goes
    if (tmp) {
      ctx.phase('cleanup');
      await tmp.discard();
    }
    throw err;
  }
}

/**
 * The inner loop (consumev1 / consumev2). The fncache (a fncache store's `data/` and `meta/`
 * names, registered by fncachevfs.__call__ and written at transaction close) is streamed to its
 * file as entries arrive instead of held in memory: peak RSS stays flat in the file count too.
 */
async function writeEntries(
  reader: StreamReader,
  root: string,
  requirements: ReadonlySet<string>,
  closer: BackgroundCloser,
  progress: ProgressTracker,
  ctx: JobContext,
): Promise<void> {
  const encode = storePathEncoder(requirements);
  const keepNodemaps = requirements.has('persistent-nodemap') || !requirements.has('revlogv1');
  const store = new DirectoryWriter(join(root, '.hg', 'store'));
  const cache = new DirectoryWriter(join(root, '.hg', 'cache'));
  const fncache = requirements.has('fncache')
    ? new FncacheWriter(join(root, '.hg', 'store', 'fncache'))
    : undefined;
  const signal = ctx.signal;
  const fast = reader.tryNextEntry !== undefined && reader.tryCopyData !== undefined;

  let fd = -1;
  const write = (chunk: Uint8Array): void => {
    if (signal.aborted) throw cancelled();
    let off = 0;
    while (off < chunk.length) off += writeSync(fd, chunk, off, chunk.length - off);
    progress.addBytes(chunk.length);
  };
  const discard = (chunk: Uint8Array): void => progress.addBytes(chunk.length);

  try {
    for (;;) {
      if (signal.aborted) throw cancelled();
      // Synchronous fast path first: most entries (header and data) are already buffered, and
      // awaiting the promise chain of nextEntry/copyData for each cost ~30-60 ms per 20k files.
      const entry = (fast && reader.tryNextEntry!()) || (await reader.nextEntry());
      if (entry === null) break;
      const { vfs, name } = entry;
      if (vfs === 's' && !keepNodemaps && NODEMAP_FILE.test(name)) {
        if (!(fast && reader.tryCopyData!(discard))) await reader.copyData(discard);
      } else {
        fd = vfs === 's' ? store.open(encode(name), vfs, name) : cache.open(name, vfs, name);
        try {
          if (!(fast && reader.tryCopyData!(write))) await reader.copyData(write);
        } catch (e) {
          closeSync(fd);
          throw e;
        }
        const full = closer.close(fd);
        if (full) await full;
        if (fncache && vfs === 's' && (name.startsWith('data/') || name.startsWith('meta/')))
          fncache.add(name);
      }
      progress.fileDone(vfs, name, entry.size);
    }
  } finally {
    fncache?.close(); // on errors too: no fd may outlive the job (Windows cannot remove the temporary)
  }
}

/**
 * The fncache file, appended as entries arrive (store.fncache.write's format: encodedir'd names,
 * one per line). Any order is valid (hg keeps a set). No name is listed twice: a stream that sends
 * one twice fails at its second open (DirectoryWriter creates every file exclusively).
 */
class FncacheWriter {
  private readonly fd: number;
  private pending = '';

  constructor(path: string) {
    this.fd = openSync(path, 'w');
  }

  add(name: string): void {
    this.pending += encodeDir(name) + '\n';
    if (this.pending.length >= 65536) this.flush();
  }

  close(): void {
    try {
      this.flush();
    } finally {
      closeSync(this.fd);
    }
  }

  private flush(): void {
    const bytes = Buffer.from(this.pending, 'latin1');
    this.pending = '';
    let off = 0;
    while (off < bytes.length) off += writeSync(this.fd, bytes, off, bytes.length - off);
  }
}

/**
 * Opens files for writing under one directory, creating each parent directory once. Names are
 * byte strings: ASCII ones (every dotencode name) are passed as strings, others as Buffers so
 * their bytes reach the filesystem unchanged instead of being UTF-8 encoded.
 *
 * Every file is created exclusively (O_EXCL, free: the kernel looks the name up anyway). The tree
 * is a fresh temporary, so an existing file means the stream named one file twice, or two names
 * that land on one file (a case-insensitive disk). hg would write both and keep the last;
 * a generator never sends that, so Sluice refuses it instead of guessing.
 */
class DirectoryWriter {
  private readonly made = new Set<string>();

  constructor(private readonly base: string) {}

  /** `vfs` and `streamName` name the entry in the error (`name` is its on-disk form). */
  open(name: string, vfs: string, streamName: string): number {
    const slash = name.lastIndexOf('/');
    const dir = slash < 0 ? '' : name.slice(0, slash);
    if (!this.made.has(dir)) {
      mkdirSync(this.fsPath(dir), { recursive: true });
      this.made.add(dir);
    }
    try {
      return openSync(this.fsPath(name), 'wx');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      throw new SluiceError(
        'MALFORMED',
        `the stream sends ${vfs === 's' ? 'store' : 'cache'} file ${JSON.stringify(streamName)} twice ` +
          `(or two names for the same file on this disk)`,
        { vfs, name: streamName },
      );
    }
  }

  private fsPath(name: string): string | Buffer {
    if (name === '') return this.base;
    // eslint-disable-next-line no-control-regex
    if (!/[^\x00-\x7f]/.test(name)) return this.base + '/' + name;
    return Buffer.concat([Buffer.from(this.base + '/', 'utf8'), Buffer.from(name, 'latin1')]);
  }
}
