import { describe, expect, it } from 'vitest';
import { EngineWorkerHost } from './engine-worker-host';
import { SOURCE_WORKER } from './source-worker';
import { ENGINE_STUBS } from './engine-api';
import type { WorkerToHost } from './worker-protocol';
import type { JobRequest } from '../../shared/jobs';

const script = new URL('./test-fixtures/scripted-worker.mjs', import.meta.url);

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
  it('runs a job through the engine and always ends with an error or done event, then finished', async () => {
    const host = new EngineWorkerHost({ jobId: 'j2', request: { kind: 'verify', repo: '/nonexistent/sluice-test-repo' }, batchIntervalMs: 10 }, SOURCE_WORKER);
    const messages: WorkerToHost[] = [];
    host.on('message', (m) => messages.push(m));
    const finished = await new Promise<WorkerToHost>((resolve) => host.on('message', (m) => m.type === 'finished' && resolve(m)));
    await host.terminate();
    const events = messages.flatMap((m) => (m.type === 'events' ? m.events : []));
    expect(finished).toMatchObject({ type: 'finished', ok: false });
    const last = events.at(-1)!;
    expect(last).toMatchObject({ type: 'error', jobId: 'j2' });
    if (ENGINE_STUBS.includes('runJob')) expect(last).toMatchObject({ code: 'USAGE', message: expect.stringMatching(/not available/) });
    else expect(last.type === 'error' && last.code).not.toBe('USAGE');
  });
});
