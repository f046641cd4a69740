// Worker thread entry of the library's watches (watch-worker.ts): one TreeWatch per repository
// (the root, `.hg` and `.hg/store` without their subfolders, and the working copy folder by
// folder), so that walking a new working copy and following its folders runs here and never on the
// host's main thread. Events are coalesced per repository and posted at most once per flush
// window; nothing runs while no event arrives. Built as out/main/watch-worker.js.
import { parentPort, workerData } from 'node:worker_threads';
import { TreeWatch } from './tree-watch';
import {
  MAX_FOLDERS,
  MAX_FOLDERS_PER_ROOT,
  MAX_PATHS_PER_ROOT,
  WATCH_FLUSH_MS,
  WATCH_WORKER_KIND,
  type WatchBatch,
  type WatchCommand,
  type WatchFailure,
  type WatchStarted,
  type WatchWorkerData,
} from './watch-protocol';

function serve(port: NonNullable<typeof parentPort>, perRoot: number): void {
  const watches = new Map<number, TreeWatch>();
  /** per watch: the relative paths seen since the last flush; null = too many to name */
  let pending = new Map<number, Set<string> | null>();
  let raw = 0;
  let flushTimer: ReturnType<typeof setTimeout> | undefined;

  const flush = (): void => {
    flushTimer = undefined;
    const batch: WatchBatch = { type: 'events', raw, watches: [] };
    for (const [id, paths] of pending)
      batch.watches.push({
        id,
        paths: paths ? [...paths] : null,
        folders: watches.get(id)?.watchedFolders ?? 0,
      });
    pending = new Map();
    raw = 0;
    port.postMessage(batch);
  };

  const record = (id: number, rel: string | null): void => {
    if (!watches.has(id)) return; // closed: late events of a removed watch
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
    watches.get(id)?.close();
    watches.delete(id);
    pending.delete(id);
  };

  const failed = (id: number, started: boolean, e: unknown): void => {
    if (!watches.has(id) && started) return; // removed already
    stop(id);
    const failure: WatchFailure = { type: 'error', id, started, message: String((e as Error)?.message ?? e) };
    port.postMessage(failure);
  };

  const report = (id: number, tree: TreeWatch): void => {
    if (watches.get(id) !== tree) return;
    const started: WatchStarted = {
      type: 'watching',
      id,
      partial: tree.partial,
      folders: tree.watchedFolders,
    };
    port.postMessage(started);
  };

  /** the folders every other watch of this worker holds: the bound is on all of them together */
  const othersFolders = (id: number): number => {
    let n = 0;
    for (const [other, tree] of watches) if (other !== id) n += tree.watchedFolders;
    return n;
  };

  port.on('message', (command: WatchCommand) => {
    if (command.type === 'remove') return stop(command.id);
    const { id, root } = command;
    const tree = new TreeWatch(root, {
      onEvent: (rel) => record(id, rel),
      onFailure: (e) => failed(id, true, e),
      onPartial: () => report(id, tree),
      maxFolders: Math.max(1, Math.min(perRoot, MAX_FOLDERS - othersFolders(id))),
    });
    watches.set(id, tree);
    tree.start().then(
      () => report(id, tree),
      (e: unknown) => {
        if (watches.get(id) === tree) failed(id, false, e);
      },
    );
  });
}

// only as the watch worker (a bundle may load this module elsewhere)
const data = workerData as WatchWorkerData | undefined;
if (parentPort && data?.kind === WATCH_WORKER_KIND)
  serve(parentPort, data.maxFoldersPerRoot ?? MAX_FOLDERS_PER_ROOT);
