// Verify's filelog scans on worker threads beside the main thread (filelog-worker.ts). Every
// filelog of the store is an item, sorted as verify checks them. Workers claim items from a shared
// counter while the main thread checks the changelog and manifests; when the main thread reaches
// an item nobody claimed yet it claims and scans it itself, so all cores read filelogs to the end.
// Workers stay at most a budget of index bytes ahead of what the main thread consumed: memory does
// not grow with the repository.
import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import { locateWorkerScript, type WorkerScript } from '../../context/worker-script';
import type { FilelogScan, FilelogScanRequest } from './filelog-scan';
import {
  CTL_CONSUMED,
  CTL_NEXT,
  CTL_SIZE,
  CTL_STOP,
  SCAN_WORKER_KIND,
  type ScanWorkerData,
  type ScanWorkerMessage,
} from './scan-protocol';

/**
 * Workers a verify uses by default: none on two cores or fewer, else one per core beside the main
 * thread, at most 3. On two cores the second one already runs V8's GC and compiler threads: the
 * worker bought 3% of wall time (quiet 2-core machine, history corpus, Node 24: 3.35 s against
 * 3.48 s) for 26 MB more peak RSS (135 against 109 MB; a bare worker's isolate and Node
 * environment alone cost 18 MB), which put verify beyond 2x hg verify's memory.
 */
export function defaultScanWorkers(cores = availableParallelism()): number {
  return cores <= 2 ? 0 : Math.min(3, cores - 1);
}

/**
 * Where the worker script is: next to the bundle (out/cli/verify-worker.mjs, out/main/verify-worker.js;
 * this module may sit in a chunks/ folder below), or the TypeScript source run through tsx (tests,
 * dev). null: not found (verify then reads every filelog on its own thread).
 */
export function scanWorkerScript(): WorkerScript | null {
  return locateWorkerScript(import.meta.url, './filelog-worker.ts', 'verify-worker');
}

export interface ScanItem {
  /** the file path verify asks for (take()) */
  file: string;
  req: FilelogScanRequest;
  /** NAME.i bytes: its scan result holds at most that much (64 bytes per revision) */
  size: number;
}

export class ScanPool {
  private readonly workers: Worker[] = [];
  private readonly control = new Int32Array(new SharedArrayBuffer(CTL_SIZE * 4));
  private readonly costs: Int32Array;
  private readonly position = new Map<string, number>();
  /** items this thread claimed (and scans itself) */
  private readonly mine: Uint8Array;
  private readonly results = new Map<number, FilelogScan | Error>();
  private readonly waiters = new Map<number, (r: FilelogScan | Error) => void>();
  /** last item taken */
  private taken = -1;
  private broken = false;

  constructor(
    script: WorkerScript,
    count: number,
    items: readonly ScanItem[],
    /** bytes of scan results workers may hold ahead of consumption */
    budgetBytes: number,
    cacheBytes: number | undefined,
    /** false: this thread never claims an item, the workers read every filelog (tests) */
    private readonly claimHere = true,
    streamAbove?: number,
  ) {
    this.costs = new Int32Array(items.length);
    items.forEach((it, i) => {
      this.costs[i] = Math.max(1, Math.ceil(it.size / 1024));
      this.position.set(it.file, i);
    });
    this.mine = new Uint8Array(items.length);
    const data: ScanWorkerData = {
      kind: SCAN_WORKER_KIND,
      items: items.map((it) => it.req),
      costs: this.costs,
      control: this.control,
      budget: Math.max(1, Math.floor(budgetBytes / 1024)),
      ...(cacheBytes !== undefined ? { cacheBytes } : {}),
      ...(streamAbove !== undefined ? { streamAbove } : {}),
    };
    // node:worker_threads loads here, not with the module: a verify without workers (the default
    // on two cores) does not pay its ~0.4 MB of RSS
    const { Worker: WorkerThread } = process.getBuiltinModule('node:worker_threads');
    for (let w = 0; w < count; w++) {
      const worker = new WorkerThread(script.bootstrap ?? script.script, {
        workerData: script.bootstrap ? { ...data, __entry: script.script.href } : data,
        // a scan's garbage is short-lived and small: a small young generation keeps RSS down
        resourceLimits: { maxYoungGenerationSizeMb: 2 },
        stdout: false,
        stderr: false,
      });
      worker.unref();
      worker.on('message', (m: ScanWorkerMessage) => {
        if ('done' in m) return;
        this.settle(m.i, 'scan' in m ? m.scan : new Error(m.error));
      });
      const fail = (): void => this.fail();
      worker.on('error', fail);
      worker.on('exit', (code) => {
        if (code !== 0) fail();
      });
      this.workers.push(worker);
    }
  }

  private settle(i: number, r: FilelogScan | Error): void {
    const w = this.waiters.get(i);
    if (w) {
      this.waiters.delete(i);
      w(r);
    } else if (i > this.taken) this.results.set(i, r);
  }

  /** A worker died: whatever it had claimed is read on this thread instead. */
  private fail(): void {
    if (this.broken) return;
    this.broken = true;
    Atomics.store(this.control, CTL_STOP, 1);
    for (const [i, w] of this.waiters) {
      this.waiters.delete(i);
      w(new Error('verify worker failed'));
    }
  }

  /**
   * The scan of `file` from a worker; undefined when this thread should scan it itself (nobody
   * claimed it, it is not an item, or the workers failed). Files are taken in the items' order.
   */
  take(file: string): Promise<FilelogScan> | undefined {
    const j = this.position.get(file);
    if (j === undefined || j <= this.taken) return undefined;
    const ctl = this.control;
    let claimedHere = false;
    for (
      let cur = Atomics.load(ctl, CTL_NEXT);
      this.claimHere && cur <= j;
      cur = Atomics.load(ctl, CTL_NEXT)
    ) {
      if (Atomics.compareExchange(ctl, CTL_NEXT, cur, j + 1) === cur) {
        // claimed cur..j: cur..j-1 are orphans nobody will scan, j is this thread's
        for (let k = cur; k <= j; k++) this.mine[k] = 1;
        claimedHere = true;
        break;
      }
    }
    // items between the last one taken and this one are not checked by verify (orphans)
    for (let k = this.taken + 1; k < j; k++) this.release(k);
    this.taken = j;
    if (claimedHere) return undefined;
    const done = this.results.get(j);
    this.results.delete(j);
    const got =
      done !== undefined
        ? Promise.resolve(done)
        : this.broken
          ? Promise.resolve(new Error('verify worker failed'))
          : new Promise<FilelogScan | Error>((resolve) => this.waiters.set(j, resolve));
    return got.then((r) => {
      this.release(j);
      if (r instanceof Error) throw r;
      return r;
    });
  }

  /** Gives a worker-claimed item's budget back (its result consumed or dropped). */
  private release(k: number): void {
    this.results.delete(k);
    if (this.mine[k]) return;
    Atomics.add(this.control, CTL_CONSUMED, this.costs[k]!);
    Atomics.notify(this.control, CTL_CONSUMED);
  }

  async close(): Promise<void> {
    Atomics.store(this.control, CTL_STOP, 1);
    Atomics.notify(this.control, CTL_CONSUMED);
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}
