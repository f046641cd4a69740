// Where the engine worker's TypeScript source and its tsx trampoline are, for tests and scripts
// that run the host from source. Never imported by the bundled entry points (they run
// out/main/engine-worker.js).

import type { EngineWorkerOptions } from './engine-worker-host';

export const SOURCE_WORKER: EngineWorkerOptions = {
  script: new URL('./engine-worker.ts', import.meta.url),
  bootstrap: new URL('./tsx-worker-bootstrap.mjs', import.meta.url),
};
