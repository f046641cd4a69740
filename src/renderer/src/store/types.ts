// State shapes of the renderer store. One zustand store made of slices; each slice's state and
// actions are declared here so slices can call each other through get() with full types.

import type { AppInfo, HistoryRecord, SluiceApi } from '../../../shared/ipc';
import type { CloseStats, DoneEvent, JobKind, JobPhase, StreamFormat } from '../../../shared/events';
import type {
  ApplyRequest,
  BundleInfo,
  BundleRequest,
  CloneRequest,
  JobRequest,
  PartialDownloadInfo,
} from '../../../shared/jobs';
import type { UiError } from '../lib/errors';
import type { AppState, ListDensity, ThemeChoice, TransferDefaults } from '../../../shared/app-state';

/** What the store needs from its surroundings; tests pass fakes. */
export interface StoreDeps {
  api: SluiceApi;
  /** requestAnimationFrame in the browser; tests collect the callbacks and run them by hand */
  schedule: (callback: () => void) => void;
  now: () => number;
  /**
   * The browser's download (a web host page): exports go to the user's Downloads, not the host's
   * disk. Absent in node tests; used only when the host says it is the web host.
   */
  download?: (name: string, text: string) => void;
  /** what the host kept of the user's settings and comparisons (state:get), and how to save changes */
  saved?: SavedState;
}

export interface SavedState {
  initial: AppState;
  /** replaces the parts of the host's saved state that `patch` names (state:set) */
  save(patch: AppState): void;
}

// ---------- transfers ----------

/** `interrupted`: running when the app (or its host) last quit, known from the host's history */
export type TransferState = 'queued' | 'running' | 'done' | 'failed' | 'cancelled' | 'interrupted';

/** A lost connection the engine waits out before its next attempt (the last `retry` event). */
export interface RetryWait {
  attempt: number;
  maxAttempts: number;
  /** host clock (the event's time + waitMs): the row counts down to it */
  until: number;
  reason: string;
  /** bytes kept so far, and the total when known */
  bytes: number;
  totalBytes: number | null;
}
export type JobOrigin = 'user' | 'sample' | 'comparison';

export interface TransferJob {
  jobId: string;
  /** the original request, for retry; unknown only for a job seen through events before job:start returned */
  request?: JobRequest;
  label?: string;
  origin: JobOrigin;
  kind: JobKind;
  state: TransferState;
  phase?: JobPhase;
  format?: StreamFormat;
  source: string;
  dest?: string;
  requirements: string[];
  /** host clock (event times), ms since epoch */
  startedAt: number;
  endedAt?: number;
  bytes: number;
  files: number;
  totalBytes: number;
  totalFiles: number;
  bytesPerSec?: number;
  filesPerSec?: number;
  etaMs?: number;
  elapsedMs: number;
  /** [elapsedMs, bytesPerSec], downsampled to at most SAMPLE_CAP points */
  samples: [number, number][];
  /** renderer clock of the last real progress (bytes/files moved, a phase change) */
  lastActivityAt: number;
  stalled: boolean;
  cancelRequested: boolean;
  done?: DoneEvent;
  error?: UiError;
  /** set while the engine waits to retry a lost connection; cleared by the next progress or the end */
  retry?: RetryWait | undefined;
  /** lines in the job's debug log, as the host last said (the lines stay there: fetchLogPage) */
  logLines: number;
  /** lines dropped from the head of that log */
  logDropped: number;
  /** a queued job's place in the host's queue (0 = next to start) */
  queuePosition?: number;
}

export interface TransfersSlice {
  jobs: Record<string, TransferJob>;
  /** newest first */
  jobOrder: string[];
  ingestEvents(
    jobId: string,
    events: import('../../../shared/events').SluiceEvent[],
    log?: { total: number; dropped: number },
  ): void;
  ingestJobState(summary: import('../../../shared/ipc').JobSummary): void;
  /** applies everything queued now (the scheduler normally calls it once per animation frame) */
  flushEvents(): void;
  loadJobs(): Promise<void>;
  startJob(request: JobRequest, label?: string, origin?: JobOrigin): Promise<string>;
  cancelJob(jobId: string): Promise<void>;
  retryJob(jobId: string): Promise<string | null>;
  /** runs a stopped job's request again (the engine continues from its partial download) and drops the old row */
  resumeJob(jobId: string): Promise<string | null>;
  /** starts a verify job for a repository (failures to start become notices) */
  verifyRepository(repo: string): Promise<string | null>;
  /** a stalled job: cancel it, wait until it has cleaned up, then submit its request again */
  restartJob(jobId: string): Promise<string | null>;
  dismissJob(jobId: string): void;
  clearFinished(): void;
  /** flags running jobs without progress for settings.stallSeconds */
  checkStalled(): void;
  /** a page of a job's debug log from the host (job:log) */
  fetchLogPage(
    jobId: string,
    from: number,
    count: number,
    query?: string,
  ): Promise<import('../../../shared/ipc').JobLogPage>;
  /** saves a job's whole debug log; the host writes it (job:exportLog); failures become notices */
  exportJobLog(jobId: string, suggestedName: string, header: string): Promise<string | null>;
  /** resolves when the job reaches done/failed/cancelled */
  waitForJob(jobId: string): Promise<TransferJob>;
}

