// The host's one door into the engine (src/main/engine/**). Everything the host needs from the
// engine is re-exported here under the names the host uses, so when an engine entry point moves
// or changes its signature, only this file changes.
//
// Entry points that have not landed yet are stubs that fail with a clear SluiceError; ENGINE_STUBS
// lists them (app:info logs it, tests skip on it).

import { SluiceError } from '../engine/errors';
import type { EventSink } from '../../shared/events';
import type { BundleInfo, JobRequest, ServerInfo } from '../../shared/jobs';

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

export interface RunningServer {
  url: string;
  close(): Promise<void>;
}

export interface StartServerOptions {
  repo: string;
  address: string;
  port: number;
}

/** Names of engine entry points that are still stubs in this build. */
export const ENGINE_STUBS: readonly string[] = ['runJob', 'inspectBundle', 'probeServer', 'startServer', 'cleanStaleTemporaries'];

function notYet(name: string): never {
  throw new SluiceError('USAGE', `engine entry point ${name} is not available in this build`);
}

/** Runs one job to its end: emits start ... done (or error) through ctx.emit; rejects on failure. */
export async function runJob(_request: JobRequest, _ctx: EngineJobContext): Promise<void> {
  notYet('runJob');
}

export async function inspectBundle(_path: string): Promise<BundleInfo> {
  notYet('inspectBundle');
}

export async function probeServer(_url: string): Promise<ServerInfo> {
  notYet('probeServer');
}

export async function startServer(_options: StartServerOptions): Promise<RunningServer> {
  notYet('startServer');
}

/**
 * Removes the temporary directories a killed job left beside `dest` (the engine's atomic
 * destination writes into a temporary sibling and renames it at the end).
 */
export async function cleanStaleTemporaries(_dest: string): Promise<void> {
  notYet('cleanStaleTemporaries');
}
