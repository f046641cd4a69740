// The one definition of the IPC contract between the renderer and the engine host (Electron main
// via preload, or the web host via its WebSocket bridge). Main, preload, web host and renderer all
// derive their signatures from these maps, so a renamed or mistyped channel fails to compile.

import type { AppState } from './app-state';
import type { SluiceEvent } from './events';
import type { BundleInfo, JobRequest, PartialDownloadInfo, ServerInfo } from './jobs';
import type {
  DestinationCheck,
  FetchInterval,
  IncomingNotice,
  LibrarySettings,
  LibraryUpdate,
  RepoRow,
} from './library';

export interface JobSummary {
  jobId: string;
  request: JobRequest;
  state: 'queued' | 'running' | 'done' | 'failed' | 'cancelled';
  startedAt: number;
  endedAt?: number;
  /** a queued job's place in the queue (0 = next to start) */
  queuePosition?: number;
}

/**
 * A persisted record of a finished job, for history and comparisons. `interrupted`: the job was
 * running when its host stopped (quit, crash, power loss) and never finished.
 */
export interface HistoryRecord {
  jobId: string;
  request: JobRequest;
  label?: string;
  state: 'done' | 'failed' | 'cancelled' | 'interrupted';
  startedAt: number;
  endedAt: number;
  /** the done event (timings, close stats), when it finished */
  done?: Extract<SluiceEvent, { type: 'done' }>;
  error?: { code: string; message: string };
  /** a job that did not finish: how far it got (its last progress event) */
  progress?: { bytes: number; files: number; totalBytes: number; totalFiles: number };
  /** throughput samples [msSinceStart, bytesPerSec] for the over-time chart, downsampled (<= 200) */
  samples?: [number, number][];
}

export interface SampleRepoInfo {
  /** the sample repository's local path, a clone source that lasts across restarts */
  url: string;
  name: string;
  files: number;
}

export interface AppInfo {
  version: string;
  platform: NodeJS.Platform | string;
  /** 'electron' or 'web' — the renderer must not need it, but shows it in About */
  host: 'electron' | 'web';
  defaultCloneDir: string;
  /**
   * How this host can delete a library repository: 'trash' (Electron: the system trash) or
   * 'permanent' (the web host, which has none: the folder is deleted after a typed confirmation);
   * absent, the renderer offers no delete.
   */
  deleteRepository?: 'trash' | 'permanent';
  /**
   * Set only when the host process runs with shared/bench's slowclose.so preloaded
   * (LD_PRELOAD + SLOWCLOSE_PREFIX/SLOWCLOSE_US): close() of files under `prefix` waits `closeUs`.
   * The Comparisons screen then offers runs "with emulated close latency" (destinations under
   * `prefix`), clearly labelled as emulated. Absent = not offered.
   */
  emulatedCloseLatency?: { prefix: string; closeUs: number };
}

/** A page of a job's debug log (hg --debug style lines), as the host keeps it. */
export interface JobLogPage {
  from: number;
  lines: string[];
  /** lines the log holds */
  total: number;
  /** lines dropped from its head (the log keeps the last 300 000) */
  dropped: number;
  /** with a query: how many lines match */
  matches?: number;
  /** with a query: each returned line's number in the whole log (1-based, dropped lines counted) */
  lineNumbers?: number[];
}

/** A remembered sign-in, without its password (which never leaves main). */
export interface SavedCredential {
  /** scheme://host[:port] */
  origin: string;
  user: string;
  savedAt: number;
}

export interface SavedCredentialList {
  /** whether this host can store credentials at all */
  available: boolean;
  /** why not, when unavailable */
  reason?: string;
  entries: SavedCredential[];
}

/**
 * What a `sluice://clone?…` link, the web host's `/open?…` or a bundle file handed to the app asks
 * for, after the host checked it (src/main/host/deep-link.ts); a refusal carries the reason to show.
 */
export type DeepLink =
  { kind: 'clone'; url: string; dest?: string; rev?: string } | { kind: 'apply'; bundlePath: string };
export type DeepLinkResult = { ok: true; link: DeepLink } | { ok: false; reason: string };

