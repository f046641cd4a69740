// The files of a checkout as one batch that several threads write together (merge.batchget,
// which hg spreads over forked workers). Every thread, the main one and checkout's worker threads
// (checkout-worker.ts), runs the same loop: claim the next run of files from a shared counter,
// and for each read its filelog revision, create the file exclusively, write it, fstat it and
// hand its fd to that thread's background closer. What a file became (created, done; its mode,
// size and mtime) goes to shared arrays, so nothing crosses threads per file: the main thread
// reads those arrays for progress, the dirstate, and the undo of a failed or cancelled checkout.
// Memory: a thread holds one file's chain (compressed span, decoded chunks, one text) at a time,
// except for texts above STREAM_ABOVE: those are streamed into their file (Revlog.streamRevision:
// never the whole text; the chain's full snapshot is read and decompressed 1 MiB at a time and
// its deltas, folded, applied on the way), and only one thread at a time streams one (CTL_BIG;
// a thread finding the lock taken writes its other files first). Peak ~ STREAM_ABOVE per thread
// (the small texts) + 8 MiB read spans + a few MiB for a streamed file plus its decoded deltas,
// whatever the largest file is (a 318 MB snapshot: 923 -> 101 MB peak RSS).
import type { CloseStats } from '../../../shared/events';
import { scanManifest, type ManifestEntry } from '../revlog/texts';
import { BackgroundCloser, type CloseImpl, type CloserPlan } from '../closer/background-closer';
import { SluiceError, toSluiceError } from '../errors';
import { LocalRepo } from '../repo/local-repo';
import type { RepoLocation } from '../store/requirements';
import { FileTextReader, metaStripper, stripFilelogMeta, type OpenedRevision } from './file-texts';
import { workingPath } from './path-auditor';
import { exists, FileCreator, type WrittenFile } from './wc-writer';
import { STREAM_ABOVE } from '../revlog/constants';

export const CHECKOUT_WORKER_KIND = 'sluice-checkout-files';

/**
 * What every thread needs to write the batch (structured-cloned to the workers). The files are
 * columns in SharedArrayBuffers, which the clone shares instead of copying: a string per path and
 * node cloned into each worker's heap was ~250 bytes a file there (+20 MB of peak RSS on the large
 * corpus's 99k files); a thread decodes a path when it writes that file.
 */
export interface FileBatch {
  loc: RepoLocation;
  files: BatchFiles;
  /** set: file i is written at `${scratch}/${i}` (moved into place later), else at its path */
  scratch?: string;
  symlinks?: boolean;
  /** tests: stream texts above this size (default STREAM_ABOVE) */
  streamAbove?: number;
  closer: CloserPlan;
}

export interface BatchFiles {
  count: number;
  /**
   * the manifest paths' bytes (latin1), back to back in the manifest's order (sorted: neighbours
   * share filelog and working directories); file i's end at pathEnds[i]
   */
  pathBytes: Uint8Array;
  pathEnds: Uint32Array;
  /** file i's filelog node at i * 20 */
  nodes: Uint8Array;
  /** file i's manifest flag byte ('x', 'l', 't'), 0 for none */
  flags: Uint8Array;
}

const shared8 = (n: number): Uint8Array => new Uint8Array(new SharedArrayBuffer(Math.max(1, n)));

/** The entries' columns, in SharedArrayBuffers. */
export function packBatchFiles(entries: readonly ManifestEntry[]): BatchFiles {
  const count = entries.length;
  let total = 0;
  for (const e of entries) total += e.path.length; // latin1 byte strings: one char per byte
  const pathBytes = shared8(total);
  const pathEnds = new Uint32Array(new SharedArrayBuffer(Math.max(1, count) * 4));
  const nodes = shared8(count * 20);
  const flags = shared8(count);
  const pb = Buffer.from(pathBytes.buffer, 0, pathBytes.length);
  const nb = Buffer.from(nodes.buffer, 0, nodes.length);
  let at = 0;
  for (let i = 0; i < count; i++) {
    const e = entries[i]!;
    at += pb.write(e.path, at, 'latin1');
    pathEnds[i] = at;
    nb.write(e.nodeHex, i * 20, 'hex');
    flags[i] = e.flag === '' ? 0 : e.flag.charCodeAt(0);
  }
  return { count, pathBytes, pathEnds, nodes, flags };
}

