import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JobRegistry, type PushMessage } from './job-registry';
import { HistoryStore } from './history-store';
import { TypedEmitter } from './typed-emitter';
import type { EngineWorkerEvents, EngineWorkerLike } from './engine-worker-host';
import type { HostToWorker, WorkerStartData, WorkerToHost } from './worker-protocol';
import type { SluiceEvent } from '../../shared/events';

/** An in-process stand-in for an engine worker: the test drives what the "engine" says. */
class FakeWorker implements EngineWorkerLike {
  readonly events = new TypedEmitter<EngineWorkerEvents>();
  readonly received: HostToWorker[] = [];
  terminated = false;
  constructor(readonly start: WorkerStartData) {}
  on<K extends keyof EngineWorkerEvents>(event: K, listener: (...args: EngineWorkerEvents[K]) => void) {
    return this.events.on(event, listener);
  }
  send(message: HostToWorker) {
    this.received.push(message);
  }
  async terminate() {
    if (this.terminated) return;
    this.terminated = true;
    this.events.emit('exit', 1);
  }
  dispose() {
    void this.terminate();
  }
  say(message: WorkerToHost) {
    this.events.emit('message', message);
  }
  emit(...events: SluiceEvent[]) {
    this.say({ type: 'events', events });
  }
}

const t = () => Date.now();
const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));

