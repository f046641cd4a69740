// The user's settings and comparisons as the host keeps them (state:get / state:set), loaded once
// before the store is made. An app from before the host kept them left them in localStorage: read
// once from there when the host has none, and saved to the host with the next change.

import type { SluiceApi } from '../../../shared/ipc';
import type { AppState } from '../../../shared/app-state';
import { LEGACY_COMPARISONS_KEY } from './comparisons';
import { LEGACY_SETTINGS_KEY } from './settings';
import type { SavedState } from './types';

export async function loadSavedState(
  api: SluiceApi,
  legacy?: Pick<Storage, 'getItem'>,
  warn: (message: string) => void = console.warn,
): Promise<SavedState> {
  let initial: AppState = {};
  try {
    initial = await api.invoke('state:get');
  } catch (e) {
    warn(`saved settings unavailable: ${(e as Error).message}`);
  }
  initial = {
    ...initial,
    ...(!initial.settings && legacyItem(legacy, LEGACY_SETTINGS_KEY, 'settings')),
    ...(!initial.comparisons && legacyItem(legacy, LEGACY_COMPARISONS_KEY, 'comparisons')),
  };
  return {
    initial,
    save: (patch) => {
      api
        .invoke('state:set', patch)
        .catch((e: unknown) => warn(`settings not saved: ${(e as Error).message}`));
    },
  };
}

function legacyItem(
  storage: Pick<Storage, 'getItem'> | undefined,
  key: string,
  field: keyof AppState,
): AppState {
  try {
    const raw = storage?.getItem(key);
    return raw ? { [field]: JSON.parse(raw) as unknown } : {};
  } catch {
    return {};
  }
}
