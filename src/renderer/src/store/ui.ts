// UI slice: which screen and dialog, the drop hint, and notices. Credential prompts
// (credentials-prompt.ts), opening a bundle, a link or the sample (opening.ts) and the host's
// services for dialogs (host-services.ts) are slices of their own.

import type { StateCreator } from 'zustand/vanilla';
import type { NavigationSlice, SluiceState, StoreDeps } from './types';

export function createUiSlice(_deps: StoreDeps): StateCreator<SluiceState, [], [], NavigationSlice> {
  return (set, get) => {
    let nextNoticeId = 1;
    return {
      screen: 'transfers',
      dialog: null,
      dropHint: false,
      notices: [],

      setScreen: (screen) => set({ screen }),
      openDialog: (dialog) => set({ dialog }),
      closeDialog: () => set({ dialog: null }),

      setDropHint: (on) => {
        if (get().dropHint !== on) set({ dropHint: on });
      },

      notify: (notice) => {
        const id = nextNoticeId++;
        set({ notices: [...get().notices, { ...notice, id }].slice(-5) });
        return id;
      },

      dismissNotice: (id) => set({ notices: get().notices.filter((n) => n.id !== id) }),
    };
  };
}