describe('JobRegistry', () => {
  let dir: string;
  let history: HistoryStore;
  let workers: FakeWorker[];
  let pushes: PushMessage[];
  let cleaned: string[];
  let registry: JobRegistry;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-registry-'));
    history = new HistoryStore(join(dir, 'history.json'));
    workers = [];
    pushes = [];
    cleaned = [];
    registry = new JobRegistry({
      createWorker: (start) => {
        const w = new FakeWorker(start);
        workers.push(w);
        return w;
      },
      history,
      cleanStaleTemporaries: async (dest) => void cleaned.push(dest),
      maxConcurrent: 2,
      cancelGraceMs: 100,
      batchIntervalMs: 20,
    });
    registry.onPush((m) => pushes.push(m));
  });

  afterEach(async () => {
    await registry.dispose();
    await history.flushed();
    await rm(dir, { recursive: true, force: true });
  });

  const states = (jobId: string) => pushes.filter((p) => p.channel === 'job:state' && p.payload.jobId === jobId).map((p) => (p.channel === 'job:state' ? p.payload.state : ''));
  const relayed = (jobId: string) => pushes.flatMap((p) => (p.channel === 'job:events' && p.payload.jobId === jobId ? p.payload.events : []));

  it('runs a job in a worker, relays its events batched and records it in the history', async () => {
    const { jobId } = registry.start({ kind: 'apply', bundlePath: '/b.hg', dest: '/r' }, 'my apply');
    expect(workers).toHaveLength(1);
    expect(workers[0]!.start).toMatchObject({ jobId, request: { kind: 'apply', bundlePath: '/b.hg', dest: '/r' } });
    const w = workers[0]!;
    w.emit({ type: 'start', jobId, time: t(), kind: 'apply', files: 3, bytes: 30, requirements: [], source: '/b.hg', dest: '/r' });
    for (let i = 1; i <= 50; i++) {
      w.emit({ type: 'progress', jobId, time: t(), bytes: i, files: 0, totalBytes: 50, totalFiles: 3, bytesPerSec: i * 100, elapsedMs: i * 10 });
    }
    w.emit({ type: 'files', jobId, time: t(), entries: [{ vfs: 's', name: 'data/a.i', size: 10 }] });
    w.emit({ type: 'done', jobId, time: t(), wallMs: 500, userCpuMs: 1, systemCpuMs: 1, bytes: 50, files: 3, result: '/r' });
    w.say({ type: 'finished', ok: true });
    await registry.whenEnded(jobId);

    expect(states(jobId)).toEqual(['queued', 'running', 'done']);
    const events = relayed(jobId);
    expect(events.map((e) => e.type)).toEqual(['start', 'files', 'progress', 'done']);
    expect(events.find((e) => e.type === 'progress')).toMatchObject({ bytes: 50 });
    expect(w.terminated).toBe(true);

    const [record] = await history.list();
    expect(record).toMatchObject({ jobId, label: 'my apply', state: 'done', done: { wallMs: 500, result: '/r' } });
    expect(record!.samples).toHaveLength(50);
    expect(record!.samples![49]).toEqual([500, 5000]);
    expect(registry.list()).toEqual([expect.objectContaining({ jobId, state: 'done' })]);
  });

  it('queues jobs beyond the concurrency limit and starts them as others end', async () => {
    const a = registry.start({ kind: 'verify', repo: '/a' });
    const b = registry.start({ kind: 'verify', repo: '/b' });
    const c = registry.start({ kind: 'verify', repo: '/c' });
    expect(workers).toHaveLength(2);
    expect(registry.list().map((j) => j.state)).toEqual(['running', 'running', 'queued']);
    workers[0]!.say({ type: 'finished', ok: true });
    await registry.whenEnded(a.jobId);
    expect(workers).toHaveLength(3);
    expect(workers[2]!.start.jobId).toBe(c.jobId);
    expect(registry.list().find((j) => j.jobId === b.jobId)!.state).toBe('running');
  });

  it('cancels through the worker when the engine stops in time', async () => {
    const { jobId } = registry.start({ kind: 'clone', url: 'http://127.0.0.1:1/r', dest: '/c' });
    await registry.cancel(jobId);
    expect(workers[0]!.received).toEqual([{ type: 'cancel' }]);
    workers[0]!.emit({ type: 'error', jobId, time: t(), code: 'CANCELLED', message: 'cancelled' });
    workers[0]!.say({ type: 'finished', ok: false, error: { code: 'CANCELLED', message: 'cancelled' } });
    await registry.whenEnded(jobId);
    expect(states(jobId)).toEqual(['queued', 'running', 'cancelled']);
    expect(cleaned).toEqual([]);
    expect((await history.list())[0]).toMatchObject({ state: 'cancelled', error: { code: 'CANCELLED' } });
  });

  it('terminates an engine that ignores the cancel, then cleans its temporaries', async () => {
    const { jobId } = registry.start({ kind: 'apply', bundlePath: '/b.hg', dest: '/stuck' });
    const t0 = Date.now();
    await registry.cancel(jobId);
    await registry.whenEnded(jobId);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(90);
    expect(workers[0]!.terminated).toBe(true);
    expect(cleaned).toEqual(['/stuck']);
    expect(states(jobId).at(-1)).toBe('cancelled');
    expect(relayed(jobId).some((e) => e.type === 'log' && /terminated/.test(e.message))).toBe(true);
  });

  it('reports a worker that dies without finishing as failed, with an error event', async () => {
    const { jobId } = registry.start({ kind: 'apply', bundlePath: '/b.hg', dest: '/r' });
    workers[0]!.events.emit('crash', new Error('heap limit'));
    workers[0]!.events.emit('exit', 1);
    await registry.whenEnded(jobId);
    expect(states(jobId).at(-1)).toBe('failed');
    expect(relayed(jobId).at(-1)).toMatchObject({ type: 'error', code: 'IO', message: expect.stringContaining('heap limit') });
    expect(cleaned).toEqual(['/r']);
    expect((await history.list())[0]).toMatchObject({ state: 'failed', error: { code: 'IO' } });
  });

  it('refuses a second job writing a destination a running or queued job writes', async () => {
    const a = registry.start({ kind: 'apply', bundlePath: '/b.hg', dest: '/same' });
    expect(() => registry.start({ kind: 'clone', url: 'http://127.0.0.1:1/r', dest: '/same/' })).toThrow(/being written by another job/);
    expect(registry.list()).toHaveLength(1);
    workers[0]!.say({ type: 'finished', ok: false, error: { code: 'IO', message: 'x' } });
    await registry.whenEnded(a.jobId);
    expect(() => registry.start({ kind: 'apply', bundlePath: '/b.hg', dest: '/same' })).not.toThrow();
  });

  it('cancels a queued job without starting it', async () => {
    registry.start({ kind: 'verify', repo: '/a' });
    registry.start({ kind: 'verify', repo: '/b' });
    const c = registry.start({ kind: 'verify', repo: '/c' });
    await registry.cancel(c.jobId);
    expect(states(c.jobId)).toEqual(['queued', 'cancelled']);
    expect(workers).toHaveLength(2);
  });

  it('relays credential prompts to the renderer and answers to the right worker', async () => {
    registry.start({ kind: 'verify', repo: '/a' });
    const { jobId } = registry.start({ kind: 'clone', url: 'https://example.org/r', dest: '/c' });
    workers[1]!.say({ type: 'credentials', requestId: `${jobId}-c1`, url: 'https://example.org/r', realm: 'hg' });
    expect(pushes.at(-1)).toEqual({ channel: 'credentials:request', payload: { requestId: `${jobId}-c1`, url: 'https://example.org/r', realm: 'hg' } });
    registry.answerCredentials(`${jobId}-c1`, { user: 'u', password: 'p' });
    registry.answerCredentials('unknown', null);
    expect(workers[1]!.received).toEqual([{ type: 'credentials', requestId: `${jobId}-c1`, answer: { user: 'u', password: 'p' } }]);
    expect(workers[0]!.received).toEqual([]);
    await tick();
  });
});
