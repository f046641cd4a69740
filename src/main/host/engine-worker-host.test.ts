import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EngineWorkerHost } from './engine-worker-host';
import { SOURCE_WORKER } from './source-worker';
import type { WorkerToHost } from './worker-protocol';
import type { JobRequest } from '../../shared/jobs';

const script = new URL('./test-fixtures/scripted-worker.mjs', import.meta.url);
const sampleBundle = new URL('../../../build/sample/sample.hg', import.meta.url).pathname;

function run(repo: string, options: { maxOldGenerationSizeMb?: number } = {}) {
  const request: JobRequest = { kind: 'verify', repo };
  const host = new EngineWorkerHost({ jobId: 'j', request, batchIntervalMs: 10 }, { script, ...options });
  const messages: WorkerToHost[] = [];
  const crashes: Error[] = [];
  host.on('message', (m) => messages.push(m));
  host.on('crash', (e) => crashes.push(e));
  const exited = new Promise<number>((resolve) => host.on('exit', resolve));
  return { host, messages, crashes, exited };
}

describe('EngineWorkerHost', () => {
  it('types messages and reports the exit of a worker that ends normally', async () => {
    const { messages, crashes, exited } = run('/ok');
    expect(await exited).toBe(0);
    expect(messages.map((m) => m.type)).toEqual(['events', 'finished']);
    expect(crashes).toEqual([]);
  });

  it('delivers host messages to the worker', async () => {
    const { host, messages, exited } = run('/echo');
    host.send({ type: 'cancel' });
    await expect.poll(() => messages.length).toBe(1);
    expect(messages[0]).toMatchObject({ type: 'events', events: [{ message: '{"type":"cancel"}' }] });
    await host.terminate();
    expect(await exited).toBe(1);
    host.send({ type: 'cancel' }); // after exit: ignored, no throw
  });

  it('reports an uncaught error as crash then exit', async () => {
    const { crashes, exited } = run('/throw');
    expect(await exited).toBe(1);
    expect(crashes.map((e) => e.message)).toEqual(['boom in the engine']);
  });

  it('terminates a worker stuck in a loop', async () => {
    const { host, messages, exited } = run('/spin');
    await expect.poll(() => messages.length).toBe(1);
    await host.terminate();
    await exited;
  });

  it('ends a worker that exceeds its heap cap without taking the host down', async () => {
    const { crashes, exited } = run('/alloc', { maxOldGenerationSizeMb: 64 });
    expect(await exited).toBe(1);
    expect(crashes[0]?.message).toMatch(/memory/i);
  });
});

describe('engine-worker.ts (the real worker entry, run from source)', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-worker-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  async function runReal(request: JobRequest) {
    const host = new EngineWorkerHost({ jobId: 'real', request, batchIntervalMs: 10 }, SOURCE_WORKER);
    const messages: WorkerToHost[] = [];
    const finished = new Promise<WorkerToHost>((resolve) =>
      host.on('message', (m) => {
        messages.push(m);
        if (m.type === 'finished') resolve(m);
      }),
    );
    const result = await finished;
    await host.terminate();
    return { finished: result, events: messages.flatMap((m) => (m.type === 'events' ? m.events : [])) };
  }

  it('applies a bundle through the engine and posts its events, then finished', async () => {
    const dest = join(dir, 'repo');
    const { finished, events } = await runReal({ kind: 'apply', bundlePath: sampleBundle, dest });
    expect(finished).toEqual({ type: 'finished', ok: true });
    expect(events[0]).toMatchObject({ type: 'start', jobId: 'real', kind: 'apply', files: 28 });
    expect(events.at(-1)).toMatchObject({ type: 'done', jobId: 'real', files: 28, result: dest });
    const names = events.flatMap((e) => (e.type === 'files' ? e.entries.map((x) => x.name) : []));
    expect(names).toHaveLength(28);
    expect(await readFile(join(dest, '.hg', 'requires'), 'utf8')).toMatch(/share-safe/);
  });

  it('reports an engine failure as an error event with its code, then finished with the error', async () => {
    const notABundle = join(dir, 'not-a-bundle.hg');
    await writeFile(notABundle, 'hello, not a bundle');
    const { finished, events } = await runReal({ kind: 'apply', bundlePath: notABundle, dest: join(dir, 'r') });
    expect(finished).toMatchObject({ type: 'finished', ok: false, error: { code: 'BAD_MAGIC' } });
    expect(events.at(-1)).toMatchObject({ type: 'error', jobId: 'real', code: 'BAD_MAGIC' });
    expect(events.filter((e) => e.type === 'error')).toHaveLength(1);
  });
});
