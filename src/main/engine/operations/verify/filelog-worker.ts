// Worker thread entry of verify's filelog scans (filelog-scan.ts). The items (every filelog of the
// store, in the order verify checks them) come in workerData; the worker claims them one at a
// time from a shared counter, as the main thread does once it is done with the changelog and
// manifests (scan-pool.ts), and scans each with synchronous reads (this thread has nothing else to
// do). It stays at most `budget` cost units ahead of what the main thread consumed: a worker that
// is that far ahead sleeps on the counter. Built as out/cli/verify-worker.mjs and
// out/main/verify-worker.js.
import { parentPort, workerData } from 'node:worker_threads';
import { scanFilelog } from './filelog-scan';
import {
  CTL_CLAIMED,
  CTL_CONSUMED,
  CTL_NEXT,
  CTL_STOP,
  SCAN_WORKER_KIND,
  type ScanWorkerData,
  type ScanWorkerMessage,
} from './scan-protocol';

async function run(port: NonNullable<typeof parentPort>, d: ScanWorkerData): Promise<void> {
  const ctl = d.control;
  for (;;) {
    // room ahead of the main thread's consumption
    for (;;) {
      if (Atomics.load(ctl, CTL_STOP)) return;
      const consumed = Atomics.load(ctl, CTL_CONSUMED);
      if (Atomics.load(ctl, CTL_CLAIMED) - consumed <= d.budget) break;
      Atomics.wait(ctl, CTL_CONSUMED, consumed, 200);
    }
    const i = Atomics.add(ctl, CTL_NEXT, 1);
    if (i >= d.items.length) break;
    Atomics.add(ctl, CTL_CLAIMED, d.costs[i]!);
    try {
      const scan = await scanFilelog(d.items[i]!, {
        io: 'sync',
        cacheBytes: d.cacheBytes,
        streamAbove: d.streamAbove,
      });
      const msg: ScanWorkerMessage = { i, scan };
      port.postMessage(msg, scan.index ? [scan.index.entries.buffer as ArrayBuffer] : []);
    } catch (e) {
      port.postMessage({ i, error: e instanceof Error ? e.message : String(e) } satisfies ScanWorkerMessage);
    }
  }
  port.postMessage({ done: true } satisfies ScanWorkerMessage);
}

// only as verify's scan worker (a bundle may load this module elsewhere, e.g. in the engine worker)
const data = workerData as ScanWorkerData | undefined;
if (parentPort && data?.kind === SCAN_WORKER_KIND) void run(parentPort, data);
