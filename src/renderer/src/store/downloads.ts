// Partial downloads slice: the clone bundle downloads the engine kept so a clone can resume
// (downloads:list). Settings lists and removes them; the Transfers list offers Resume on a failed,
// cancelled or interrupted clone whose destination has one.

import type { StateCreator } from 'zustand/vanilla';
import type { PartialDownloadInfo } from '../../../shared/jobs';
import { errorNotice } from '../lib/errors';
import type { DownloadsSlice, SluiceState, StoreDeps, TransferJob } from './types';

export function createDownloadsSlice(deps: StoreDeps): StateCreator<SluiceState, [], [], DownloadsSlice> {
  return (set, get) => ({
    partials: [],

    loadPartials: async () => {
      try {
        set({ partials: await deps.api.invoke('downloads:list') });
      } catch (e) {
        get().notify(errorNotice('Could not list the partial downloads', e));
      }
    },

    removePartials: async (key) => {
      try {
        const { removed } = await (key !== undefined
          ? deps.api.invoke('downloads:remove', key)
          : deps.api.invoke('downloads:remove'));
        if (key !== undefined && removed === 0)
          get().notify({
            tone: 'info',
            text: 'That download is in use',
            detail: 'A running clone holds it.',
          });
      } catch (e) {
        get().notify(errorNotice('Could not remove the partial download', e));
      }
      await get().loadPartials();
    },
  });
}

/** The partial download a clone job left at its destination, if the engine kept one. */
export function partialOf(
  job: Pick<TransferJob, 'request' | 'dest'>,
  partials: readonly PartialDownloadInfo[],
): PartialDownloadInfo | undefined {
  if (job.request?.kind !== 'clone') return undefined;
  const dests = new Set([job.request.dest, job.dest].filter((d): d is string => d !== undefined));
  return partials.find((p) => dests.has(p.dest));
}

/**
 * Resume is offered on a job the app quit under (its request runs again), and on a clone that
 * failed or was cancelled whose partial download is still there: running its request again
 * continues from the kept bytes.
 */
export function canResume(
  job: Pick<TransferJob, 'request' | 'dest' | 'state'>,
  partials: readonly PartialDownloadInfo[],
): boolean {
  if (job.state === 'interrupted') return job.request !== undefined;
  if (job.state !== 'failed' && job.state !== 'cancelled') return false;
  return partialOf(job, partials) !== undefined;
}