// ---------- partial downloads ----------

export interface DownloadsSlice {
  /** clone bundle downloads the engine kept for resuming (downloads:list), oldest first */
  partials: PartialDownloadInfo[];
  loadPartials(): Promise<void>;
  /** removes one partial download, or all that no job uses when `key` is absent */
  removePartials(key?: string): Promise<void>;
}

// ---------- history ----------

export interface HistorySlice {
  history: HistoryRecord[];
  historyStatus: 'idle' | 'loading' | 'ready' | 'error';
  historyError?: UiError;
  /** a job ended since the last load */
  historyStale: boolean;
  loadHistory(): Promise<void>;
  clearHistory(): Promise<void>;
}

// ---------- comparisons ----------

export type ComparisonSource =
  { kind: 'bundle'; bundlePath: string } | { kind: 'url'; url: string } | { kind: 'repo'; repo: string };

export type CloserChoice = { background: 'off' } | { background: 'on'; threads: number };

export interface ComparisonChoices {
  closer: CloserChoice[];
  /** bundle2 chunk sizes; only for a repository source (bundles are generated first) */
  chunkSizes: number[];
  /** only for a URL source */
  streams: ('v1' | 'v2')[];
  /** emulated close() latency in µs, only when the host offers it; 0 = none */
  latenciesUs: number[];
  /**
   * simulated slow close() in ms, applied by the engine to each close it makes (any host, any
   * OS); 0 = real closes. E.g. [0, 1]: every configuration without and with a 1 ms close.
   */
  simulateCloseMs?: number[];
  repeat: number;
  /** add the runs' repositories to the library (default: no) */
  addToLibrary?: boolean;
  /** keep what the runs made on disk (default: no, deleted when the comparison ends) */
  keepFolders?: boolean;
}

export interface ComparisonConfig {
  id: string;
  label: string;
  /** the measured job */
  request: ApplyRequest | CloneRequest;
  /** a bundle job that must run first (chunk-size comparisons), shared by configs with the same out */
  prepare?: BundleRequest;
  emulatedLatencyUs?: number;
  /** the engine's simulated close delay of this configuration (ms) */
  simulatedCloseMs?: number;
  run: number;
}

export type ComparisonResultState = 'pending' | 'preparing' | 'running' | 'done' | 'failed' | 'cancelled';

export interface ComparisonResult {
  configId: string;
  label: string;
  state: ComparisonResultState;
  jobId?: string;
  wallMs?: number;
  userCpuMs?: number;
  systemCpuMs?: number;
  bytes?: number;
  files?: number;
  /** MiB/s (the app's unit everywhere) */
  mibPerSec?: number;
  samples?: [number, number][];
  close?: CloseStats;
  peakRssBytes?: number;
  error?: UiError;
  result?: string;
}

export interface ComparisonRun {
  id: string;
  title: string;
  source: ComparisonSource;
  createdAt: number;
  outDir: string;
  configs: ComparisonConfig[];
  results: ComparisonResult[];
  state: 'running' | 'done' | 'cancelled' | 'failed';
  addToLibrary?: boolean;
  keepFolders?: boolean;
  /** what the runs made was deleted (by the run's end, or by the cleanup) */
  foldersRemoved?: boolean;
}

export interface ComparisonsSlice {
  comparisons: ComparisonRun[];
  runComparison(source: ComparisonSource, choices: ComparisonChoices, outDir: string): Promise<string>;
  cancelComparison(id: string): Promise<void>;
  removeComparison(id: string): void;
  /** deletes what every comparison run left on disk (as the host recorded it); the count removed */
  removeComparisonFolders(): Promise<number>;
}

// ---------- library ----------

export type LibrarySort = 'name' | 'changed' | 'pulled' | 'size' | 'added';

export interface LibrarySlice {
  /** by path */
  repos: Record<string, import('../../../shared/library').RepoRow>;
  libraryStatus: 'idle' | 'loading' | 'ready' | 'error';
  /** incoming checks whose "Pull now" the user declined (by job id), kept across screens */
  incomingDismissed: Record<string, true>;
  dismissIncoming(jobId: string): void;
  loadLibrary(): Promise<void>;
  ingestLibrary(update: import('../../../shared/library').LibraryUpdate): void;
  /** "Add existing" and a dropped folder; false when refused (a notice says why) */
  addRepository(path: string): Promise<boolean>;
  removeRepository(path: string): Promise<void>;
  /** to the system trash, after the screen's confirmation */
  trashRepository(path: string): Promise<void>;
  /** deletes the folder for good (hosts without a trash), `typedName` confirming it */
  deleteRepositoryFolder(path: string, typedName: string): Promise<void>;
  openRepositoryFolder(path: string): Promise<void>;
  openRepositoryTerminal(path: string): Promise<void>;
  copyRepositorySource(path: string): Promise<void>;
  /** a folder dropped on the window: added to the library (Electron gives its path; a browser does not) */
  openDroppedFolder(file: File): Promise<void>;
}