/** a hex digit's value (the manifest scanner has checked the digits) */
const HEX_VALUE = new Uint8Array(256);
for (let c = 0; c < 10; c++) HEX_VALUE[0x30 + c] = c;
for (let c = 0; c < 6; c++) HEX_VALUE[0x61 + c] = 10 + c;

/**
 * Every line of a manifest text as a batch (a checkout from null writes them all), checked as
 * parseManifest checks it: the columns packBatchFiles makes from entries, taken from the text's
 * bytes, and the paths as strings, without an entry object and a hex string per line in between
 * (medium corpus: 19,678 of each, made and dropped on the serial path before the first file).
 */
export function packManifestFiles(text: Uint8Array): { files: BatchFiles; paths: string[] } {
  const src = Buffer.from(text.buffer, text.byteOffset, text.length);
  // a line is at least 42 bytes; its path is shorter than the line
  const most = Math.floor(text.length / 42);
  const pathSab = new SharedArrayBuffer(Math.max(1, text.length));
  const endsSab = new SharedArrayBuffer(Math.max(1, most) * 4);
  const nodesSab = new SharedArrayBuffer(Math.max(1, most * 20));
  const flagsSab = new SharedArrayBuffer(Math.max(1, most));
  const pb = Buffer.from(pathSab);
  const ends = new Uint32Array(endsSab);
  const nodes = new Uint8Array(nodesSab);
  const flags = new Uint8Array(flagsSab);
  const paths: string[] = [];
  let count = 0;
  let at = 0;
  scanManifest(text, (start, nul, flag) => {
    at += src.copy(pb, at, start, nul);
    ends[count] = at;
    paths.push(src.toString('latin1', start, nul));
    for (let k = 0, h = nul + 1, o = count * 20; k < 20; k++, h += 2)
      nodes[o + k] = (HEX_VALUE[text[h]!]! << 4) | HEX_VALUE[text[h + 1]!]!;
    flags[count] = flag;
    count++;
  });
  return {
    files: {
      count,
      pathBytes: new Uint8Array(pathSab, 0, at),
      pathEnds: new Uint32Array(endsSab, 0, count),
      nodes: new Uint8Array(nodesSab, 0, count * 20),
      flags: new Uint8Array(flagsSab, 0, count),
    },
    paths,
  };
}

/** a Buffer over each batch's path bytes, made once (a view per path decoded was ~100 bytes per file) */
const pathBuffers = new WeakMap<Uint8Array, Buffer>();

/** File i's manifest path (a latin1 byte string). */
export function batchPath(files: BatchFiles, i: number): string {
  const b = files.pathBytes;
  let buf = pathBuffers.get(b);
  if (buf === undefined) {
    buf = Buffer.from(b.buffer, b.byteOffset, b.length);
    pathBuffers.set(b, buf);
  }
  return buf.toString('latin1', i > 0 ? files.pathEnds[i - 1]! : 0, files.pathEnds[i]!);
}

const FLAG_NAMES: Record<number, string> = { 0: '', 0x78: 'x', 0x6c: 'l', 0x74: 't' };

/** File i's manifest flag: '', 'x', 'l' or 't'. */
export function batchFlag(files: BatchFiles, i: number): string {
  return FLAG_NAMES[files.flags[i]!] ?? '';
}

/** control words (Int32Array over a SharedArrayBuffer) */
export const CTL_NEXT = 0;
/** 1: stop claiming (an error or a cancel) */
export const CTL_STOP = 1;
/** 1: the main thread made the directories, files may be written */
export const CTL_GO = 2;
/** 1: a thread is streaming a large file (one at a time: their bases and deltas are what is big) */
const CTL_BIG = 3;
const CTL_SIZE = 4;

/** per-file status */
export const FILE_PENDING = 0;
/** the file exists (maybe partly written): an undo removes it */
export const FILE_CREATED = 1;
export const FILE_DONE = 2;

/** Files claimed at once: runs of neighbours keep one directory's creates on one thread. */
const CLAIM = 16;

export interface BatchShared {
  control: Int32Array;
  status: Int32Array;
  /** per file: st_mode, size, mtime (whole seconds) */
  stats: Float64Array;
}

export function newBatchShared(files: number): BatchShared {
  return {
    control: new Int32Array(new SharedArrayBuffer(CTL_SIZE * 4)),
    status: new Int32Array(new SharedArrayBuffer(Math.max(1, files) * 4)),
    stats: new Float64Array(new SharedArrayBuffer(Math.max(1, files) * 3 * 8)),
  };
}

