// Credential prompts the host pushes while a job waits for a user and password, and their answers.

import type { StateCreator } from 'zustand/vanilla';
import { errorNotice } from '../lib/errors';
import type { CredentialsPromptSlice, SluiceState, StoreDeps } from './types';

export function createCredentialsPromptSlice(
  deps: StoreDeps,
): StateCreator<SluiceState, [], [], CredentialsPromptSlice> {
  return (set, get) => {
    return {
      credentials: [],

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
    };
  };
}
