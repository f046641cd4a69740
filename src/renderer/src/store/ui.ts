// UI slice: which screen, which dialog, credential prompts pushed by the host, drop hint, notices,
// and the two flows that start from outside a form (a dropped/opened bundle, the sample clone).

import type { StateCreator } from 'zustand/vanilla';
import { errorNotice, toUiError } from '../lib/errors';
import { joinPath, uniquePath } from '../lib/paths';
import { closerFromDefaults } from './requests';
import type { SluiceState, StoreDeps, UiSlice } from './types';

export function createUiSlice(deps: StoreDeps): StateCreator<SluiceState, [], [], UiSlice> {
  return (set, get) => {
    let nextNoticeId = 1;
    return {
      screen: 'transfers',
      dialog: null,
      credentials: [],
      dropHint: false,
      inspecting: null,
      notices: [],

      setScreen: (screen) => set({ screen }),
      openDialog: (dialog) => set({ dialog }),
      closeDialog: () => set({ dialog: null }),
      setDropHint: (on) => {
        if (get().dropHint !== on) set({ dropHint: on });
      },

      promptCredentials: (prompt) => {
        if (get().credentials.some((c) => c.requestId === prompt.requestId)) return;
        set({ credentials: [...get().credentials, prompt] });
      },
      answerCredentials: async (requestId, answer, remember) => {
        set({ credentials: get().credentials.filter((c) => c.requestId !== requestId) });
        try {
          // optional arguments are left out, not sent as undefined (JSON bridges turn that into null)
          await (answer && remember
            ? deps.api.invoke('credentials:answer', requestId, answer, true)
            : deps.api.invoke('credentials:answer', requestId, answer));
          if (answer && remember) void get().loadSavedCredentials();
        } catch (e) {
          get().notify(errorNotice('Could not pass the credentials to the transfer', e));
        }
      },

      notify: (notice) => {
        const id = nextNoticeId++;
        set({ notices: [...get().notices, { ...notice, id }].slice(-5) });
        return id;
      },
      dismissNotice: (id) => set({ notices: get().notices.filter((n) => n.id !== id) }),

      openLink: async (result) => {
        if (!result.ok) {
          get().notify({ tone: 'error', text: 'A link was not opened', detail: result.reason });
          return;
        }
        const { link } = result;
        if (link.kind === 'apply') return get().openBundle(link.bundlePath);
        // a link comes from a web page: it only fills the form, the user reads it and clicks Clone
        get().openDialog({
          type: 'clone',
          initial: {
            url: link.url,
            ...(link.dest !== undefined && { dest: link.dest }),
            ...(link.rev !== undefined && { update: true, updateRev: link.rev }),
          },
          fromLink: true,
        });
      },

      openBundle: async (path, initial) => {
        set({ inspecting: path, dropHint: false });
        try {
          const info = await deps.api.invoke('bundle:inspect', path);
          if (info.unsupported.length > 0) {
            get().openDialog({
              type: 'refused',
              path,
              info,
              error: {
                code: 'UNSUPPORTED_REQUIREMENTS',
                message: `The bundle needs ${info.unsupported.join(', ')}, which Sluice cannot apply.`,
              },
            });
          } else {
            get().openDialog({ type: 'apply', info, ...(initial ? { initial } : {}) });
          }
        } catch (e) {
          get().openDialog({ type: 'refused', path, error: toUiError(e) });
        } finally {
          if (get().inspecting === path) set({ inspecting: null });
        }
      },

      openDroppedFile: async (file) => {
        set({ inspecting: file.name, dropHint: false });
        let path: string;
        try {
          path = await deps.api.pathForFile(file);
        } catch (e) {
          set({ inspecting: null });
          get().openDialog({ type: 'refused', path: file.name, error: toUiError(e) });
          return;
        }
        await get().openBundle(path);
      },

      cloneSample: async () => {
        try {
          if (!get().appInfo) await get().loadAppInfo();
          const info = get().appInfo!;
          const [sample] = await Promise.all([
            deps.api.invoke('sample:get'),
            get()
              .loadHistory()
              .catch(() => undefined),
          ]);
          const taken = new Set<string>();
          for (const job of Object.values(get().jobs)) if (job.dest) taken.add(job.dest);
          for (const rec of get().history) {
            const r = rec.request;
            if (r.kind === 'clone' || r.kind === 'apply') taken.add(r.dest);
          }
          const dest = uniquePath(joinPath(info.defaultCloneDir, sample.name, info.platform), taken);
          const { defaults } = get();
          await get().startJob(
            {
              kind: 'clone',
              url: sample.url,
              dest,
              stream: defaults.stream,
              closer: closerFromDefaults(defaults),
              verify: defaults.verify,
            },
            `Sample repository (${sample.name})`,
            'sample',
          );
          set({ screen: 'transfers' });
        } catch (e) {
          get().notify(errorNotice('Could not start the sample clone', e));
        }
      },

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