/** Request/response calls (renderer -> host). */
export interface InvokeMap {
  'app:info': { args: []; result: AppInfo };
  'job:start': { args: [request: JobRequest, label?: string]; result: { jobId: string } };
  'job:cancel': { args: [jobId: string]; result: void };
  'job:list': { args: []; result: JobSummary[] };
  /** moves a queued job to `position` in the queue (0 = next to start) */
  'job:move': { args: [jobId: string, position: number]; result: void };
  /**
   * Lines [from, from + count) of a job's debug log (at most 2000), or of its lines matching
   * `query` (case-insensitive); running or finished, this session or an earlier one.
   */
  'job:log': { args: [jobId: string, from: number, count: number, query?: string]; result: JobLogPage };
  /** Saves a job's whole debug log (the host reads it; nothing crosses to the renderer). */
  'job:exportLog': { args: [jobId: string, suggestedName: string, header: string]; result: string | null };
  'bundle:inspect': { args: [path: string]; result: BundleInfo };
  'server:probe': { args: [url: string]; result: ServerInfo };
  'sample:get': { args: []; result: SampleRepoInfo };
  'history:list': { args: []; result: HistoryRecord[] };
  'history:clear': { args: []; result: void };
  'dialog:pickDirectory': { args: [defaultPath?: string]; result: string | null };
  'dialog:pickBundle': { args: []; result: string | null };
  'shell:openPath': { args: [path: string]; result: void };
  'shell:openExternal': { args: [url: string]; result: void };
  'file:writeText': { args: [suggestedName: string, text: string]; result: string | null };
  /** remember: save them for this host (Electron's safeStorage); refused where nothing can be stored */
  'credentials:answer': {
    args: [requestId: string, answer: { user: string; password: string } | null, remember?: boolean];
    result: void;
  };
  'credentials:list': { args: []; result: SavedCredentialList };
  'credentials:forget': { args: [origin: string]; result: void };
  /** the partial clone bundle downloads kept for resuming, oldest first */
  'downloads:list': { args: []; result: PartialDownloadInfo[] };
  /** removes one partial download (by key) or, without a key, all not in use */
  'downloads:remove': { args: [key?: string]; result: { removed: number } };
  /**
   * Deletes what comparison jobs made (repositories, bundles) as the host recorded them: one run's,
   * or every run's without an id. Nothing else is ever removed.
   */
  'comparison:removeFolders': { args: [run?: string]; result: { removed: number } };
  /** the repository library (src/main/host/repo-library.ts) */
  'library:list': { args: []; result: RepoRow[] };
  'library:add': { args: [path: string]; result: RepoRow };
  'library:remove': { args: [path: string]; result: void };
  /** moves a library repository to the system trash (Electron only), then removes it from the list */
  'library:trash': { args: [path: string]; result: void };
  /**
   * Deletes a library repository's folder for good (where there is no trash: AppInfo.deleteRepository),
   * `typedName` being the folder's name the user typed to confirm; then removes it from the list.
   */
  'library:deleteFolder': { args: [path: string, typedName: string]; result: void };
  /** opens a terminal in a library repository; false when the host cannot (web host) */
  'library:openTerminal': { args: [path: string]; result: { opened: boolean; command: string } };
  /** the repository's source URL (without credentials), copied to the clipboard when the host can */
  'library:copySource': { args: [path: string]; result: { text: string; copied: boolean } };
  /** the clone/apply dialogs' destination check before submit */
  'dest:check': { args: [path: string]; result: DestinationCheck };
  /** what the user set or made (src/shared/app-state.ts), kept in the host's data folder */
  'state:get': { args: []; result: AppState };
  /** replaces the parts of the saved state it names */
  'state:set': { args: [patch: AppState]; result: void };
  /** fetches one library repository now: incoming and outgoing counts, nothing pulled */
  'library:fetch': { args: [path: string]; result: void };
  /** fetches every library repository with a source, a bounded number at once */
  'library:fetchAll': { args: []; result: void };
  /** fetches one library repository now, asking for credentials when its source wants them */
  'library:signIn': { args: [path: string]; result: void };
  'library:settings': { args: []; result: LibrarySettings };
  'library:setSettings': { args: [change: Partial<LibrarySettings>]; result: LibrarySettings };
  /** a repository's own background fetch interval; null = the library's */
  'library:setFetchInterval': { args: [path: string, interval: FetchInterval | null]; result: void };
}

