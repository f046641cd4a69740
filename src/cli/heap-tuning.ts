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
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Worker } from 'node:worker_threads';

// tuneHeapForMemory({ turbofan: false }) also stops V8 from tiering up to TurboFan where Maglev
// is the tier below it (V8 >= 12: Node >= 22, Electron): verify's CPU goes to SHA-1, zstd and the
// GC, not to hot JS, while TurboFan's compile jobs cost memory on V8's threads (their zones: V8's
// peak malloced 13 -> 10 MB) and ~3 MB more of node's text resident. History corpus, 5 runs
// interleaved, Node 24: peak RSS median 106 -> 98 MB, CPU 4.65 -> 4.15 s. Node 20 has no Maglev:
// without TurboFan its hot JS stays in Sparkplug (RSS -4 MB but CPU +11%), so it keeps TurboFan.
// Of the compiler flags only this one takes effect once V8 runs (--max-opt, --no-concurrent-
// recompilation and --v8-pool-size do only on the command line).

/** Maglev (V8's mid tier) is on by default from V8 12 (Node 22). */
const HAS_MAGLEV = Number.parseInt(process.versions.v8, 10) >= 12;

// optimizeForSize: false keeps V8's default heap growth (update): with --optimize-for-size a
// checkout's old space grew in small steps, each a full compacting GC on the main thread while
// the manifest, its paths and the plan were built (3-5 Mark-Compacts of 9-29 ms each against 1-2
// of ~6 ms without it). Medium corpus, Node 24, two sets of interleaved runs (loaded):
// single-threaded CPU lower in 6 of 7 pairs (medians ~2.05 -> ~1.83 s, 2.97 -> 2.84 s), with the
// writer thread in 5 of 8 (medians 2.55 -> 2.39 s, 3.57 -> 3.33 s), peak RSS +1-2 MB (medians
// 108.5 -> 109.5, 106.5 -> 108). Node 20 (no Maglev, TurboFan kept):
// CPU unchanged, RSS +5 MB (3 pairs): it keeps the flag there.
let heapTuned = false;
export function tuneHeapForMemory(
  opts: { turbofan?: boolean; optimizeForSize?: boolean; collectBuffersEvery?: number } = {},
): void {
  if (opts.collectBuffersEvery !== undefined) collectDeadBuffers(opts.collectBuffersEvery);
  const flags =
    '--semi-space-growth-factor=1' +
    (opts.optimizeForSize === false && HAS_MAGLEV ? '' : ' --optimize-for-size') +
    (opts.turbofan === false && HAS_MAGLEV ? ' --no-turbofan' : '');
  for (const id of JOB_BUILTINS) process.getBuiltinModule(id);
  setFlagsFromString(flags);
  if (heapTuned) return;
  heapTuned = true;
  subscribe('worker_threads', (m) => {
    (m as { worker: Worker }).worker.once('online', () => setFlagsFromString(flags));
  });
}

/**
 * Builtins the engine's jobs load after the flags change, loaded before it: V8 checks its flags'
 * hash before it uses the code cache of Node's builtins, and compiles a builtin loaded later from
 * source. (Worker threads pay this for every builtin: docs/benchmarks/analysis.md, issue 28.)
 */
const JOB_BUILTINS = ['node:zlib', 'node:fs/promises'];

// A changegroup apply (pull, clone --pull) without TurboFan and with the young generation kept at
// its first size: its garbage (decompressed wire pieces, texts, deltas) dies young, and each
// scavenge of a small young generation also frees the ArrayBuffers it kept alive (malloc'd
// outside V8's heap), where a grown one held tens of MB of dead pieces between scavenges. Pull
// clone of the realpast corpus (Node 24, 3 interleaved rounds, loaded): peak RSS 181-190 -> 148
// MB, CPU no higher (4.7-6.0 -> 4.2-4.4 s). --optimize-for-size took 4 MB more off for +10-20% CPU.
// A fixed 2-4 MiB semi-space (only settable on node's command line) halved the scavenges' time
// but not the process's CPU, and cost RSS: see docs/benchmarks/analysis.md.
export const PULL_HEAP = { turbofan: false, optimizeForSize: false, collectBuffersEvery: 16 << 20 } as const;

// collectBuffersEvery: a changegroup apply's dead ArrayBuffers (wire pieces, texts, codec
// output; malloc'd outside V8's heap) that outlived two scavenges wait for a mark-compact, which
// V8 starts when its 11-15 MB old space fills, not when they add up: 20-55 MB of them at a
// realpast pull clone's sampled peaks, varying run to run by ~25 MB. A full GC once the external
// memory has grown by this much since the last one bounds them. 16 MiB: 5 such GCs per realpast
// pull clone (~15 ms), peak RSS 126-138 -> 125-129 MB (3 rounds, loaded); 8 MiB took ~30 of them
// (+0.4 s) for 122-125 MB. Measured in docs/benchmarks/analysis.md.
let collecting = false;
function collectDeadBuffers(growth: number): void {
  if (collecting) return;
  collecting = true;
  // V8's gc extension, exposed once V8 runs: a new context gets the `gc` global
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as unknown;
  if (typeof gc !== 'function') return;
  let base = getHeapStatistics().external_memory;
  const timer = setInterval(() => {
    const external = getHeapStatistics().external_memory;
    if (external < base) base = external;
    else if (external > base + growth) {
      (gc as (o: { type: 'major' }) => void)({ type: 'major' });
      base = getHeapStatistics().external_memory;
    }
  }, COLLECT_CHECK_MS);
  timer.unref();
}
/** How often the external memory is looked at (the apply gives the event loop a turn every 10 ms). */
const COLLECT_CHECK_MS = 20;
