// Job requests: what a user (CLI flags, the app's dialogs, tests) asks the engine to do.
// The same objects cross the IPC boundary, so they are plain data, validated in main
// (src/main/host/ipc-schemas.ts) before they reach the engine.

/** hg's worker.backgroundclose: `auto` = what the benchmark showed fastest for this platform. */
export type BackgroundCloseMode = 'on' | 'off' | 'auto';

export interface CloserOptions {
  backgroundClose: BackgroundCloseMode;
  /** worker.backgroundclosethreadcount (hg's default 4; Sluice's 48, measured: closer/background-closer.ts) */
  closeThreads: number;
  /** worker.backgroundcloseminfilecount (default 2048): fewer files stay synchronous */
  minFileCount: number;
  /** worker.backgroundclosemaxqueue (default 384) */
  maxQueue: number;
  /**
   * Comparisons only: the engine delays each close it makes by this many ms (a simulated
   * NTFS-like close, on the closing thread, so the closer hides it as it would on NTFS). Absent/0:
   * real closes.
   */
  simulateCloseMs?: number;
}

export const DEFAULT_CLOSER_OPTIONS: CloserOptions = {
  backgroundClose: 'auto',
  closeThreads: 48,
  minFileCount: 2048,
  maxQueue: 384,
};

export type BundleType = 'packed1' | 'v2';
export type BundleCompression = 'none' | 'gzip' | 'zstd';
export type StreamVersionChoice = 'auto' | 'v1' | 'v2';

export interface ApplyRequest {
  kind: 'apply';
  bundlePath: string;
  dest: string;
  /** the comparison run this job is part of: the host records what it made there, for cleanup */
  comparison?: string;
  /** false: the repository is not added to the library when the job ends (comparison runs) */
  library?: boolean;
  closer?: Partial<CloserOptions>;
  verify?: boolean;
  /** check out a working copy after the apply (default false, like hg debugapplystreamclonebundle) */
  update?: boolean;
  /** revision to check out (hg's REV); default: `@`, else the tip of default, else tip */
  updateRev?: string;
}

export interface CloneRequest {
  kind: 'clone';
  url: string;
  dest: string;
  /** the comparison run this job is part of: the host records what it made there, for cleanup */
  comparison?: string;
  /** false: the repository is not added to the library when the job ends (comparison runs) */
  library?: boolean;
  stream?: StreamVersionChoice;
  closer?: Partial<CloserOptions>;
  verify?: boolean;
  /** extra CA file (PEM) for https */
  caFile?: string;
  /** hg --insecure: this once, connect without checking the server's certificate */
  insecure?: boolean;
  /** use a clone bundle advertised by the server when one fits (default true) */
  cloneBundles?: boolean;
  /**
   * Take the server's obsolescence markers (hg with evolution on; default false, like hg's
   * default). Stream v2 then carries `.hg/store/obsstore`; a server with markers refuses a v2
   * stream to a client that does not take them. Stream v1 never carries them.
   */
  obsmarkers?: boolean;
  /**
   * Check out a working copy, as hg clone does: a clone job (runJob) defaults to true, false is
   * hg clone -U. cloneFromUrl, the engine call under it, checks out only when this is true.
   */
  update?: boolean;
  /** revision to check out (hg clone -u REV); default: `@`, else the tip of default, else tip */
  updateRev?: string;
  /**
   * Clone with the pull protocol (discovery + a changegroup), as `hg clone --pull`; without it a
   * server that offers no stream clone is pulled from anyway.
   */
  pull?: boolean;
  /** http(s): connecting (default 30 s); ssh: the login and the remote's hello (default 60 s) */
  connectTimeoutMs?: number;
  /** no data for this long aborts (default 60 s) */
  idleTimeoutMs?: number;
}

/**
 * `sluice pull REPO [SOURCE]`: what SOURCE has that REPO lacks, with its phases and bookmarks.
 * `incoming`: only discovery, reporting what a pull would add (hg incoming).
 */
export interface PullRequest {
  kind: 'pull';
  repo: string;
  /** URL; default: the repository's paths.default */
  source?: string;
  /** update a clean working copy afterwards (hg pull -u) */
  update?: boolean;
  incoming?: boolean;
  caFile?: string;
  /** hg --insecure, as for a clone */
  insecure?: boolean;
  connectTimeoutMs?: number;
  idleTimeoutMs?: number;
}

export interface BundleRequest {
  kind: 'bundle';
  repo: string;
  out: string;
  /** the comparison run this job is part of: the host records what it made there, for cleanup */
  comparison?: string;
  type?: BundleType;
  compression?: BundleCompression;
  /** bundle2 payload chunk size; default 32768, 4096 reproduces pre-4.5 hg */
  chunkSize?: number;
}

export interface VerifyRequest {
  kind: 'verify';
  repo: string;
}

/** Check out a revision into a repository's working copy (sluice update, hg update). */
export interface UpdateRequest {
  kind: 'update';
  repo: string;
  /** hg's REV; default: the `@` bookmark, else the tip of default, else tip (from null) */
  rev?: string;
  /** hg's --hidden: resolve on every changeset, hidden (obsolete) ones included */
  hidden?: boolean;
  closer?: Partial<CloserOptions>;
}

export type JobRequest =
  ApplyRequest | CloneRequest | PullRequest | BundleRequest | VerifyRequest | UpdateRequest;

/** What `inspectBundle` reads from a bundle's header without applying it (drop dialog). */
export interface BundleInfo {
  path: string;
  /** stream clone bundles: packed1 or bundle2 + stream2; 'changegroup': what plain `hg bundle` writes */
  type: 'packed1' | 'v2' | 'changegroup';
  /** changegroup bundles: the container (HG10xx = bundle1, HG20 = bundle2), cg version, changesets */
  container?: 'bundle1' | 'bundle2';
  changegroupVersion?: '01' | '02' | '03';
  changesets?: number;
  /** bundle2 `Compression` (UN, GZ, BZ, ZS); packed1 is always UN */
  compression: 'UN' | 'GZ' | 'BZ' | 'ZS';
  requirements: string[];
  files: number;
  bytes: number;
  /** requirements Sluice cannot apply; non-empty means the bundle will be refused */
  unsupported: string[];
  sizeOnDisk: number;
  /**
   * An uncompressed stream bundle smaller on disk than the data it declares: at least this many
   * bytes are missing (a cut download), so an apply would fail partway. Absent when not known short.
   */
  missingBytes?: number;
}

/** What `probeServer` learns from a URL before cloning ("test connection"). */
export interface ServerInfo {
  url: string;
  streamV1: boolean;
  streamV2: boolean;
  streamRequirements: string[];
  compression: string[];
  cloneBundles: boolean;
  /** heads count from the server, when asked */
  heads?: number;
  /** set when the server needs credentials */
  authRequired?: boolean;
}

/**
 * A clone bundle download kept for resuming (the partial downloads folder the CLI and the app
 * share), as the app's Settings lists it.
 */
export interface PartialDownloadInfo {
  /** what `downloads:remove` takes (32 hex digits) */
  key: string;
  /** the bundle's URL without credentials */
  url: string;
  /** the clone destination it was fetched for */
  dest: string;
  /** bytes on disk, and the total when the server announced one */
  bytes: number;
  total: number | null;
  /** epoch ms */
  created: number;
  updated: number;
  /** a running download holds it (it cannot be removed now) */
  inUse: boolean;
}
