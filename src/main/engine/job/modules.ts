// Entry points of other helpers' modules that runJob dispatches to. Loaded on demand (dynamic
// import) so that a module that has not landed yet is a clear SluiceError for that one job kind,
// not a crash of everything that imports runJob.
//
// The specifiers are literals once the module exists (so esbuild bundles it into the CLI); until
// then a variable specifier keeps the TypeScript build green and fails at run time with USAGE.

import type { CloseStats } from '../../../shared/events';
import type { CloneRequest } from '../../../shared/jobs';
import { SluiceError } from '../errors';
import type { JobContext } from './job-context';

/** What runJob uses of a clone's result (WIRE returns applyStream's ApplyStats). */
export interface CloneOutcome {
  dest?: string;
  bytes?: number;
  files?: number;
  close?: CloseStats;
}

export type CloneFromUrl = (request: CloneRequest, ctx: JobContext) => Promise<CloneOutcome | void>;
export type VerifyRepository = (
  repoRoot: string,
  ctx?: JobContext,
  opts?: { emitStart?: boolean },
) => Promise<{ bytes?: number; revlogFiles?: number; files?: number } | void>;

async function load<T>(what: string, importModule: () => Promise<unknown>, exportName: string): Promise<T> {
  let mod: Record<string, unknown>;
  try {
    mod = (await importModule()) as Record<string, unknown>;
  } catch (e) {
    throw new SluiceError('USAGE', `${what} is not available in this build (${(e as Error).message})`);
  }
  const fn = mod[exportName];
  if (typeof fn !== 'function')
    throw new SluiceError('USAGE', `${what} is not available in this build (${exportName} missing)`);
  return fn as T;
}

// Both modules have landed: literal specifiers, so the CLI and app bundles include them.
const WIRE_CLONE = () => import('../wire/clone');
const VERIFY = () => import('../verify/verify');

export const loadCloneFromUrl = (): Promise<CloneFromUrl> => load('clone (wire)', WIRE_CLONE, 'cloneFromUrl');
export const loadVerifyRepository = (): Promise<VerifyRepository> =>
  load('verify', VERIFY, 'verifyRepository');