/** Where file i goes (`path`: its batchPath, when the caller has it already). */
export function batchTarget(batch: FileBatch, i: number, path?: string): string | Buffer {
  return batch.scratch !== undefined
    ? `${batch.scratch}/${i}`
    : workingPath(batch.loc.root, path ?? batchPath(batch.files, i));
}

export interface ShareResult {
  close: CloseStats;
  /** files this thread wrote */
  files: number;
  /** this thread's CPU time so far (ms; runtimes with process.threadCpuUsage, Node >= 23.9) */
  cpuMs?: number;
  error?: SluiceError;
}

/** One thread's share of a batch: the files it claims, written through its own closer. */
class ShareWriter {
  readonly reader: FileTextReader;
  readonly closer: BackgroundCloser;
  private readonly creator: FileCreator;
  private readonly streamAbove: number;
  /** files written by this thread */
  files = 0;

  constructor(
    private readonly batch: FileBatch,
    private readonly shared: BatchShared,
    private readonly opts: { closeImpl?: CloseImpl; tick?: () => void },
  ) {
    this.reader = new FileTextReader(LocalRepo.fromLocation(batch.loc));
    this.closer = new BackgroundCloser(batch.closer, opts.closeImpl);
    this.creator = new FileCreator(
      this.closer,
      (i) => Atomics.store(shared.status, i, FILE_CREATED),
      batch.symlinks === undefined ? {} : { symlinks: batch.symlinks },
    );
    this.streamAbove = batch.streamAbove ?? STREAM_ABOVE;
  }

  /** Claims files CLAIM at a time until none is left or a thread failed; then the deferred ones. */
  async claimAll(): Promise<void> {
    const { control } = this.shared;
    const n = this.batch.files.count;
    /** large files this thread claimed while another thread streamed one */
    const deferred: number[] = [];
    claims: for (;;) {
      const first = Atomics.add(control, CTL_NEXT, CLAIM);
      if (first >= n) break;
      for (let i = first; i < Math.min(n, first + CLAIM); i++) {
        if (Atomics.load(control, CTL_STOP)) break claims;
        let wrote = this.writeFile(i, true);
        if (wrote instanceof Promise) wrote = await wrote;
        if (!wrote) deferred.push(i);
      }
    }
    for (const i of deferred) {
      if (Atomics.load(control, CTL_STOP)) break;
      await this.writeFile(i, false);
    }
  }

  private done(i: number, w: WrittenFile): void {
    const { status, stats } = this.shared;
    stats[i * 3] = w.mode;
    stats[i * 3 + 1] = w.size;
    stats[i * 3 + 2] = w.mtimeSec;
    Atomics.store(status, i, FILE_DONE);
    this.files++;
    this.opts.tick?.();
  }

  /**
   * Writes file i: synchronously in the common case (a small filelog read whole, its text built
   * from memory, the file created and handed to a closer with room); a promise when any step has
   * to wait. false: a large file deferred (see writeLarge).
   */
  private writeFile(i: number, mayDefer: boolean): boolean | Promise<boolean> {
    const batch = this.batch;
    const path = batchPath(batch.files, i);
    const opened = this.reader.open(path, batch.files.nodes, i * 20);
    if (opened instanceof Promise) return this.writeSlow(i, opened, mayDefer);
    const { revlog, rev } = opened;
    const flag = batchFlag(batch.files, i);
    let w: WrittenFile | Promise<WrittenFile>;
    try {
      if (flag !== 'l' && revlog.index.rawSize(rev) > this.streamAbove)
        return this.writeLarge(i, opened, mayDefer);
      const view = revlog.revisionViewNow(rev);
      if (view === undefined) return this.writeSlow(i, opened, mayDefer);
      w = this.creator.create(batchTarget(batch, i, path), stripFilelogMeta(view), flag, i);
    } catch (e) {
      void this.reader.release(opened); // opened synchronously: in memory, so released synchronously
      throw existsError(e, path);
    }
    void this.reader.release(opened);
    if (w instanceof Promise)
      return w.then(
        (x) => (this.done(i, x), true),
        (e: unknown) => {
          throw existsError(e, path);
        },
      );
    this.done(i, w);
    return true;
  }

