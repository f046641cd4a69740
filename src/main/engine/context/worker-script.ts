// Where an engine worker thread's script is (verify's filelog scans, checkout's file writers): next
// to the bundle that runs the caller (out/cli/NAME.mjs, out/main/NAME.js; the caller may sit in a
// chunks/ folder below), or, when the caller runs from its TypeScript source (tests, dev), the
// TypeScript entry run through tsx's worker trampoline.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface WorkerScript {
  script: URL;
  /** tsx trampoline (src/main/host/tsx-worker-bootstrap.mjs): pass `script` as workerData.__entry */
  bootstrap?: URL;
}

/**
 * callerUrl: the caller's import.meta.url; tsEntry: the worker's source relative to the caller;
 * bundleName: its name in the build entries. null when not found (the caller works on its own thread).
 */
export function locateWorkerScript(
  callerUrl: string,
  tsEntry: string,
  bundleName: string,
): WorkerScript | null {
  if (/\.ts$/.test(callerUrl)) {
    return {
      script: new URL(tsEntry, callerUrl),
      bootstrap: new URL('../../host/tsx-worker-bootstrap.mjs', import.meta.url),
    };
  }
  for (const rel of [
    `./${bundleName}.mjs`,
    `../${bundleName}.mjs`,
    `./${bundleName}.js`,
    `../${bundleName}.js`,
  ]) {
    const u = new URL(rel, callerUrl);
    if (u.protocol === 'file:' && existsSync(fileURLToPath(u))) return { script: u };
  }
  return null;
}