/** Pushes (host -> renderer). Events arrive batched: at most ~20 messages per second per job. */
export interface PushMap {
  /** `log`: the job's debug-log line counts (the lines stay in the host: job:log) */
  'job:events': { jobId: string; events: SluiceEvent[]; log?: { total: number; dropped: number } };
  'job:state': JobSummary;
  'credentials:request': { requestId: string; url: string; realm: string };
  /** a bundle file opened from the OS (file association) or the command line */
  'bundle:opened': { path: string };
  /** a link or bundle file the OS or the web host's /open handed to the app, checked or refused */
  'link:opened': DeepLinkResult;
  /** a command from the native menu that the renderer carries out (File > Clone from URL…) */
  'app:command': { command: 'clone-from-url' };
  /** rows of the repository library that changed (batched) */
  'library:update': LibraryUpdate;
  /**
   * The web host's bridge itself says when its connection to the host closes and comes back (the
   * WebSocket's close and open); Electron's renderer is never cut off from its host.
   */
  'host:connection': { connected: boolean };
  /** a background fetch found new changesets (the web host's notification; Electron shows its own) */
  'library:incoming': IncomingNotice;
}

export type InvokeChannel = keyof InvokeMap;
export type PushChannel = keyof PushMap;

/** The API the preload exposes as `window.sluice` (and the web host's bridge implements). */
export interface SluiceApi {
  invoke<C extends InvokeChannel>(channel: C, ...args: InvokeMap[C]['args']): Promise<InvokeMap[C]['result']>;
  on<C extends PushChannel>(channel: C, listener: (payload: PushMap[C]) => void): () => void;
  /** Path of a dropped File (Electron: webUtils.getPathForFile; web host: uploads the bytes to a temp file). */
  pathForFile(file: File): Promise<string>;
  /**
   * The web host's bridge only: the browser downloads a job's whole debug log (the host streams
   * it), where Electron saves it through job:exportLog.
   */
  downloadLog?(jobId: string, suggestedName: string, header: string): void;
}

// The channel lists the preload and the host allow. Each is the keys of a Record over its map's
// channels, so the compiler refuses a channel missing here or one the map does not have.
const INVOKE: Record<InvokeChannel, true> = {
  'app:info': true,
  'job:start': true,
  'job:cancel': true,
  'job:list': true,
  'job:move': true,
  'job:log': true,
  'job:exportLog': true,
  'bundle:inspect': true,
  'server:probe': true,
  'sample:get': true,
  'history:list': true,
  'history:clear': true,
  'dialog:pickDirectory': true,
  'dialog:pickBundle': true,
  'shell:openPath': true,
  'shell:openExternal': true,
  'file:writeText': true,
  'credentials:answer': true,
  'comparison:removeFolders': true,
  'library:list': true,
  'library:add': true,
  'library:remove': true,
  'library:trash': true,
  'library:deleteFolder': true,
  'library:openTerminal': true,
  'library:copySource': true,
  'dest:check': true,
  'library:fetch': true,
  'library:fetchAll': true,
  'library:signIn': true,
  'library:settings': true,
  'library:setSettings': true,
  'library:setFetchInterval': true,
  'credentials:list': true,
  'credentials:forget': true,
  'downloads:list': true,
  'downloads:remove': true,
  'state:get': true,
  'state:set': true,
};
const PUSH: Record<PushChannel, true> = {
  'job:events': true,
  'job:state': true,
  'credentials:request': true,
  'bundle:opened': true,
  'link:opened': true,
  'app:command': true,
  'library:update': true,
  'host:connection': true,
  'library:incoming': true,
};
export const INVOKE_CHANNELS: readonly InvokeChannel[] = Object.freeze(
  Object.keys(INVOKE) as InvokeChannel[],
);
export const PUSH_CHANNELS: readonly PushChannel[] = Object.freeze(Object.keys(PUSH) as PushChannel[]);
