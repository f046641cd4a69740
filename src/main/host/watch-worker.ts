// The library's watches, run on one worker thread (watch-worker-entry.ts) owned by the repository
// watcher: on Linux a repository is watched folder by folder (tree-watch.ts), and walking a new
// working copy to watch its folders costs the worker, not the host's main thread. The worker posts
// each repository's changed paths coalesced per flush window; a removed watch is torn down there too.
import { Worker } from 'node:worker_threads';
import { workerEnvWithCompileCache } from '../compile-cache';
import { locateWorkerScript } from '../engine/context/worker-script';
import {
  WATCH_WORKER_KIND,
  type WatchCommand,
  type WatchWorkerData,
  type WatchWorkerMessage,
} from './watch-protocol';

/** The file-system events of one repository, as paths relative to its root ('/'-separated). */
export interface RepoEvents {
  /** notStarted: the watch could not be set up at all (poll instead of watching again at once) */
  onError(listener: (notStarted: boolean) => void): void;
  close(): void;
}

/** partial: only the working copy's root has events (too many folders, or out of watches) */
export type OnWatchReady = (partial: boolean) => void;

interface Subscription {
  onEvent: (rel: string | null) => void;
  onReady: OnWatchReady;
  onError?: (notStarted: boolean) => void;
  /** folders the worker watches for it, as last reported */
  folders: number;
}

/** How many folders the worker watches for one repository (diagnostics, tests). */
export interface WatchedFolders {
  folders(): number;
}

export class WatchWorker {
  private readonly subscriptions = new Map<number, Subscription>();
  private nextId = 1;
  private failed = false;
  /** messages and coalesced file-system events received (diagnostics, tests) */
  batches = 0;
  events = 0;

  private constructor(private readonly worker: Worker) {
    worker.on('message', (m: WatchWorkerMessage) => this.receive(m));
    worker.on('error', () => this.fail());
    worker.on('exit', () => this.fail());
    // the library's watches never keep the process alive
    worker.unref();
  }

  /** The worker, or null when its script is not found or it cannot start (watch on this thread then). */
  static start(maxFoldersPerRoot?: number): WatchWorker | null {
    const script = locateWorkerScript(import.meta.url, './watch-worker-entry.ts', 'watch-worker');
    if (!script) return null;
    const data: WatchWorkerData = { kind: WATCH_WORKER_KIND, maxFoldersPerRoot };
    try {
      const worker = new Worker(script.bootstrap ?? script.script, {
        workerData: script.bootstrap ? { ...data, __entry: script.script.href } : data,
        env: workerEnvWithCompileCache(),
        stdout: false,
        stderr: false,
      });
      return new WatchWorker(worker);
    } catch {
      return null;
    }
  }

  /** false once the worker failed or was stopped: its watches reported an error, new ones go elsewhere */
  get alive(): boolean {
    return !this.failed;
  }

  /** One watch of `root` in the worker; onReady once it is set up (events before are not seen). */
  watch(
    root: string,
    onEvent: (rel: string | null) => void,
    onReady: OnWatchReady,
  ): RepoEvents & WatchedFolders {
    const id = this.nextId++;
    const subscription: Subscription = { onEvent, onReady, folders: 0 };
    this.subscriptions.set(id, subscription);
    this.send({ type: 'add', id, root });
    return {
      onError: (listener) => {
        subscription.onError = listener;
      },
      close: () => {
        if (this.subscriptions.delete(id)) this.send({ type: 'remove', id });
      },
      folders: () => subscription.folders,
    };
  }

  /** Ends the thread the way a crash would: its watches err and move elsewhere (tests). */
  kill(): void {
    void this.worker.terminate();
  }

  stop(): void {
    this.failed = true;
    this.subscriptions.clear();
    void this.worker.terminate();
  }

  private send(command: WatchCommand): void {
    if (!this.failed) this.worker.postMessage(command);
  }

  private receive(m: WatchWorkerMessage): void {
    if (m.type === 'watching') {
      const s = this.subscriptions.get(m.id);
      if (s) s.folders = m.folders;
      return s?.onReady(m.partial);
    }
    if (m.type === 'error') {
      const s = this.subscriptions.get(m.id);
      this.subscriptions.delete(m.id);
      s?.onError?.(!m.started);
      return;
    }
    this.batches++;
    this.events += m.raw;
    for (const { id, paths, folders } of m.watches) {
      const s = this.subscriptions.get(id);
      if (!s) continue; // closed while the batch was on its way
      s.folders = folders;
      if (paths === null) s.onEvent(null);
      else for (const rel of paths) s.onEvent(rel);
    }
  }

  /** The worker died: every watch errs, and is set up again elsewhere by its owner. */
  private fail(): void {
    if (this.failed) return;
    this.failed = true;
    const subscriptions = [...this.subscriptions.values()];
    this.subscriptions.clear();
    for (const s of subscriptions) s.onError?.(false);
  }
}
