// What a user sets or makes in the app (preferences, recent clones, comparison results), kept by
// the host in one file of its data folder (`state.json`), so Electron and the web host remember it
// across restarts (a browser's storage is tied to the web host's random port).

import type { BackgroundCloseMode, StreamVersionChoice } from './jobs';

export type ThemeChoice = 'system' | 'light' | 'dark';
/** the Transfers and Repositories lists: rows with their details, or one line each */
export type ListDensity = 'comfortable' | 'compact';

export interface TransferDefaults {
  stream: StreamVersionChoice;
  backgroundClose: BackgroundCloseMode;
  closeThreads: number;
  verify: boolean;
}

export interface PersistedSettings {
  theme: ThemeChoice;
  defaults: TransferDefaults;
  stallSeconds: number;
  density: ListDensity;
  /** the user's clone folder, instead of the host's default */
  cloneDir?: string;
  recentUrls: string[];
  recentCloneDirs: string[];
}

/**
 * A finished comparison run as the renderer keeps it (its configurations, requests and measured
 * numbers); the host checks its bounds, the renderer its fields when it reads them back.
 */
export type PersistedComparison = { id: string } & Record<string, unknown>;

export interface AppState {
  settings?: PersistedSettings;
  comparisons?: PersistedComparison[];
}

export const APP_STATE_LIMITS = {
  recentUrls: 8,
  recentCloneDirs: 5,
  comparisons: 12,
  /** the whole file, as JSON: comparisons are the bulk (12 runs of a few KiB each) */
  stateBytes: 4 * 1024 * 1024,
} as const;
