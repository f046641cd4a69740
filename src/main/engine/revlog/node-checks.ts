// Node id checks of large incoming texts on a second thread. A revision's node is the SHA-1 of its
// sorted parents and text (storageutil.hashrevisionsha1); the revlog writer checks every revision
// it receives (hg checks only the texts it happens to build). In a pull clone of the medium
// corpus, hashing its 804 manifests of 1.6 MB is ~0.75 s of the main thread's ~5 s, during the
// manifest group, while the server only sends stored deltas and the second core is mostly idle.
// So past a volume (WORKER_AFTER: a pull of a hundred such manifests never gets there; a worker
// costs ~50 ms of CPU and ~10 MB to start) each large text is copied into a buffer that goes to a
// worker and back (transferred, not copied) and hashed there while the main thread builds the
// next revision. Measured on Node 24 (loaded machine): the manifest group's main-thread time
// 1.2 s -> 0.45 s. WebCrypto's digest, which also hashes off the main thread, cost as much main
// thread as hashing in place (its copy of the input), and a copy into a SharedArrayBuffer is 10x
// slower than into an ArrayBuffer. Not on two cores or fewer (defaultWorkerAfter).
//
// A failed check is not seen by the add() that queued it but later: by the next add(), failed(),
// or drain(). The owner (RepoWriteSession) drains before anything is made visible and reports the
// earliest failure in preference to whatever error followed it (a text that does not hash to its
// node makes the next delta fail too). Memory stays bounded: a check waits while IN_FLIGHT_MAX
// bytes are out. The worker is stopped by close().

import { createHash, hash } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { SluiceError } from '../errors';

/** Texts from this size up may be hashed by the worker. */
export const WORKER_CHECK_MIN = 64 << 10;
/** Bytes of such texts hashed in place before the worker starts. */
export const WORKER_AFTER = 256 << 20;
/** Bytes of texts (copies) out with the worker at most. A larger text is hashed in place. */
const IN_FLIGHT_MAX = 4 << 20;

