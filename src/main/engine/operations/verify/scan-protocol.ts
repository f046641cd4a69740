// Messages and shared control words between verify's ScanPool (scan-pool.ts, main thread) and
// its filelog workers (filelog-worker.ts).
import type { FilelogScan, FilelogScanRequest } from './filelog-scan';

export const SCAN_WORKER_KIND = 'sluice-verify-scan';

export interface ScanWorkerData {
  kind: typeof SCAN_WORKER_KIND;
  items: FilelogScanRequest[];
  /** per item, in budget units (KiB of NAME.i) */
  costs: Int32Array;
  /** Int32Array over a SharedArrayBuffer, indexed by CTL_* */
  control: Int32Array;
  budget: number;
  cacheBytes?: number;
  streamAbove?: number;
}

/** next item to claim */
export const CTL_NEXT = 0;
/** cost of the items workers claimed */
export const CTL_CLAIMED = 1;
/** cost of those the main thread consumed (or dropped) */
export const CTL_CONSUMED = 2;
/** set to 1 to stop the workers */
export const CTL_STOP = 3;
export const CTL_SIZE = 4;

export type ScanWorkerMessage =
  { i: number; scan: FilelogScan } | { i: number; error: string } | { done: true };
