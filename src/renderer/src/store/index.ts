// The renderer's one store, made of slices. createSluiceStore() is vanilla zustand (node tests use
// it directly with a fake api and a hand-driven scheduler); connectHost() wires the host's pushes.

import { createStore, type StoreApi } from 'zustand/vanilla';
import { createComparisonsSlice } from './comparisons';
import { createDownloadsSlice } from './downloads';
import { createHistorySlice } from './history';
import { createLibrarySlice } from './library';
import { createSettingsSlice } from './settings';
import { createTransfersSlice } from './transfers';
import { createUiSlice } from './ui';
import { createCredentialsPromptSlice } from './credentials-prompt';
import { createOpeningSlice } from './opening';
import { createHostServicesSlice } from './host-services';
import type { SluiceState, StoreDeps } from './types';

export type SluiceStore = StoreApi<SluiceState>;

export function createSluiceStore(deps: StoreDeps): SluiceStore {
  return createStore<SluiceState>()((...a) => ({
    ...createTransfersSlice(deps)(...a),
    ...createHistorySlice(deps)(...a),
    ...createComparisonsSlice(deps)(...a),
    ...createSettingsSlice(deps)(...a),
    ...createUiSlice(deps)(...a),
    ...createCredentialsPromptSlice(deps)(...a),
    ...createOpeningSlice(deps)(...a),
    ...createHostServicesSlice(deps)(...a),
    ...createLibrarySlice(deps)(...a),
    ...createDownloadsSlice(deps)(...a),
  }));
}

/**
 * Subscribes the store to the host's pushes and loads what the host already knows. Returns the
 * disposer. The stall check runs on its own timer; it calls set() only when a flag changes.
 */
export function connectHost(store: SluiceStore, deps: StoreDeps, stallCheckMs = 1000): () => void {
  const s = store.getState();
  let lostNotice: number | undefined;
  const offs = [
    deps.api.on('host:connection', ({ connected }) => {
      const st = store.getState();
      if (!connected) {
        lostNotice ??= st.notify({
          tone: 'error',
          text: 'Disconnected from the Sluice host',
          detail: 'The host stopped or the connection dropped. Sluice reconnects when the host is back.',
        });
        return;
      }
      if (lostNotice !== undefined) st.dismissNotice(lostNotice);
      lostNotice = undefined;
      // what changed meanwhile: jobs that ended, library rows
      void st.loadJobs().catch(() => undefined);
      void st.loadLibrary();
    }),
    deps.api.on('job:events', ({ jobId, events, log }) => store.getState().ingestEvents(jobId, events, log)),
    deps.api.on('job:state', (summary) => store.getState().ingestJobState(summary)),
    deps.api.on('credentials:request', (req) => store.getState().promptCredentials(req)),
    deps.api.on('bundle:opened', ({ path }) => void store.getState().openBundle(path)),
    deps.api.on('link:opened', (result) => void store.getState().openLink(result)),
    deps.api.on('library:update', (update) => store.getState().ingestLibrary(update)),
    // the web host's notification of a background fetch (Electron shows a system one instead)
    deps.api.on('library:incoming', ({ name, incoming, path }) =>
      store.getState().notify({
        tone: 'info',
        text: `${name}: ${incoming} incoming changeset${incoming === 1 ? '' : 's'}`,
        detail: path,
      }),
    ),
    deps.api.on('app:command', ({ command }) => {
      if (command === 'clone-from-url') store.getState().openDialog({ type: 'clone' });
    }),
  ];
  void s
    .loadAppInfo()
    .catch((e: unknown) =>
      s.notify({ tone: 'error', text: 'Could not reach the Sluice host', detail: String(e) }),
    );
  void s.loadJobs().catch(() => undefined);
  void s.loadLibrary();
  void s.loadPartials();
  const timer = setInterval(() => store.getState().checkStalled(), stallCheckMs);
  return () => {
    clearInterval(timer);
    for (const off of offs) off();
  };
}

export type { SluiceState, StoreDeps } from './types';
