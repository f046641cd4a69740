// The CommonJS start of every Sluice process (built to out/cli/bootstrap.cjs for bin/sluice.cjs and
// to out/main/bootstrap.cjs for the Electron main and the web host, whose main.cjs / web-host.cjs
// call it): sizes libuv's threadpool for the background closer, then imports the real entry, an
// ES module. It must stay CommonJS and import nothing that touches the pool (see
// engine/closer/threadpool.ts for why an ES module entry is too late).

import { DEFAULT_CLOSER_OPTIONS } from '../shared/jobs';
import { enableUserCompileCache } from './compile-cache';
import { closeThreadsFromArgv, sizeThreadpool } from './engine/closer/threadpool';
import { reexecWithMallocTuning } from './malloc-tuning';

/**
 * `sluice ...`: the changegroup commands re-executed under a fixed malloc mmap threshold
 * (malloc-tuning.ts), a pool for the command line's --close-threads (default 48), V8's compile
 * cache for the CLI's modules (a command line starts often and briefly), then the CLI.
 */
export function startCli(
  entryUrl: string,
  argv: readonly string[] = process.argv.slice(2),
): Promise<unknown> {
  reexecWithMallocTuning(argv);
  sizeThreadpool(closeThreadsFromArgv(argv));
  enableUserCompileCache();
  return import(entryUrl);
}

/**
 * The Electron main and the web host: the pool the CLI has by default (48 close threads + the
 * reserve), so an app job closes exactly like `sluice apply`; a job asking for more gets 48 (its
 * done event says so), one asking for fewer is held to its count by the closer (CloserPlan.gated).
 * The compile cache as the CLI has it; the host passes it on to its workers (compile-cache.ts).
 */
export function startApp(entryUrl: string): Promise<unknown> {
  sizeThreadpool(DEFAULT_CLOSER_OPTIONS.closeThreads);
  enableUserCompileCache();
  return import(entryUrl);
}
