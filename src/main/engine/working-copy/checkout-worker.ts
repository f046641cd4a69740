// Worker thread entry of checkout's file writers (file-batch.ts): started before the batch is
// known (write-pool.ts: prestart), it takes its batch from the one message it gets, waits until
// the main thread has made the working directories (set by then unless the pool is used
// differently), writes its share of the batch, and reports once, with its closer's stats and the
// first error. Built as out/cli/checkout-worker.mjs and out/main/checkout-worker.js.
import { parentPort, workerData } from 'node:worker_threads';
import { prepareZstd } from '../codec/zstd';
import {
  CHECKOUT_WORKER_KIND,
  CTL_GO,
  CTL_STOP,
  postError,
  writeShare,
  type CheckoutTask,
  type CheckoutWorkerData,
  type CheckoutWorkerMessage,
} from './file-batch';

async function run(port: NonNullable<typeof parentPort>, task: CheckoutTask): Promise<void> {
  const ctl = task.shared.control;
  while (!Atomics.load(ctl, CTL_GO) && !Atomics.load(ctl, CTL_STOP)) Atomics.wait(ctl, CTL_GO, 0, 100);
  const r = await writeShare(task.batch, task.shared);
  const msg: CheckoutWorkerMessage = { close: r.close, files: r.files };
  if (r.cpuMs !== undefined) msg.cpuMs = r.cpuMs;
  if (r.error) msg.error = postError(r.error);
  port.postMessage(msg);
}

// only as checkout's worker (a bundle may load this module elsewhere)
const data = workerData as CheckoutWorkerData | undefined;
if (parentPort && data?.kind === CHECKOUT_WORKER_KIND) {
  const port = parentPort;
  // its first file would wait for the decoder otherwise; the main thread's GO comes later
  if (data.zstd) void prepareZstd();
  port.once('message', (task: CheckoutTask) => void run(port, task));
}
