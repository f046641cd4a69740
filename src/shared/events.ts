// The one event model of Sluice. The engine emits these objects; the CLI prints them as NDJSON
// (`--json`) or renders them for a terminal, the Electron main process and the web host relay
// them (batched) to the renderer, and tests assert on them. Plain JSON-serialisable data only.

export type JobKind = 'apply' | 'clone' | 'pull' | 'bundle' | 'verify' | 'serve' | 'update';

/** On-the-wire or on-disk format of a job's data: a stream clone format, or a changegroup (`cg1`…`cg3`). */
export type StreamFormat = 'packed1' | 'stream-v1' | 'stream-v2' | 'changegroup';

export type JobPhase =
  | 'connect' // HTTP: capabilities, negotiation
  | 'discovery' // pull: finding what the remote has that the local repository lacks (heads, known)
  | 'download' // fetching a clone bundle before applying it
  | 'write' // streaming entries into the temporary repository
  | 'changesets' // changegroup: adding changesets (hg's `adding changesets`)
  | 'manifests' // changegroup: adding manifests
  | 'files' // changegroup: adding file changes, one batched files event entry per filelog
  | 'finalize' // requirements, fncache, phases, bookmarks, hgrc, rename into place
  | 'checkout' // writing the working copy (sluice update, clone/apply with a checkout)
  | 'verify' // optional verification after clone/apply
  | 'generate' // producing a bundle or a served stream
  | 'cleanup'; // removing the temporary directory after an error or a cancel

/** Which vfs an entry belongs to, as in stream v2 (`s` store, `c` cache), or `w` the working copy (hg's wvfs). */
export type VfsKey = 's' | 'c' | 'w';

export interface BaseEvent {
  jobId: string;
  /** ms since the Unix epoch */
  time: number;
}

export interface StartEvent extends BaseEvent {
  type: 'start';
  kind: JobKind;
  format?: StreamFormat;
  /** Entries announced by the stream header (0 when unknown, e.g. before the header arrives). */
  files: number;
  /** Data bytes announced by the stream header (entry headers excluded, like hg's bytecount). */
  bytes: number;
  requirements: string[];
  source: string;
  dest?: string;
}

export interface PhaseEvent extends BaseEvent {
  type: 'phase';
  phase: JobPhase;
}

/** Throttled to about 10 per second by the engine, plus one final event at 100 %. */
export interface ProgressEvent extends BaseEvent {
  type: 'progress';
  bytes: number;
  files: number;
  totalBytes: number;
  totalFiles: number;
  /** Moving-window rate over the last ~2 s. */
  bytesPerSec: number;
  elapsedMs: number;
  /** undefined while no rate is known */
  etaMs?: number;
}

export interface FileEntry {
  vfs: VfsKey;
  /** Unencoded store path (`data/foo.i`) or cache name. */
  name: string;
  size: number;
}

/** Per-file debug events, always batched (never one message per file). */
export interface FilesEvent extends BaseEvent {
  type: 'files';
  entries: FileEntry[];
}

export interface CloseStats {
  /** whether the background closer was active for this job */
  background: boolean;
  threads: number;
  /** files closed by the background threads */
  backgroundClosed: number;
  /** files closed synchronously on the writer */
  syncClosed: number;
  /** total time the writer spent blocked on closes (sync closes plus waiting on a full queue) */
  writerWaitMs: number;
}

export interface DoneEvent extends BaseEvent {
  type: 'done';
  wallMs: number;
  userCpuMs: number;
  systemCpuMs: number;
  bytes: number;
  files: number;
  close?: CloseStats;
  peakRssBytes?: number;
  /** final path of the result (repository or bundle) */
  result?: string;
  /** a pull's incoming check: how many changesets a pull would add */
  incoming?: number;
}

export interface ErrorEvent extends BaseEvent {
  type: 'error';
  code: string;
  message: string;
  /** what to try (hg's hint line): for CERTIFICATE, the fingerprint line to trust it */
  hint?: string;
}

export interface LogEvent extends BaseEvent {
  type: 'log';
  level: 'debug' | 'info' | 'warn';
  message: string;
}

/**
 * A transfer lost its connection and waits before trying again (exponential backoff, capped). The
 * UI counts down from `time + waitMs`; a `progress` event after it means the retry is under way.
 */
export interface RetryEvent extends BaseEvent {
  type: 'retry';
  /** the attempt the wait precedes (1-based) and how many are allowed without progress */
  attempt: number;
  maxAttempts: number;
  waitMs: number;
  /** why the last attempt failed (the error's message) */
  reason: string;
  /** bytes received so far (kept: the retry continues from there), and the total when known */
  bytes: number;
  totalBytes: number | null;
}

export type SluiceEvent =
  StartEvent | PhaseEvent | ProgressEvent | FilesEvent | DoneEvent | ErrorEvent | LogEvent | RetryEvent;

export type EventSink = (event: SluiceEvent) => void;

/** hg's `--debug` line for one streamed file (streamclone.py: consumev1/consumev2) or checked-out file. */
export function debugLine(entry: FileEntry): string {
  // merge.batchget's `getting PATH` (hg --verbose) for a file written into the working copy
  if (entry.vfs === 'w') return `getting ${entry.name}`;
  return `adding [${entry.vfs}] ${entry.name} (${formatHgBytes(entry.size)})`;
}

/** util.bytecount's table: at or above `mult` times `div`, show n/div with `digits` decimals. */
const HG_BYTE_UNITS: readonly (readonly [mult: number, div: number, unit: string, digits: number])[] = [
  [100, 1 << 30, 'GB', 0],
  [10, 1 << 30, 'GB', 1],
  [1, 1 << 30, 'GB', 2],
  [100, 1 << 20, 'MB', 0],
  [10, 1 << 20, 'MB', 1],
  [1, 1 << 20, 'MB', 2],
  [100, 1 << 10, 'KB', 0],
  [10, 1 << 10, 'KB', 1],
  [1, 1 << 10, 'KB', 2],
];

/**
 * Mercurial's util.bytecount: `66 bytes`, `1.21 KB`, `12.3 MB`. Called once per file for the debug
 * log, so its table is made once, not per call.
 */
export function formatHgBytes(n: number): string {
  const abs = Math.abs(n);
  for (const [mult, div, unit, digits] of HG_BYTE_UNITS) {
    if (abs >= div * mult) return `${(n / div).toFixed(digits)} ${unit}`;
  }
  return `${n.toFixed(0)} bytes`;
}

/** hg's closing line of a transfer (streamclone.py consumev1/v2: "transferred X in S seconds (R/sec)"). */
export function transferredLine(bytes: number, wallMs: number): string {
  const secs = Math.max(wallMs, 1) / 1000;
  return `transferred ${formatHgBytes(bytes)} in ${secs.toFixed(1)} seconds (${formatHgBytes(bytes / secs)}/sec)`;
}
