// Turns "compare these settings" into the sequence of jobs to run, and their results into JSON/CSV.
// One scenario, parametrized (as hg's own tests do with #testcases): every chosen closer setting is
// crossed with the chosen chunk sizes / stream versions / emulated latencies, each repeated N times.

import type { ApplyRequest, BundleRequest, CloneRequest, CloserOptions } from '../../../shared/jobs';
import { baseName, joinPath } from '../lib/paths';
import type { AppInfo } from '../../../shared/ipc';
import { mebibytesPerSec } from '../lib/format';
import type {
  CloserChoice,
  ComparisonChoices,
  ComparisonConfig,
  ComparisonResult,
  ComparisonRun,
  ComparisonSource,
  TransferJob,
} from './types';

export const CLOSER_THREAD_CHOICES = [1, 2, 4, 16, 48] as const;
export const CHUNK_SIZE_CHOICES = [4096, 32768] as const;

export function closerLabel(c: CloserChoice): string {
  return c.background === 'off'
    ? 'closer off'
    : `closer on, ${c.threads} thread${c.threads === 1 ? '' : 's'}`;
}

export function closerOptions(c: CloserChoice): Partial<CloserOptions> {
  // minFileCount 1: hg only closes in the background from worker.backgroundcloseminfilecount (2048)
  // files on; a comparison of "on" must really use the closer, whatever the repository size.
  return c.background === 'off'
    ? { backgroundClose: 'off' }
    : { backgroundClose: 'on', closeThreads: c.threads, minFileCount: 1 };
}

export function chunkLabel(size: number): string {
  return `${size / 1024} KiB chunks`;
}

export function latencyLabel(us: number): string {
  return us === 0
    ? 'no emulated latency'
    : `emulated close latency ${us >= 1000 ? `${us / 1000} ms` : `${us} µs`}`;
}

/** How a configuration's closes are slowed by the engine (CloserOptions.simulateCloseMs). */
export function simulatedCloseLabel(ms: number): string {
  return ms === 0 ? 'real close()' : `simulated slow close() ${ms} ms`;
}

function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

/** Adds the emulated latency to a request in the way the host offers it (see latencyApplierFor). */
export type LatencyApplier = (
  request: ApplyRequest | CloneRequest,
  latencyUs: number,
) => ApplyRequest | CloneRequest;

/**
 * Emulated close latency, when the host offers it (AppInfo.emulatedCloseLatency): the host process
 * runs with slowclose.so (shared/bench) preloaded, which delays close() of files under `prefix` by
 * `closeUs`. A configuration "with latency" therefore writes its destination under that prefix.
 */
export type EmulatedCloseLatency = NonNullable<AppInfo['emulatedCloseLatency']>;

export function emulatedLatencyOf(info: AppInfo | undefined): EmulatedCloseLatency | undefined {
  const offer = info?.emulatedCloseLatency;
  return offer && typeof offer.prefix === 'string' && offer.prefix !== '' && offer.closeUs > 0
    ? offer
    : undefined;
}

export function latencyApplierFor(info: AppInfo | undefined): LatencyApplier | undefined {
  const offer = emulatedLatencyOf(info);
  if (!offer) return undefined;
  return (request, latencyUs) =>
    latencyUs > 0
      ? {
          ...request,
          dest: joinPath(
            offer.prefix,
            `sluice-${Date.now().toString(36)}-${baseName(request.dest)}`,
            info?.platform,
          ),
        }
      : request;
}

