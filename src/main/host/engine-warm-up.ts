// The engine worker's warm-up: once, while the thread is idle after its start, it applies a tiny
// packed1 bundle of its own into a temporary folder, through the same engine, log lines and
// batcher as a job. V8 compiles a function on its first call and runs it unoptimized at first, so
// without this the first job the user starts pays for compiling the apply path. Any message that
// asks for work cancels it (the engine stops at its next chunk); its folder is removed either way.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packed1Header } from '../engine/format/packed1';
import { runJob } from './engine-api';
import { EventBatcher } from './event-batcher';
import { JobLogLines } from '../../shared/job-log-lines';
import type { SluiceEvent } from '../../shared/events';

/** Files in the warm-up bundle: enough for the per-file path to run more than once. */
const WARM_UP_FILES = 24;

/** A packed1 bundle of WARM_UP_FILES small store files. */
export function warmUpBundle(): Buffer {
  const parts: Buffer[] = [];
  let bytes = 0;
  for (let i = 0; i < WARM_UP_FILES; i++) {
    const data = Buffer.alloc(64 + i * 8, i);
    parts.push(Buffer.from(`data/warm-up/file${i}.i\0${data.length}\n`, 'latin1'), data);
    bytes += data.length;
  }
  return Buffer.concat([packed1Header(WARM_UP_FILES, bytes, ['generaldelta', 'revlogv1']), ...parts]);
}

/**
 * A job's events into its log lines and batcher, as the worker handles them: file entries live
 * on as log lines only, the rest is batched.
 */
export function jobSink(log: JobLogLines, batcher: EventBatcher): (event: SluiceEvent) => void {
  return (event) => {
    log.add(event);
    if (event.type === 'files') batcher.touch();
    else batcher.push(event);
  };
}

/** Runs the warm-up; resolves when it has ended, cancelled or not, and never rejects. */
export async function warmUpEngine(signal: AbortSignal, batchIntervalMs: number): Promise<void> {
  let dir: string | undefined;
  const log = new JobLogLines();
  const batcher = new EventBatcher(() => void log.take(), { intervalMs: batchIntervalMs });
  try {
    dir = await mkdtemp(join(tmpdir(), 'sluice-warm-up-'));
    const bundlePath = join(dir, 'warm-up.hg');
    await writeFile(bundlePath, warmUpBundle());
    if (signal.aborted) return;
    const request = { kind: 'apply' as const, bundlePath, dest: join(dir, 'repo') };
    await runJob(request, { jobId: 'warm-up', emit: jobSink(log, batcher), signal });
  } catch {
    // cancelled, or a temporary folder that cannot be written: the first job is then just colder
  } finally {
    batcher.dispose();
    if (dir) await rm(dir, { recursive: true, force: true }).catch(() => {});
  }
}
