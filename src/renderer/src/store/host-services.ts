// The host's services the dialogs use (open a path, save text, pick a folder or bundle, probe a
// server, check a destination); failures become notices.

import type { StateCreator } from 'zustand/vanilla';
import { errorNotice } from '../lib/errors';
import type { HostServicesSlice, SluiceState, StoreDeps } from './types';

export function createHostServicesSlice(
  deps: StoreDeps,
): StateCreator<SluiceState, [], [], HostServicesSlice> {
  return (_set, get) => {
    return {
      openPath: async (path) => {
        // A browser page cannot open the file manager: say where the folder is and offer its path.
        if (get().appInfo?.host === 'web') {
          get().openDialog({ type: 'reveal', path, what: 'folder' });
          return;
        }
        try {
          await deps.api.invoke('shell:openPath', path);
        } catch (e) {
          get().notify(errorNotice('Could not open the folder', e));
        }
      },

      exportText: async (suggestedName, text) => {
        if (deps.download && get().appInfo?.host === 'web') {
          deps.download(suggestedName, text);
          get().notify({ tone: 'success', text: 'Downloaded', detail: suggestedName });
          return suggestedName;
        }
        try {
          const saved = await deps.api.invoke('file:writeText', suggestedName, text);
          if (saved) get().notify({ tone: 'success', text: 'Saved', detail: saved });
          return saved;
        } catch (e) {
          get().notify(errorNotice(`Could not save ${suggestedName}`, e));
          return null;
        }
      },

      pickDirectory: async (defaultPath) => {
        try {
          // optional arguments are left out, not sent as undefined (JSON bridges turn that into null)
          return await (defaultPath
            ? deps.api.invoke('dialog:pickDirectory', defaultPath)
            : deps.api.invoke('dialog:pickDirectory'));
        } catch (e) {
          get().notify(errorNotice('The folder picker is not available; type the path instead', e));
          return null;
        }
      },

      pickBundle: async () => {
        // The web host has no native picker: a path field (and the drop zone) instead.
        if (get().appInfo?.host === 'web') {
          get().openDialog({ type: 'open-bundle' });
          return;
        }
        const path = await get().pickBundlePath();
        if (path) await get().openBundle(path);
      },

      pickBundlePath: async () => {
        try {
          return await deps.api.invoke('dialog:pickBundle');
        } catch (e) {
          get().notify(
            errorNotice(
              'The file picker is not available; drop the bundle on the window or type its path',
              e,
            ),
          );
          return null;
        }
      },

      probeServer: (url) => deps.api.invoke('server:probe', url),

      checkDestination: async (path) => {
        try {
          return await deps.api.invoke('dest:check', path);
        } catch {
          return undefined; // not an absolute path yet, or an older host: the job's own check remains
        }
      },
    };
  };
}
