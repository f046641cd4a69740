// Settings slice: theme, defaults of the transfer dialogs, stall threshold. Persisted in the
// renderer's localStorage (per host origin), which is enough for preferences.

import type { StateCreator } from 'zustand/vanilla';
import type { SettingsSlice, SluiceState, StoreDeps, ThemeChoice, TransferDefaults } from './types';
import { DEFAULT_CLOSER_OPTIONS } from '../../../shared/jobs';
import { withoutCredentials } from '../../../shared/urls';
import { isAbsolutePath } from '../lib/paths';

export const SETTINGS_KEY = 'sluice.settings.v1';
export const DEFAULT_STALL_SECONDS = 15;

export const DEFAULT_TRANSFER_DEFAULTS: TransferDefaults = {
  stream: 'auto',
  backgroundClose: 'auto',
  // the engine's measured default (enough threads to hide 1 ms closes; see docs/benchmarks.md)
  closeThreads: DEFAULT_CLOSER_OPTIONS.closeThreads,
  verify: false,
};

interface Persisted {
  theme: ThemeChoice;
  defaults: TransferDefaults;
  stallSeconds: number;
  /** the user's clone folder, instead of the host's default */
  cloneDir?: string;
  recentUrls?: string[];
  recentCloneDirs?: string[];
}

export const MAX_RECENT_URLS = 8;
export const MAX_RECENT_DIRS = 5;

const strings = (v: unknown, max: number): string[] | undefined =>
  Array.isArray(v)
    ? v.filter((x): x is string => typeof x === 'string' && x.length < 4096).slice(0, max)
    : undefined;

/** `item` first, without duplicates, at most `max`. */
function mostRecent(list: readonly string[], item: string, max: number): string[] {
  return [item, ...list.filter((x) => x !== item)].slice(0, max);
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
    if (typeof v.cloneDir === 'string' && isAbsolutePath(v.cloneDir)) out.cloneDir = v.cloneDir;
    const urls = strings(v.recentUrls, MAX_RECENT_URLS);
    if (urls) out.recentUrls = urls;
    const dirs = strings(v.recentCloneDirs, MAX_RECENT_DIRS);
    if (dirs) out.recentCloneDirs = dirs;
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
      const { theme, defaults, stallSeconds, cloneDir, recentUrls, recentCloneDirs } = get();
      try {
        deps.storage?.setItem(
          SETTINGS_KEY,
          JSON.stringify({
            theme,
            defaults,
            stallSeconds,
            ...(cloneDir ? { cloneDir } : {}),
            recentUrls,
            recentCloneDirs,
          } satisfies Persisted),
        );
      } catch {
        // storage full or disabled: preferences stay for this session
      }
    };
    return {
      theme: persisted.theme ?? 'system',
      defaults: persisted.defaults ?? DEFAULT_TRANSFER_DEFAULTS,
      stallSeconds: persisted.stallSeconds ?? DEFAULT_STALL_SECONDS,
      ...(persisted.cloneDir ? { cloneDir: persisted.cloneDir } : {}),
      recentUrls: persisted.recentUrls ?? [],
      recentCloneDirs: persisted.recentCloneDirs ?? [],

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
        const info = await deps.api.invoke('app:info');
        // the user's clone folder wins everywhere the host's default would be used
        const cloneDir = get().cloneDir;
        set({
          hostCloneDir: info.defaultCloneDir,
          appInfo: cloneDir ? { ...info, defaultCloneDir: cloneDir } : info,
        });
      },
      setCloneDir: (dir) => {
        const cloneDir = dir && isAbsolutePath(dir.trim()) ? dir.trim() : undefined;
        const { appInfo, hostCloneDir } = get();
        set({
          cloneDir,
          ...(appInfo
            ? {
                appInfo: { ...appInfo, defaultCloneDir: cloneDir ?? hostCloneDir ?? appInfo.defaultCloneDir },
              }
            : {}),
        });
        save();
      },
      loadSavedCredentials: async () => {
        try {
          set({ savedCredentials: await deps.api.invoke('credentials:list') });
        } catch {
          // an older host: the dialog then offers no "Remember"
        }
      },
      forgetCredentials: async (origin) => {
        try {
          await deps.api.invoke('credentials:forget', origin);
        } finally {
          await get().loadSavedCredentials();
        }
      },
      rememberClone: (url, destParent) => {
        set({
          recentUrls: mostRecent(get().recentUrls, withoutCredentials(url), MAX_RECENT_URLS),
          recentCloneDirs: mostRecent(get().recentCloneDirs, destParent, MAX_RECENT_DIRS),
        });
        save();
      },
    };
  };
}