// The worker: hashes the first `length` bytes of each buffer it gets, in order, and sends the
// buffer back with the digest: [id, buffer, length] -> [id, digest, buffer].
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { hash } = require('node:crypto');
parentPort.on('message', ([id, buf, length]) => {
  const digest = hash('sha1', new Uint8Array(buf, 0, length), 'buffer');
  parentPort.postMessage([id, digest, buf], [buf]);
});
`;

type Mismatch = (computed: Uint8Array) => SluiceError;

interface Pending {
  id: number;
  bytes: number;
  node: Buffer;
  mismatch: Mismatch;
}

export interface NodeChecksOptions {
  /**
   * bytes of large texts hashed in place before the worker starts (default WORKER_AFTER, or
   * SLUICE_CHECK_WORKER_AFTER from the environment: tests run small changegroups through it)
   */
  workerAfter?: number;
}

/**
 * Bytes hashed in place before the worker starts: SLUICE_CHECK_WORKER_AFTER when set, else
 * WORKER_AFTER, or never on two cores or fewer (as verify's scan workers, operations/verify/scan-pool.ts):
 * there the second core runs the transport's decompression, V8's GC and, in a loopback pull, the
 * server. Measured on this 2-core machine (pull clone of the medium corpus from hg serve, loaded):
 * the worker cost 0.3-0.5 s more process CPU and 15-25 MB more peak RSS for no wall time.
 */
export function defaultWorkerAfter(cores = availableParallelism()): number {
  const env = Number(process.env.SLUICE_CHECK_WORKER_AFTER);
  if (process.env.SLUICE_CHECK_WORKER_AFTER && Number.isFinite(env) && env >= 0) return env;
  return cores <= 2 ? Infinity : WORKER_AFTER;
}

export class NodeChecks {
  private worker: Worker | undefined;
  private online = false;
  /** queued checks, oldest first (the worker answers in order) */
  private readonly pending: Pending[] = [];
  private inFlight = 0;
  /** buffers back from the worker, for the next copies (at most IN_FLIGHT_MAX bytes of them exist) */
  private readonly spare: ArrayBuffer[] = [];
  private nextId = 0;
  private failure: SluiceError | undefined;
  /** the worker could not start or died: everything is hashed in place from then on */
  private noWorker = false;
  /** large-text bytes still to hash in place before the worker starts */
  private beforeWorker: number;
  /** called when the pending list changes (an answer came, the worker failed, close) */
  private wake: (() => void) | undefined;
  private closed = false;

  constructor(opts: NodeChecksOptions = {}) {
    this.beforeWorker = opts.workerAfter ?? defaultWorkerAfter();
  }

  /**
   * Checks that sha1(hashed) is node. Hashed here: the mismatch error or null is returned. Queued
   * for the worker: null, or a promise to await first while the worker has IN_FLIGHT_MAX bytes
   * (hashed must stay unchanged until it resolves; it rejects with an earlier mismatch).
   */
  check(hashed: Uint8Array, node: Uint8Array, mismatch: Mismatch): SluiceError | null | Promise<void> {
    if (this.failure) return this.failure;
    const n = hashed.length;
    if (n < WORKER_CHECK_MIN || n > IN_FLIGHT_MAX || this.closed || this.noWorker)
      return checkNow(hashed, node, mismatch);
    if (this.beforeWorker > 0) {
      this.beforeWorker -= n;
      return checkNow(hashed, node, mismatch);
    }
    if (this.inFlight + n > IN_FLIGHT_MAX) {
      // while the worker starts (~30-50 ms) texts are hashed here rather than waited on
      if (this.worker && !this.online) return checkNow(hashed, node, mismatch);
      return this.changed().then(() => {
        const r = this.check(hashed, node, mismatch);
        if (r instanceof SluiceError) throw r;
        return r ?? undefined;
      });
    }
    const worker = this.start();
    if (!worker) return checkNow(hashed, node, mismatch);
    const buf = this.buffer(n);
    new Uint8Array(buf, 0, n).set(hashed);
    const p: Pending = { id: this.nextId++, bytes: n, node: Buffer.from(node), mismatch };
    // referenced while it holds checks: a caller awaiting drain() with nothing else pending must
    // not see the process end under it; idle, it never keeps the process alive
    if (this.pending.length === 0) worker.ref();
    this.pending.push(p);
    this.inFlight += n;
    worker.postMessage([p.id, buf, n], [buf]);
    return null;
  }

  /** A failure already known (checks still running are not waited for). */
  failed(): SluiceError | undefined {
    return this.failure;
  }

  /** Waits for every queued check; the earliest failure, if any. Never throws. */
  async firstFailure(): Promise<SluiceError | undefined> {
    while (this.pending.length && !this.failure) await this.changed();
    return this.failure;
  }

  /** Waits for every queued check and throws the earliest failure. */
  async drain(): Promise<void> {
    const f = await this.firstFailure();
    if (f) throw f;
  }

  /** Stops the worker (queued checks are dropped: drain() first to keep them). */
  close(): void {
    this.closed = true;
    this.pending.length = 0;
    this.inFlight = 0;
    this.spare.length = 0;
    const w = this.worker;
    this.worker = undefined;
    this.online = false;
    if (w) void w.terminate();
    this.notify();
  }

  private start(): Worker | undefined {
    if (this.worker) return this.worker;
    let w: Worker;
    try {
      // its garbage is 20-byte digests: a small young generation keeps its memory small
      w = new Worker(WORKER_SOURCE, { eval: true, resourceLimits: { maxYoungGenerationSizeMb: 1 } });
    } catch {
      this.noWorker = true;
      return undefined;
    }
    w.unref(); // until it holds checks (check)
    w.once('online', () => {
      if (this.worker === w) this.online = true;
    });
    w.on('message', (m: [number, Uint8Array, ArrayBuffer]) => this.answer(m[0], m[1], m[2]));
    w.on('error', (e) => this.lost(w, e));
    w.on('exit', (code) => this.lost(w, new Error(`exited with code ${code}`)));
    this.worker = w;
    return w;
  }

  /** A spare buffer of at least n bytes, or a new one with room for slightly larger texts. */
  private buffer(n: number): ArrayBuffer {
    const i = this.spare.findIndex((b) => b.byteLength >= n);
    if (i >= 0) return this.spare.splice(i, 1)[0]!;
    this.spare.shift(); // too small (if any): let it go
    return new ArrayBuffer(n + (n >> 3));
  }

  private answer(id: number, digest: Uint8Array, buf: ArrayBuffer): void {
    const p = this.pending[0];
    if (!p || p.id !== id) return; // closed meanwhile
    this.pending.shift();
    this.inFlight -= p.bytes;
    this.spare.push(buf);
    if (this.pending.length === 0) this.worker?.unref();
    if (!this.failure && Buffer.compare(digest, p.node) !== 0) this.failure = p.mismatch(digest);
    this.notify();
  }

  /**
   * The worker is gone with the copies it held: those texts can no longer be proven, so the
   * transaction fails (the worker only hashes: this is not expected to happen).
   */
  private lost(w: Worker, e: Error): void {
    if (this.closed || this.worker !== w) return;
    this.worker = undefined;
    this.online = false;
    this.noWorker = true;
    if (this.pending.length && !this.failure)
      this.failure = new SluiceError('IO', `the node id check thread failed: ${e.message}`);
    this.pending.length = 0;
    this.inFlight = 0;
    this.notify();
  }

  private changed(): Promise<void> {
    return new Promise<void>((resolve) => {
      const prev = this.wake;
      this.wake = () => {
        prev?.();
        resolve();
      };
    });
  }

  private notify(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }
}

/** The check done in place (hash() in one call over parents + text). */
export function checkNow(hashed: Uint8Array, node: Uint8Array, mismatch: Mismatch): SluiceError | null {
  const computed = hash('sha1', hashed, 'buffer');
  return Buffer.compare(computed, node) !== 0 ? mismatch(computed) : null;
}

/** The check done in place over parents and a text that lie apart (three updates, no copy). */
export function checkParts(
  lo: Uint8Array,
  hi: Uint8Array,
  text: Uint8Array,
  node: Uint8Array,
  mismatch: Mismatch,
): SluiceError | null {
  const computed = createHash('sha1').update(lo).update(hi).update(text).digest();
  return Buffer.compare(computed, node) !== 0 ? mismatch(computed) : null;
}
