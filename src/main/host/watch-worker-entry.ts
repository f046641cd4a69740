// Worker thread entry of the library's recursive watches (watch-worker.ts): one fs.watch
// ({ recursive: true }) per repository, so that Node's Linux emulation of it (a walk of the tree,
// one inotify watch per folder, walks again on folder events, slow teardown while a tree is
// deleted) runs here and never on the host's main thread. Events are coalesced per repository and
// posted at most once per flush window; nothing runs while no event arrives.
// Built as out/main/watch-worker.js.
import { watch, type FSWatcher } from 'node:fs';
import { sep } from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import {
  MAX_PATHS_PER_ROOT,
  WATCH_FLUSH_MS,
  WATCH_WORKER_KIND,
  type WatchBatch,
  type WatchCommand,
  type WatchFailure,
  type WatchStarted,
  type WatchWorkerData,
} from './watch-protocol';

function serve(port: NonNullable<typeof parentPort>): void {
  const watchers = new Map<number, FSWatcher>();
  /** per watch: the relative paths seen since the last flush; null = too many to name */
  let pending = new Map<number, Set<string> | null>();
  let raw = 0;
  let flushTimer: ReturnType<typeof setTimeout> | undefined;

  const flush = (): void => {
    flushTimer = undefined;
    const batch: WatchBatch = { type: 'events', raw, watches: [] };
    for (const [id, paths] of pending) batch.watches.push({ id, paths: paths ? [...paths] : null });
    pending = new Map();
    raw = 0;
    port.postMessage(batch);
  };

  const record = (id: number, rel: string | null): void => {
    if (!watchers.has(id)) return; // closed: late events of a removed watch
    raw++;
    const paths = pending.get(id);
    if (paths === null) {
      // already "something changed": nothing more to remember
    } else if (rel === null || (paths && paths.size >= MAX_PATHS_PER_ROOT)) pending.set(id, null);
    else if (paths) paths.add(rel);
    else pending.set(id, new Set([rel]));
    flushTimer ??= setTimeout(flush, WATCH_FLUSH_MS);
  };

  const stop = (id: number): void => {
    watchers.get(id)?.close();
    watchers.delete(id);
    pending.delete(id);
  };

  const failed = (id: number, started: boolean, e: unknown): void => {
    if (!watchers.has(id) && started) return; // removed already
    stop(id);
    const failure: WatchFailure = { type: 'error', id, started, message: String((e as Error)?.message ?? e) };
    port.postMessage(failure);
  };

  port.on('message', (command: WatchCommand) => {
    if (command.type === 'remove') return stop(command.id);
    const { id, root } = command;
    try {
      const w = watch(root, { persistent: false, recursive: true }, (_type, name) =>
        record(id, name === null ? null : String(name).split(sep).join('/')),
      );
      w.on('error', (e) => failed(id, true, e));
      watchers.set(id, w);
      const started: WatchStarted = { type: 'watching', id };
      port.postMessage(started);
    } catch (e) {
      failed(id, false, e);
    }
  });
}

// only as the watch worker (a bundle may load this module elsewhere)
const data = workerData as WatchWorkerData | undefined;
if (parentPort && data?.kind === WATCH_WORKER_KIND) serve(parentPort);
