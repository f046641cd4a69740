// Shared by the hostile server tests (server.test.ts, server-clonebundles.test.ts and others): a `sluice
// serve` backend of the default fixture per test file, scripted servers in front of it (see
// ../wire-faults/harness.ts), and a clone that reports what it left behind.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { SluiceError } from '../../src/main/engine/errors';
import { JobContext } from '../../src/main/engine/context/job-context';
import { cloneFromUrl, type CloneOptions } from '../../src/main/engine/operations/clone/clone';
import { startServer, type RunningServer } from '../../src/main/engine/operations/serve/http-server';
import type { CloneRequest } from '../../src/shared/jobs';
import { extractFixture, removeDir, tempDir } from '../interop/wire-support';
import { scriptedServer, type Script, type ScriptedServer } from '../wire-faults/harness';

// live bindings: set by the hooks useHostileBackend registers, read by the importing test file
export let work = '';
export let backend: RunningServer;
/** Scripted servers the test file started itself (not through serve): closed with the backend. */
export const open: ScriptedServer[] = [];

/** Registers the calling test file's hooks: a temp folder and the backend before, both gone after. */
export function useHostileBackend(label = 'hostile'): void {
  beforeAll(async () => {
    work = tempDir(label);
    backend = await startServer({ repo: extractFixture('default', work) });
  });

  afterAll(async () => {
    for (const s of open) await s.close();
    await backend.close();
    removeDir(work);
  });
}

export async function serve(script: Script): Promise<ScriptedServer> {
  const s = await scriptedServer(backend.url, script);
  open.push(s);
  return s;
}

let destCount = 0;
/** A number no other destination of this test file has used: names below `work` stay apart. */
export function nextDest(): number {
  return destCount++;
}

/** A clone into a fresh folder: its typed error (or null), what is left in the folder, its log. */
export async function clone(
  url: string,
  req: Partial<CloneRequest> = {},
  opts: CloneOptions = {},
  signal?: AbortSignal,
): Promise<{ err: SluiceError | null; left: string[]; logs: string[]; dest: string }> {
  const parent = join(work, `p${nextDest()}`);
  const dest = join(parent, 'clone');
  const logs: string[] = [];
  const ctx = new JobContext({
    fileEvents: false,
    sink: (e) => void (e.type === 'log' && logs.push(e.message)),
    ...(signal ? { signal } : {}),
  });
  const err = await cloneFromUrl({ kind: 'clone', url, dest, ...req }, ctx, {
    idleTimeoutMs: 5000,
    ...opts,
  }).then(
    () => null,
    (e: unknown) => e as SluiceError,
  );
  if (err) expect(err).toBeInstanceOf(SluiceError);
  let left: string[] = [];
  try {
    left = readdirSync(parent);
  } catch {
    /* parent never created */
  }
  return { err, left, logs, dest };
}
