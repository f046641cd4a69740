// History slice: past jobs with their timings. The host persists them (history:list survives a
// restart); the renderer only reads, and re-reads when a job ended since the last load.

import type { StateCreator } from 'zustand/vanilla';
import { errorNotice, toUiError } from '../lib/errors';
import type { HistorySlice, SluiceState, StoreDeps } from './types';

export function createHistorySlice(deps: StoreDeps): StateCreator<SluiceState, [], [], HistorySlice> {
  return (set, get) => {
    let loading: Promise<void> | null = null;
    return {
      history: [],
      historyStatus: 'idle',
      historyStale: true,

      loadHistory: () => {
        if (loading) return loading;
        set({ historyStatus: get().history.length ? 'ready' : 'loading', historyStale: false });
        loading = deps.api
          .invoke('history:list')
          .then((records) => {
            const history = [...records].sort((a, b) => b.endedAt - a.endedAt);
            set({ history, historyStatus: 'ready', historyError: undefined });
          })
          .catch((e: unknown) => set({ historyStatus: 'error', historyError: toUiError(e) }))
          .finally(() => {
            loading = null;
          });
        return loading;
      },

      clearHistory: async () => {
        try {
          await deps.api.invoke('history:clear');
          set({ history: [], historyStatus: 'ready', historyError: undefined });
        } catch (e) {
          get().notify(errorNotice('Could not clear the history', e));
        }
      },
    };
  };
}
