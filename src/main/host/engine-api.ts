// The host's one door into the engine (src/main/engine/**). Everything the host needs from the
// engine is re-exported here under the names the host uses, so when an engine entry point moves
// or changes its signature, only this file changes.

import { readdir, readFile, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { OWNER_MARKER, removeStaleTemporaries, type OwnerMarker } from '../engine/repo/destination';
import { inspectBundle as engineInspectBundle, JobContext, runJob as engineRunJob } from '../engine/job';
import { probeServer as probeWireServer } from '../engine/operations/clone/clone';
import { defaultDownloadsPolicy } from '../engine/downloads/downloads-dir';
import { PartialStore, type PartialInfo } from '../engine/downloads/partial-store';
import { fetchCounts as engineFetchCounts, type FetchRequest } from '../engine/operations/fetch/fetch';
import { workingCopySummary } from '../engine/operations/status/summary';
import type { EventSink } from '../../shared/events';
import type { BundleInfo, JobRequest, ServerInfo } from '../../shared/jobs';

export type { FetchCounts, FetchRequest } from '../engine/operations/fetch/fetch';
export type { WorkingCopySummary } from '../engine/operations/status/summary';
export { workingCopySummary };

/**
 * A library fetch. Without `askCredentials` a server that wants credentials fails it with AUTH;
 * with it, the host decides who answers (saved credentials, the user, or nobody).
 */
export function fetchCounts(
  request: FetchRequest,
  opts: { signal?: AbortSignal; askCredentials?: CredentialsPrompt } = {},
): ReturnType<typeof engineFetchCounts> {
  return engineFetchCounts(request, new JobContext(opts));
}

export interface Credentials {
  user: string;
  password: string;
}

/** Asks the user for credentials for `url` (HTTP 401 with `realm`); null = the user declined. */
export type CredentialsPrompt = (request: { url: string; realm: string }) => Promise<Credentials | null>;

export interface EngineJobContext {
  jobId: string;
  emit: EventSink;
  signal: AbortSignal;
  askCredentials?: CredentialsPrompt;
}

/** Runs one job to its end: emits start ... done (or error) through ctx.emit; rejects on failure. */
export async function runJob(request: JobRequest, ctx: EngineJobContext): Promise<void> {
  const jobContext = new JobContext({
    jobId: ctx.jobId,
    signal: ctx.signal,
    sink: ctx.emit,
    // The app shows hg's --debug file lines in its job log; the events are batched on the way.
    fileEvents: true,
    // the partial downloads folder the CLI uses too: a bundle cut short in one resumes in either
    downloads: defaultDownloadsPolicy(),
    ...(ctx.askCredentials && { askCredentials: ctx.askCredentials }),
  });
  await engineRunJob(request, jobContext);
}

export function inspectBundle(path: string): Promise<BundleInfo> {
  return engineInspectBundle(path);
}

/** "Test connection": capabilities (and the heads count) of a server, without cloning. */
export function probeServer(url: string): Promise<ServerInfo> {
  // The wire session has its own connect and read timeouts; this bounds the whole probe.
  return probeWireServer(url, { heads: true, signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
}

const PROBE_TIMEOUT_MS = 30_000;

/**
 * Removes what a job whose worker thread was terminated left beside `dest`: the engine's atomic
 * destination writes into `.<name>.sluice-tmp-<pid>-<random>` next to DEST and removes it itself
 * on error or cancel, but a terminated thread runs no cleanup. The engine's own sweep
 * (removeStaleTemporaries) only removes temporaries of dead processes, and a worker thread shares
 * the host's pid, so the host removes the ones its own process made for this DEST (call only when
 * no other job of this process writes to the same DEST), then runs the engine's sweep for the rest.
 */
export async function cleanStaleTemporaries(dest: string): Promise<void> {
  const target = resolve(dest);
  const parent = dirname(target);
  const prefix = `.${basename(target)}.sluice-tmp-${process.pid}-`;
  let names: string[] = [];
  try {
    names = await readdir(parent);
  } catch {
    return;
  }
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const dir = join(parent, name);
    try {
      const marker = JSON.parse(await readFile(join(dir, OWNER_MARKER), 'utf8')) as Partial<OwnerMarker>;
      if (marker.pid !== process.pid || (marker.dest !== undefined && resolve(marker.dest) !== target))
        continue;
    } catch {
      // no marker: removed just before the final rename, or never written; the name says it is ours
    }
    await rm(dir, { recursive: true, force: true, maxRetries: 3 });
  }
  await removeStaleTemporaries(parent);
}

/** The engine's sweep of temporaries left by dead processes, for one parent directory. */
export async function sweepDeadTemporaries(parent: string): Promise<void> {
  await removeStaleTemporaries(parent);
}

// The repository library reads repositories through these (repo-summary.ts).
export { openChangelogTail, type ChangelogTail } from '../engine/revlog/changelog-tip';
export { parseChangelogEntry, decodeExtra } from '../engine/revlog/texts';
export { parseDirstateParents, DIRSTATE_PARENTS_BYTES } from '../engine/working-copy/dirstate-parents';
export { locateRepository, type RepoLocation } from '../engine/store/requirements';
export { parseConfig } from '../engine/store/hgrc';
export { withoutCredentials } from '../engine/store/repo-layout';
/** The partial downloads (Settings): oldest first, each with its size and whether a job uses it. */
export function listPartialDownloads(): Promise<PartialInfo[]> {
  return new PartialStore(defaultDownloadsPolicy()).list();
}

/** Removes one partial download by key (false when a running download holds it). */
export function removePartialDownload(key: string): Promise<boolean> {
  return new PartialStore(defaultDownloadsPolicy()).remove(key);
}

/** Removes every partial download not in use; returns how many went. */
export function clearPartialDownloads(): Promise<number> {
  return new PartialStore(defaultDownloadsPolicy()).clear();
}

export type { PartialInfo };

// The host's small JSON files (history, library, credentials) are written as the engine's sidecars.
export { JsonFile, writeFileAtomic } from '../engine/json-file';