// ---------- settings ----------

export type { ListDensity, ThemeChoice, TransferDefaults } from '../../../shared/app-state';

export interface SettingsSlice {
  theme: ThemeChoice;
  defaults: TransferDefaults;
  stallSeconds: number;
  /** one line per row in the Transfers and Repositories lists */
  density: ListDensity;
  setDensity(density: ListDensity): void;
  appInfo?: AppInfo;
  /** the clone folder the user chose in Settings (appInfo.defaultCloneDir then reflects it) */
  cloneDir?: string;
  /** the host's own default clone folder */
  hostCloneDir?: string;
  /** newest first: URLs cloned from, and the folders clones went into */
  recentUrls: string[];
  recentCloneDirs: string[];
  setTheme(theme: ThemeChoice): void;
  /** undefined or '' = back to the host's default */
  setCloneDir(dir: string | undefined): void;
  /** remembered sign-ins (never their passwords) and whether the host can store any */
  savedCredentials?: import('../../../shared/ipc').SavedCredentialList;
  loadSavedCredentials(): Promise<void>;
  forgetCredentials(origin: string): Promise<void>;
  rememberClone(url: string, destParent: string): void;
  /** the URL of a clone started now; its folder once the clone is done (a failed one is not offered again) */
  rememberCloneJob(jobId: string, url: string, destParent: string): Promise<void>;
  setDefaults(patch: Partial<TransferDefaults>): void;
  setStallSeconds(seconds: number): void;
  loadAppInfo(): Promise<void>;
}

// ---------- ui ----------

export type Screen = 'transfers' | 'repositories' | 'comparisons' | 'history';

export type DialogState =
  /** fromLink: filled from a sluice:// link or the web host's /open, which the dialog says */
  | { type: 'clone'; initial?: Partial<CloneRequest>; fromLink?: boolean }
  | { type: 'apply'; info: BundleInfo; initialDest?: string; initial?: Partial<ApplyRequest> }
  | { type: 'refused'; path: string; error: UiError; info?: BundleInfo }
  | { type: 'log'; jobId: string }
  /** a path field where the host has no native file picker (web host) */
  | { type: 'open-bundle' }
  | { type: 'settings' }
  /** where a folder is, when the host cannot open it (web host): the path, a copy button, the cd command */
  | { type: 'reveal'; path: string; what: 'folder' | 'terminal'; command?: string }
  | { type: 'add-repository' };

export interface CredentialsPrompt {
  requestId: string;
  url: string;
  realm: string;
}

export interface Notice {
  id: number;
  tone: 'info' | 'error' | 'success';
  text: string;
  detail?: string;
}

export interface NavigationSlice {
  screen: Screen;
  dialog: DialogState | null;
  dropHint: boolean;
  notices: Notice[];
  setScreen(screen: Screen): void;
  openDialog(dialog: DialogState): void;
  closeDialog(): void;
  setDropHint(on: boolean): void;
  notify(notice: Omit<Notice, 'id'>): number;
  dismissNotice(id: number): void;
}

export interface CredentialsPromptSlice {
  credentials: CredentialsPrompt[];
  promptCredentials(prompt: CredentialsPrompt): void;
  /** remember: the host keeps them for this server (where it can; see savedCredentials) */
  answerCredentials(
    requestId: string,
    answer: { user: string; password: string } | null,
    remember?: boolean,
  ): Promise<void>;
}

export interface OpeningSlice {
  /** path of the bundle being inspected (drop or bundle:opened) */
  inspecting: string | null;
  /** a checked link (link:opened): the pre-filled clone or apply dialog, or a notice saying why not */
  openLink(result: import('../../../shared/ipc').DeepLinkResult): Promise<void>;
  /** inspect a bundle file and open the apply dialog, or refuse it with a message */
  /** `initial`: what the user typed for a failed apply of this bundle ("Edit & retry" keeps it) */
  openBundle(path: string, initial?: Partial<ApplyRequest>): Promise<void>;
  /** a File dropped on the window: its path through the host (pathForFile), then openBundle */
  openDroppedFile(file: File): Promise<void>;
  cloneSample(): Promise<void>;
}

export interface HostServicesSlice {
  /** host services the dialogs use; failures become notices */
  openPath(path: string): Promise<void>;
  exportText(suggestedName: string, text: string): Promise<string | null>;
  pickDirectory(defaultPath?: string): Promise<string | null>;
  pickBundle(): Promise<void>;
  /** the picker alone, for forms that only need a path */
  pickBundlePath(): Promise<string | null>;
  probeServer(url: string): Promise<import('../../../shared/jobs').ServerInfo>;
  /** the host's destination check for the dialogs; undefined when the host could not answer */
  checkDestination(path: string): Promise<import('../../../shared/library').DestinationCheck | undefined>;
}

export type UiSlice = NavigationSlice & CredentialsPromptSlice & OpeningSlice & HostServicesSlice;

export type SluiceState = TransfersSlice &
  HistorySlice &
  ComparisonsSlice &
  SettingsSlice &
  UiSlice &
  LibrarySlice &
  DownloadsSlice;
