// The job registry with the real engine worker (run from source): a job that is cancelled while
// the engine waits for input ends `cancelled` and leaves nothing behind, whether the engine stops
// by itself or has to be terminated after the grace period.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { open, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cleanStaleTemporaries } from '../../../src/main/host/engine-api';
import { EngineWorkerHost } from '../../../src/main/host/engine-worker-host';
import { HistoryStore } from '../../../src/main/host/history-store';
import { JobLogStore } from '../../../src/main/host/job-log-store';
import { JobRegistry, type PushMessage } from '../../../src/main/host/job-registry';
import { SOURCE_WORKER } from '../../../src/main/host/source-worker';

const sampleBundle = new URL('../../../build/sample/sample.hg', import.meta.url).pathname;

describe.skipIf(process.platform === 'win32')(
  'JobRegistry with the engine worker (skipped on Windows: needs a FIFO)',
  () => {
    let dir: string;
    beforeEach(async () => {
      dir = await mkdtemp(join(tmpdir(), 'sluice-cancel-'));
    });
    afterEach(() => rm(dir, { recursive: true, force: true }));

    /** A registry running jobs on real engine workers in `dir`, and the messages it pushes. */
    function engineRegistry(cancelGraceMs: number): {
      registry: JobRegistry;
      history: HistoryStore;
      pushes: PushMessage[];
    } {
      const history = new HistoryStore(join(dir, 'history.json'));
      const registry = new JobRegistry({
        createWorker: (start) => new EngineWorkerHost(start, SOURCE_WORKER),
        history,
        logs: new JobLogStore(join(dir, 'logs')),
        cleanStaleTemporaries,
        cancelGraceMs,
        batchIntervalMs: 10,
      });
      const pushes: PushMessage[] = [];
      registry.onPush((m) => pushes.push(m));
      return { registry, history, pushes };
    }

    it('cancels an apply stuck on its input and leaves no destination and no temporary', async () => {
      // A bundle that arrives through a FIFO: the first 64 KiB, then nothing until the test ends.
      const fifo = join(dir, 'slow.hg');
      execFileSync('mkfifo', [fifo]);
      const bytes = await readFile(sampleBundle);
      const dest = join(dir, 'out', 'repo');
      const { registry, history, pushes } = engineRegistry(1000);

      const { jobId } = registry.start({ kind: 'apply', bundlePath: fifo, dest });
      const writer = await open(fifo, 'w'); // opens once the engine opened the FIFO for reading
      await writer.write(bytes.subarray(0, 64 * 1024));
      // Wait until the engine is writing the repository, then cancel.
      await expect
        .poll(
          () =>
            pushes.some(
              (p) => p.channel === 'job:events' && p.payload.events.some((e) => e.type === 'start'),
            ),
          { timeout: 20_000 },
        )
        .toBe(true);
      await registry.cancel(jobId);
      await registry.whenEnded(jobId);
      // Only now does the engine's pending read return (and a terminated thread finally exit).
      await writer.close();

      expect(registry.list()[0]).toMatchObject({ jobId, state: 'cancelled' });
      // The engine cannot see the cancel while its read is pending: the job ended because the host
      // terminated the thread after the grace period, not because the read returned.
      const events = pushes.flatMap((p) => (p.channel === 'job:events' ? p.payload.events : []));
      expect(events.some((e) => e.type === 'log' && /terminated/.test(e.message))).toBe(true);
      expect((await history.list())[0]).toMatchObject({
        jobId,
        state: 'cancelled',
        error: { code: 'CANCELLED' },
      });
      // Nothing at the destination, no temporary beside it.
      expect(await readdir(join(dir, 'out'))).toEqual([]);
    }, 60_000);

    it('cancels an apply whose input keeps flowing cooperatively, within the grace period', async () => {
      const fifo = join(dir, 'trickle.hg');
      execFileSync('mkfifo', [fifo]);
      const bytes = await readFile(sampleBundle);
      const dest = join(dir, 'out', 'repo');
      const { registry, pushes } = engineRegistry(4000);
      const { jobId } = registry.start({ kind: 'apply', bundlePath: fifo, dest });
      const writer = await open(fifo, 'w');
      let stop = false;
      const trickle = (async () => {
        // 2 KiB every 20 ms: the whole sample would take ~1.5 s
        for (let at = 0; at < bytes.length && !stop; at += 2048) {
          await writer.write(bytes.subarray(at, at + 2048)).catch(() => (stop = true));
          await new Promise((r) => setTimeout(r, 20));
        }
      })();
      await expect
        .poll(() => pushes.some((p) => p.channel === 'job:events' && (p.payload.log?.total ?? 0) > 2), {
          timeout: 20_000,
        })
        .toBe(true);
      await registry.cancel(jobId);
      await registry.whenEnded(jobId);
      stop = true;
      await trickle;
      await writer.close().catch(() => {});

      expect(registry.list()[0]).toMatchObject({ jobId, state: 'cancelled' });
      // it stopped by itself within the grace period: no "terminated" line (below)
      const events = pushes.flatMap((p) => (p.channel === 'job:events' ? p.payload.events : []));
      expect(events.at(-1)).toMatchObject({ type: 'error', code: 'CANCELLED' });
      expect(events.some((e) => e.type === 'log' && /terminated/.test(e.message))).toBe(false);
      expect(await readdir(join(dir, 'out'))).toEqual([]);
    }, 60_000);
  },
);
