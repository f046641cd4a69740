// V8 tuned for memory in a CLI process that runs one engine job (verify, update: nothing else runs
// there). Their garbage is short-lived (decoded chunks, texts, manifest lines): the young
// generation growing to its 16 MiB (Node 20) or 64 MiB (Node 24) semi-spaces only costs memory,
// so later growth keeps the initial 1 MiB (verify, history corpus: peak RSS 182 -> 137 MB, same
// CPU time). Node 20's V8 puts that factor back to 2 whenever an isolate starts (the main thread's
// new space reached 32 MiB once verify's worker thread was up), so it is set again as each worker
// comes online. --optimize-for-size (smaller heap growth steps, more eager memory reduction) took
// the same run from ~140 to ~118 MB (Node 20) and from ~145 to ~132 MB (Node 24) without a
// measurable CPU cost.
import { subscribe } from 'node:diagnostics_channel';
import { setFlagsFromString } from 'node:v8';
import type { Worker } from 'node:worker_threads';

let heapTuned = false;
export function tuneHeapForMemory(): void {
  const flags = '--semi-space-growth-factor=1 --optimize-for-size';
  setFlagsFromString(flags);
  if (heapTuned) return;
  heapTuned = true;
  subscribe('worker_threads', (m) => {
    (m as { worker: Worker }).worker.once('online', () => setFlagsFromString(flags));
  });
}
