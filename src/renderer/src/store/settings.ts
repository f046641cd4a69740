// Settings slice: theme, defaults of the transfer dialogs, stall threshold. Persisted in the
// renderer's localStorage (per host origin), which is enough for preferences.

import type { StateCreator } from 'zustand/vanilla';
import type { SettingsSlice, SluiceState, StoreDeps, ThemeChoice, TransferDefaults } from './types';
import { DEFAULT_CLOSER_OPTIONS } from '../../../shared/jobs';

export const SETTINGS_KEY = 'sluice.settings.v1';
export const DEFAULT_STALL_SECONDS = 15;

export const DEFAULT_TRANSFER_DEFAULTS: TransferDefaults = {
  stream: 'auto',
  backgroundClose: 'auto',
  // the engine's measured default (enough threads to hide 1 ms closes; see the README bench)
  closeThreads: DEFAULT_CLOSER_OPTIONS.closeThreads,
  verify: false,
};

interface Persisted {
  theme: ThemeChoice;
  defaults: TransferDefaults;
  stallSeconds: number;
}

function readPersisted(storage: StoreDeps['storage']): Partial<Persisted> {
  try {
    const raw = storage?.getItem(SETTINGS_KEY);
    if (!raw) return {};
    const v = JSON.parse(raw) as Partial<Persisted>;
    const out: Partial<Persisted> = {};
    if (v.theme === 'system' || v.theme === 'light' || v.theme === 'dark') out.theme = v.theme;
    if (typeof v.stallSeconds === 'number' && v.stallSeconds >= 3 && v.stallSeconds <= 600)
      out.stallSeconds = v.stallSeconds;
    if (v.defaults && typeof v.defaults === 'object')
      out.defaults = { ...DEFAULT_TRANSFER_DEFAULTS, ...sanitizeDefaults(v.defaults) };
    return out;
  } catch {
    return {};
  }
}

function sanitizeDefaults(d: Partial<TransferDefaults>): Partial<TransferDefaults> {
  const out: Partial<TransferDefaults> = {};
  if (d.stream === 'auto' || d.stream === 'v1' || d.stream === 'v2') out.stream = d.stream;
  if (d.backgroundClose === 'auto' || d.backgroundClose === 'on' || d.backgroundClose === 'off')
    out.backgroundClose = d.backgroundClose;
  if (typeof d.closeThreads === 'number' && d.closeThreads >= 1 && d.closeThreads <= 64)
    out.closeThreads = Math.round(d.closeThreads);
  if (typeof d.verify === 'boolean') out.verify = d.verify;
  return out;
}

export function createSettingsSlice(deps: StoreDeps): StateCreator<SluiceState, [], [], SettingsSlice> {
  return (set, get) => {
    const persisted = readPersisted(deps.storage);
    const save = (): void => {
      const { theme, defaults, stallSeconds } = get();
      try {
        deps.storage?.setItem(
          SETTINGS_KEY,
          JSON.stringify({ theme, defaults, stallSeconds } satisfies Persisted),
        );
      } catch {
        // storage full or disabled: preferences stay for this session
      }
    };
    return {
      theme: persisted.theme ?? 'system',
      defaults: persisted.defaults ?? DEFAULT_TRANSFER_DEFAULTS,
      stallSeconds: persisted.stallSeconds ?? DEFAULT_STALL_SECONDS,

      setTheme: (theme) => {
        set({ theme });
        save();
      },
      setDefaults: (patch) => {
        set({ defaults: { ...get().defaults, ...sanitizeDefaults(patch) } });
        save();
      },
      setStallSeconds: (seconds) => {
        set({ stallSeconds: Math.max(3, Math.min(600, Math.round(seconds))) });
        save();
      },
      loadAppInfo: async () => {
        const appInfo = await deps.api.invoke('app:info');
        set({ appInfo });
      },
    };
  };
}
