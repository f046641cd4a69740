// Settings slice: theme, defaults of the transfer dialogs, stall threshold, list density, recent
// clones. Saved by the host (state:set into its data folder), so a restart keeps them.

import type { StateCreator } from 'zustand/vanilla';
import type { SettingsSlice, SluiceState, StoreDeps, TransferDefaults } from './types';
import { APP_STATE_LIMITS, type PersistedSettings } from '../../../shared/app-state';
import { DEFAULT_CLOSER_OPTIONS } from '../../../shared/jobs';
import { withoutCredentials } from '../../../shared/urls';
import { isAbsolutePath } from '../lib/paths';

/** where an app before the host kept its state saved the settings (localStorage), read once to migrate */
export const LEGACY_SETTINGS_KEY = 'sluice.settings.v1';
export const DEFAULT_STALL_SECONDS = 15;

export const DEFAULT_TRANSFER_DEFAULTS: TransferDefaults = {
  stream: 'auto',
  backgroundClose: 'auto',
  // the engine's measured default (enough threads to hide 1 ms closes; see docs/benchmarks.md)
  closeThreads: DEFAULT_CLOSER_OPTIONS.closeThreads,
  verify: false,
};

export const MAX_RECENT_URLS = APP_STATE_LIMITS.recentUrls;
export const MAX_RECENT_DIRS = APP_STATE_LIMITS.recentCloneDirs;

const strings = (v: unknown, max: number): string[] | undefined =>
  Array.isArray(v)
    ? v.filter((x): x is string => typeof x === 'string' && x.length < 4096).slice(0, max)
    : undefined;

/** `item` first, without duplicates, at most `max`. */
function mostRecent(list: readonly string[], item: string, max: number): string[] {
  return [item, ...list.filter((x) => x !== item)].slice(0, max);
}

/** The settings the host kept (or an older app's localStorage left), field by field. */
export function readSettings(v: unknown): Partial<PersistedSettings> {
  if (!v || typeof v !== 'object') return {};
  const p = v as Partial<PersistedSettings>;
  const out: Partial<PersistedSettings> = {};
  if (p.theme === 'system' || p.theme === 'light' || p.theme === 'dark') out.theme = p.theme;
  if (typeof p.stallSeconds === 'number' && p.stallSeconds >= 3 && p.stallSeconds <= 600)
    out.stallSeconds = Math.round(p.stallSeconds);
  if (p.density === 'comfortable' || p.density === 'compact') out.density = p.density;
  if (p.defaults && typeof p.defaults === 'object')
    out.defaults = { ...DEFAULT_TRANSFER_DEFAULTS, ...sanitizeDefaults(p.defaults) };
  if (typeof p.cloneDir === 'string' && isAbsolutePath(p.cloneDir)) out.cloneDir = p.cloneDir;
  const urls = strings(p.recentUrls, MAX_RECENT_URLS);
  if (urls) out.recentUrls = urls;
  const dirs = strings(p.recentCloneDirs, MAX_RECENT_DIRS)?.filter(isAbsolutePath);
  if (dirs) out.recentCloneDirs = dirs;
  return out;
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
    const persisted = readSettings(deps.saved?.initial.settings);
    const save = (): void => {
      const { theme, defaults, stallSeconds, density, cloneDir, recentUrls, recentCloneDirs } = get();
      const settings: PersistedSettings = {
        theme,
        defaults,
        stallSeconds,
        density,
        ...(cloneDir ? { cloneDir } : {}),
        recentUrls,
        recentCloneDirs,
      };
      deps.saved?.save({ settings });
    };
    return {
      theme: persisted.theme ?? 'system',
      defaults: persisted.defaults ?? DEFAULT_TRANSFER_DEFAULTS,
      stallSeconds: persisted.stallSeconds ?? DEFAULT_STALL_SECONDS,
      density: persisted.density ?? 'comfortable',
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
      setDensity: (density) => {
        set({ density });
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
      rememberCloneJob: async (jobId, url, destParent) => {
        set({ recentUrls: mostRecent(get().recentUrls, withoutCredentials(url), MAX_RECENT_URLS) });
        save();
        // a folder joins the recent ones only once a clone into it worked
        const job = await get().waitForJob(jobId);
        if (job.state !== 'done') return;
        set({ recentCloneDirs: mostRecent(get().recentCloneDirs, destParent, MAX_RECENT_DIRS) });
        save();
      },
    };
  };
}
