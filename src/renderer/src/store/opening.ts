// The flows that start from outside a form: a checked link, a dropped or opened bundle (inspected,
// then the apply dialog or a refusal), and the sample clone.

import type { StateCreator } from 'zustand/vanilla';
import { errorNotice, toUiError } from '../lib/errors';
import { joinPath, uniquePath } from '../lib/paths';
import { closerFromDefaults } from './requests';
import type { OpeningSlice, SluiceState, StoreDeps } from './types';

export function createOpeningSlice(deps: StoreDeps): StateCreator<SluiceState, [], [], OpeningSlice> {
  return (set, get) => {
    return {
      inspecting: null,

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
    };
  };
}
