// Renderer entry: one store, wired to the host's window.sluice (Electron preload or the web host's
// WebSocket bridge), rendered into #root.

import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App';
import { hasSluiceApi, sluiceApi } from './api';
import { loadSavedState } from './store/saved-state';
import { connectHost, createSluiceStore, type StoreDeps } from './store';
import { StoreProvider } from './store/react';
import { shouldPromptBeforeUnload } from './store/transfers';
import './styles/app.css';

const root = createRoot(document.getElementById('root')!);

if (!hasSluiceApi()) {
  root.render(
    <div className="fatal" role="alert">
      <h1>Sluice cannot reach its host</h1>
      <p>
        This page is the Sluice user interface; open it through the Sluice app (npm start), which provides the
        connection to the engine.
      </p>
    </div>,
  );
} else {
  void start();
}

async function start(): Promise<void> {
  let legacyStorage: Storage | undefined;
  try {
    legacyStorage = window.localStorage;
  } catch {
    legacyStorage = undefined;
  }
  const api = sluiceApi();
  const deps: StoreDeps = {
    api,
    // One store update per animation frame; the timeout keeps events flowing while the window is
    // hidden (no frames then), e.g. a comparison running behind a minimized window.
    schedule: (cb) => {
      let ran = false;
      const run = () => {
        if (ran) return;
        ran = true;
        cb();
      };
      requestAnimationFrame(run);
      setTimeout(run, 250);
    },
    now: () => performance.now(),
    saved: await loadSavedState(api, legacyStorage),
    download: browserDownload,
  };
  const store = createSluiceStore(deps);
  connectHost(store, deps);
  window.addEventListener('beforeunload', (event) => {
    if (!shouldPromptBeforeUnload(store.getState())) return;
    event.preventDefault();
    // older Chromium shows the prompt only when returnValue is set
    event.returnValue = '';
  });
  root.render(
    <StrictMode>
      <StoreProvider store={store}>
        <App />
      </StoreProvider>
    </StrictMode>,
  );
}

/** A download through the browser of text made here (an export in a web host page). */
function browserDownload(name: string, text: string): void {
  const href = URL.createObjectURL(new Blob([text], { type: 'text/plain' }));
  const a = document.createElement('a');
  a.href = href;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(href), 60_000);
}