  /** A file whose text is built whole, once its revision or its text needed a promise. */
  private async writeSlow(
    i: number,
    opened: OpenedRevision | Promise<OpenedRevision>,
    mayDefer: boolean,
  ): Promise<boolean> {
    const o = await opened;
    const files = this.batch.files;
    const flag = batchFlag(files, i);
    if (flag !== 'l' && o.revlog.index.rawSize(o.rev) > this.streamAbove)
      return this.writeLarge(i, o, mayDefer);
    try {
      // the text lives in the reader's reused buffer until the revision is released
      const text = stripFilelogMeta(await o.revlog.revisionView(o.rev));
      const path = batchPath(files, i);
      this.done(i, await this.creator.create(batchTarget(this.batch, i, path), text, flag, i));
      return true;
    } catch (e) {
      throw existsError(e, batchPath(files, i));
    } finally {
      await this.reader.release(o);
    }
  }

  /**
   * A large file (above streamAbove): streamed into its file, one such file at a time across the
   * threads (CTL_BIG). false: deferred (another thread streams one and mayDefer).
   */
  private async writeLarge(i: number, o: OpenedRevision, mayDefer: boolean): Promise<boolean> {
    const { control } = this.shared;
    const path = batchPath(this.batch.files, i);
    let locked = false;
    try {
      if (Atomics.compareExchange(control, CTL_BIG, 0, 1) !== 0) {
        if (mayDefer) return false;
        while (Atomics.compareExchange(control, CTL_BIG, 0, 1) !== 0) {
          if (Atomics.load(control, CTL_STOP)) return true;
          await new Promise((r) => setTimeout(r, 5));
        }
      }
      locked = true;
      const w = await this.creator.createStreamed(
        batchTarget(this.batch, i, path),
        batchFlag(this.batch.files, i),
        i,
        async (write) => {
          const strip = metaStripper(write);
          await o.revlog.streamRevision(o.rev, strip.push);
          strip.end();
        },
      );
      this.done(i, w);
      return true;
    } catch (e) {
      throw existsError(e, path);
    } finally {
      if (locked) Atomics.store(control, CTL_BIG, 0);
      await this.reader.release(o);
    }
  }
}

/** A create that found a file in the way: hg's "untracked file in the way" error; else e. */
function existsError(e: unknown, path: string): unknown {
  return (e as NodeJS.ErrnoException).code === 'EEXIST' ? exists(path) : e;
}

/**
 * One thread's share of the batch: claims files until none are left or CTL_STOP is set; the first
 * error sets CTL_STOP and is returned once this thread's closer has closed everything.
 * `tick` runs after each file (the main thread's progress and cancel checks).
 */
export async function writeShare(
  batch: FileBatch,
  shared: BatchShared,
  opts: { closeImpl?: CloseImpl; tick?: () => void } = {},
): Promise<ShareResult> {
  const { control } = shared;
  const writer = new ShareWriter(batch, shared, opts);
  let error: SluiceError | undefined;
  try {
    await writer.claimAll();
  } catch (e) {
    error = toSluiceError(e);
    Atomics.store(control, CTL_STOP, 1);
  }
  let close: CloseStats;
  try {
    close = await writer.closer.drain();
  } catch (e) {
    error ??= toSluiceError(e);
    Atomics.store(control, CTL_STOP, 1);
    close = writer.closer.stats();
  }
  const cpu = threadCpuMs();
  const files = writer.files;
  const r: ShareResult = cpu === undefined ? { close, files } : { close, files, cpuMs: cpu };
  if (error) r.error = error;
  return r;
}

function threadCpuMs(): number | undefined {
  const f = (process as { threadCpuUsage?: () => { user: number; system: number } }).threadCpuUsage;
  if (!f) return undefined;
  const u = f.call(process);
  return Math.round((u.user + u.system) / 1000);
}

/** A SluiceError as a worker posts it (structured clone drops the class). */
export interface PostedError {
  code: string;
  message: string;
  details?: unknown;
}

export function postError(e: SluiceError): PostedError {
  return { code: e.code, message: e.message, ...(e.details !== undefined ? { details: e.details } : {}) };
}

export function fromPosted(p: PostedError): SluiceError {
  return new SluiceError(p.code as SluiceError['code'], p.message, p.details as never);
}

/** A checkout worker's workerData (its batch comes as its one message). */
export interface CheckoutWorkerData {
  kind: typeof CHECKOUT_WORKER_KIND;
  /** the store's revlogs are zstd: the worker loads its decoder while it waits for its batch */
  zstd?: boolean;
}

/** The one message a checkout worker receives: its batch (the SharedArrayBuffers are shared, not copied). */
export interface CheckoutTask {
  batch: FileBatch;
  shared: BatchShared;
}

export type CheckoutWorkerMessage = { close: CloseStats; files: number; cpuMs?: number; error?: PostedError };
