// Comparisons slice: runs one scenario under several configurations, strictly one job at a time
// (parallel runs would measure each other), and keeps the numbers of each run's done event.

import type { StateCreator } from 'zustand/vanilla';
import { toUiError } from '../lib/errors';
import { APP_STATE_LIMITS, type PersistedComparison } from '../../../shared/app-state';
import { latencyApplierFor, planComparison, resultFromJob, sourceLabel } from './comparison-plan';
import type {
  ComparisonResult,
  ComparisonRun,
  ComparisonsSlice,
  SluiceState,
  StoreDeps,
  TransferJob,
} from './types';

import { mebibytesPerSec } from '../lib/format';
import type { ApplyRequest, BundleRequest, CloneRequest } from '../../../shared/jobs';

/** where an app before the host kept its state saved the comparisons (localStorage), read once to migrate */
export const LEGACY_COMPARISONS_KEY = 'sluice.comparisons.v1';
const KEEP_FINISHED = APP_STATE_LIMITS.comparisons;

/** The comparisons the host kept, runs of an older shape brought up to date. */
export function readComparisons(saved: unknown): ComparisonRun[] {
  try {
    if (!Array.isArray(saved)) return [];
    const runs = saved as ComparisonRun[];
    // runs saved before the unit became MiB/s carry 10^6-byte MB/s: derive MiB/s from their bytes and time
    return runs
      .filter((r) => r && typeof r.id === 'string' && Array.isArray(r.results))
      .map((r) => ({
        ...r,
        results: r.results.map((x) => {
          if (x.mibPerSec !== undefined || x.bytes === undefined || !x.wallMs) return x;
          const { mbPerSec: _old, ...rest } = x as typeof x & { mbPerSec?: number };
          return { ...rest, mibPerSec: mebibytesPerSec(x.bytes, x.wallMs) };
        }),
      }));
  } catch {
    return [];
  }
}

export function createComparisonsSlice(deps: StoreDeps): StateCreator<SluiceState, [], [], ComparisonsSlice> {
  return (set, get) => {
    const cancelled = new Set<string>();
    const current = new Map<string, string>();

    const persist = (): void => {
      const finished = get()
        .comparisons.filter((r) => r.state !== 'running')
        .slice(0, KEEP_FINISHED);
      deps.saved?.save({ comparisons: finished as unknown as PersistedComparison[] });
    };

    const update = (id: string, fn: (run: ComparisonRun) => ComparisonRun): void => {
      set({ comparisons: get().comparisons.map((r) => (r.id === id ? fn(r) : r)) });
    };
    const updateResult = (
      id: string,
      configId: string,
      fn: (r: ComparisonResult) => ComparisonResult,
    ): void => {
      update(id, (run) => ({
        ...run,
        results: run.results.map((r) => (r.configId === configId ? fn(r) : r)),
      }));
    };

    /** The request as sent: tagged with its run (the host records what it made) and the library choice. */
    const asSent = <R extends ApplyRequest | CloneRequest | BundleRequest>(
      run: ComparisonRun,
      request: R,
    ): R =>
      request.kind === 'bundle'
        ? { ...request, comparison: run.id }
        : { ...request, comparison: run.id, library: run.addToLibrary === true };

    const removeFolders = async (id: string): Promise<void> => {
      try {
        await deps.api.invoke('comparison:removeFolders', id);
        update(id, (r) => ({ ...r, foldersRemoved: true }));
      } catch (e) {
        get().notify({ tone: 'error', text: 'The comparison folders were not removed', detail: String(e) });
      }
    };

    const execute = async (id: string): Promise<void> => {
      const run = get().comparisons.find((r) => r.id === id)!;
      // bundles generated for chunk-size variants, shared by every config that applies them
      const prepared = new Map<string, TransferJob>();
      for (const config of run.configs) {
        if (cancelled.has(id)) break;
        try {
          if (config.prepare) {
            let bundleJob = prepared.get(config.prepare.out);
            if (!bundleJob) {
              updateResult(id, config.id, (r) => ({ ...r, state: 'preparing' }));
              const jobId = await get().startJob(
                asSent(run, config.prepare),
                `Comparison: bundle ${config.prepare.chunkSize! / 1024} KiB chunks`,
                'comparison',
              );
              current.set(id, jobId);
              bundleJob = await get().waitForJob(jobId);
              prepared.set(config.prepare.out, bundleJob);
            }
            if (bundleJob.state !== 'done') {
              updateResult(id, config.id, (r) => ({
                ...r,
                state: bundleJob!.state === 'cancelled' ? 'cancelled' : 'failed',
                error: bundleJob!.error ?? { code: 'UNKNOWN', message: 'bundle generation failed' },
              }));
              continue;
            }
          }
          if (cancelled.has(id)) break;
          const jobId = await get().startJob(
            asSent(run, config.request),
            `Comparison: ${config.label}`,
            'comparison',
          );
          current.set(id, jobId);
          updateResult(id, config.id, (r) => ({ ...r, state: 'running', jobId }));
          const job = await get().waitForJob(jobId);
          updateResult(id, config.id, (r) => resultFromJob(r, job));
        } catch (e) {
          updateResult(id, config.id, (r) => ({ ...r, state: 'failed', error: toUiError(e) }));
        }
      }
      current.delete(id);
      const wasCancelled = cancelled.delete(id);
      update(id, (r) => {
        const results = r.results.map((x) =>
          x.state === 'pending' || x.state === 'preparing' || x.state === 'running'
            ? { ...x, state: 'cancelled' as const }
            : x,
        );
        const anyDone = results.some((x) => x.state === 'done');
        return { ...r, results, state: wasCancelled ? 'cancelled' : anyDone ? 'done' : 'failed' };
      });
      if (!run.keepFolders) await removeFolders(id);
      persist();
    };

    return {
      comparisons: readComparisons(deps.saved?.initial.comparisons),

      runComparison: async (source, choices, outDir) => {
        const info = get().appInfo;
        const configs = planComparison(source, choices, outDir, info?.platform, latencyApplierFor(info));
        const createdAt = Date.now();
        const id = `cmp-${createdAt.toString(36)}-${Math.floor(Math.random() * 1e6).toString(36)}`;
        const run: ComparisonRun = {
          id,
          title: sourceLabel(source),
          source,
          createdAt,
          outDir,
          configs,
          results: configs.map((c) => ({ configId: c.id, label: c.label, state: 'pending' })),
          state: 'running',
          addToLibrary: choices.addToLibrary === true,
          keepFolders: choices.keepFolders === true,
        };
        set({ comparisons: [run, ...get().comparisons] });
        void execute(id);
        return id;
      },

      cancelComparison: async (id) => {
        cancelled.add(id);
        const jobId = current.get(id);
        if (jobId) await get().cancelJob(jobId);
      },

      removeComparisonFolders: async () => {
        const { removed } = await deps.api.invoke('comparison:removeFolders');
        set({
          comparisons: get().comparisons.map((r) =>
            r.state === 'running' ? r : { ...r, foldersRemoved: true },
          ),
        });
        persist();
        return removed;
      },

      removeComparison: (id) => {
        const run = get().comparisons.find((r) => r.id === id);
        if (!run || run.state === 'running') return;
        set({ comparisons: get().comparisons.filter((r) => r.id !== id) });
        persist();
      },
    };
  };
}