export function planComparison(
  source: ComparisonSource,
  choices: ComparisonChoices,
  outDir: string,
  platform?: string,
  applyLatency?: LatencyApplier,
): ComparisonConfig[] {
  const closers = choices.closer.length ? choices.closer : [{ background: 'off' } as CloserChoice];
  const latencies: (number | undefined)[] =
    applyLatency && choices.latenciesUs.length ? choices.latenciesUs : [undefined];
  const simulations: (number | undefined)[] = choices.simulateCloseMs?.length
    ? choices.simulateCloseMs
    : [undefined];
  type Variant = {
    label: string | null;
    build: (dest: string, closer: Partial<CloserOptions>) => ApplyRequest | CloneRequest;
    prepare?: BundleRequest;
  };
  let variants: Variant[];
  switch (source.kind) {
    case 'bundle':
      variants = [
        {
          label: null,
          build: (dest, closer) => ({
            kind: 'apply',
            bundlePath: source.bundlePath,
            dest,
            closer,
            verify: false,
          }),
        },
      ];
      break;
    case 'url': {
      const streams = choices.streams.length ? choices.streams : (['v2'] as const);
      variants = streams.map((stream) => ({
        label: `stream ${stream}`,
        build: (dest, closer) => ({
          kind: 'clone',
          url: source.url,
          dest,
          stream,
          closer,
          verify: false,
          cloneBundles: false,
        }),
      }));
      break;
    }
    case 'repo': {
      const sizes = choices.chunkSizes.length ? choices.chunkSizes : [32768];
      variants = sizes.map((chunkSize) => {
        const out = joinPath(outDir, `stream-v2-${chunkSize / 1024}k.hg`, platform);
        return {
          label: chunkLabel(chunkSize),
          prepare: { kind: 'bundle', repo: source.repo, out, type: 'v2', compression: 'none', chunkSize },
          build: (dest, closer) => ({ kind: 'apply', bundlePath: out, dest, closer, verify: false }),
        };
      });
      break;
    }
  }
  const repeat = Math.max(1, Math.min(10, Math.round(choices.repeat)));
  const configs: ComparisonConfig[] = [];
  let n = 0;
  // with a simulated slow close, its runs come first and on/off sit side by side under it
  for (const simulated of [...simulations].sort((a, b) => (b ?? 0) - (a ?? 0))) {
    for (const latency of latencies) {
      for (const variant of variants) {
        for (const closer of closers) {
          for (let run = 1; run <= repeat; run++) {
            n++;
            const parts = [
              variant.label,
              closerLabel(closer),
              latency !== undefined ? latencyLabel(latency) : null,
              simulated !== undefined ? simulatedCloseLabel(simulated) : null,
            ].filter(Boolean) as string[];
            const label = parts.join(' · ') + (repeat > 1 ? ` #${run}` : '');
            const dest = joinPath(outDir, `${String(n).padStart(2, '0')}-${slug(label)}`, platform);
            const options = closerOptions(closer);
            let request = variant.build(
              dest,
              simulated ? { ...options, simulateCloseMs: simulated } : options,
            );
            if (latency !== undefined && applyLatency) request = applyLatency(request, latency);
            configs.push({
              id: `c${n}`,
              label,
              request,
              run,
              ...(variant.prepare ? { prepare: variant.prepare } : {}),
              ...(latency !== undefined ? { emulatedLatencyUs: latency } : {}),
              ...(simulated !== undefined ? { simulatedCloseMs: simulated } : {}),
            });
          }
        }
      }
    }
  }
  return configs;
}

/** Reads the measured numbers of a finished job (its done event). */
export function resultFromJob(base: ComparisonResult, job: TransferJob): ComparisonResult {
  if (job.state !== 'done' || !job.done) {
    return {
      ...base,
      jobId: job.jobId,
      state: job.state === 'cancelled' ? 'cancelled' : 'failed',
      error: job.error,
    };
  }
  const d = job.done;
  return {
    ...base,
    jobId: job.jobId,
    state: 'done',
    wallMs: d.wallMs,
    userCpuMs: d.userCpuMs,
    systemCpuMs: d.systemCpuMs,
    bytes: d.bytes,
    files: d.files,
    mibPerSec: mebibytesPerSec(d.bytes, d.wallMs),
    samples: job.samples,
    ...(d.close ? { close: d.close } : {}),
    ...(d.peakRssBytes !== undefined ? { peakRssBytes: d.peakRssBytes } : {}),
    ...(d.result !== undefined ? { result: d.result } : {}),
  };
}

export function sourcePath(source: ComparisonSource): string {
  return source.kind === 'bundle' ? source.bundlePath : source.kind === 'url' ? source.url : source.repo;
}

export function sourceLabel(source: ComparisonSource): string {
  switch (source.kind) {
    case 'bundle':
      return `Apply ${baseName(source.bundlePath)}`;
    case 'url':
      return `Clone ${source.url}`;
    case 'repo':
      return `Bundle + apply ${baseName(source.repo)}`;
  }
}

export function comparisonToJson(run: ComparisonRun): string {
  return JSON.stringify(
    {
      title: run.title,
      source: run.source,
      createdAt: new Date(run.createdAt).toISOString(),
      outDir: run.outDir,
      state: run.state,
      results: run.results.map((r) => {
        const config = run.configs.find((c) => c.id === r.configId);
        return { ...r, request: config?.request, prepare: config?.prepare };
      }),
    },
    null,
    2,
  );
}

const CSV_COLUMNS = [
  'label',
  'state',
  'wall_ms',
  'user_cpu_ms',
  'system_cpu_ms',
  'bytes',
  'files',
  'mib_per_s',
  'background_close',
  'close_threads',
  'writer_wait_ms',
  'peak_rss_bytes',
  'error',
] as const;

function csvCell(v: unknown): string {
  if (v === undefined || v === null) return '';
  const s = typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toFixed(3)) : String(v);
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function comparisonToCsv(run: ComparisonRun): string {
  const rows = run.results.map((r) =>
    [
      r.label,
      r.state,
      r.wallMs,
      r.userCpuMs,
      r.systemCpuMs,
      r.bytes,
      r.files,
      r.mibPerSec,
      r.close ? String(r.close.background) : undefined,
      r.close?.threads,
      r.close?.writerWaitMs,
      r.peakRssBytes,
      r.error ? `${r.error.code}: ${r.error.message}` : undefined,
    ]
      .map(csvCell)
      .join(','),
  );
  return [CSV_COLUMNS.join(','), ...rows].join('\n') + '\n';
}
