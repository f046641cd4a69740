// Runs a TypeScript worker entry (workerData.__entry, a file: URL) through tsx. For tests and dev
// scripts only: builds run the bundled out/main/engine-worker.js directly. Node 20 ignores
// `--import tsx` in a worker's execArgv, hence this trampoline.
import { workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
await import(workerData.__entry);
