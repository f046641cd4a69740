import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JobRegistry, type PushMessage } from '../../../src/main/host/job-registry';
import { HistoryStore } from '../../../src/main/host/history-store';
import { JobLogStore } from '../../../src/main/host/job-log-store';
import { TypedEmitter } from '../../../src/main/host/typed-emitter';
import type { EngineWorkerEvents, EngineWorkerLike } from '../../../src/main/host/engine-worker-host';
import type { HostToWorker, WorkerStartData, WorkerToHost } from '../../../src/main/host/worker-protocol';
import type { FileEntry, SluiceEvent } from '../../../src/shared/events';
import { JobLogLines, type LogChunk } from '../../../src/shared/job-log-lines';

/** An in-process stand-in for an engine worker: the test drives what the "engine" says. */
class FakeWorker implements EngineWorkerLike {
  readonly events = new TypedEmitter<EngineWorkerEvents>();
  readonly received: HostToWorker[] = [];
  terminated = false;
  constructor(readonly start: WorkerStartData) {}
  /** ids of the jobs the host started on this worker */
  get started(): string[] {
    return this.received.flatMap((m) => (m.type === 'start' ? [m.jobId] : []));
  }
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
    this.say({ type: 'events', jobId: events[0]!.jobId, events });
  }
}

const t = () => Date.now();
/** the log chunk an engine worker posts for these files */
function fileChunk(entries: FileEntry[]): LogChunk {
  const lines = new JobLogLines();
  lines.add({ type: 'files', jobId: 'j', time: t(), entries });
  return lines.take()!;
}
/** One turn of the event loop: lets a message that should be ignored be (not) handled. */
const tick = () => new Promise((r) => setTimeout(r, 0));

describe('JobRegistry', () => {
  let dir: string;
  let history: HistoryStore;
  let logs: JobLogStore;
  let workers: FakeWorker[];
  let pushes: PushMessage[];
  let cleaned: string[];
  let registry: JobRegistry;
  /** Every registry's workers are fakes, kept in `workers` in the order they were made. */
  const createWorker = (start: WorkerStartData): FakeWorker => {
    const w = new FakeWorker(start);
    workers.push(w);
    return w;
  };

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-registry-'));
    history = new HistoryStore(join(dir, 'history.json'));
    logs = new JobLogStore(join(dir, 'logs'));
    workers = [];
    pushes = [];
    cleaned = [];
    registry = new JobRegistry({
      createWorker,
      history,
      logs,
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

  const states = (jobId: string) =>
    pushes
      .filter((p) => p.channel === 'job:state' && p.payload.jobId === jobId)
      .map((p) => (p.channel === 'job:state' ? p.payload.state : ''));
  const relayed = (jobId: string) =>
    pushes.flatMap((p) => (p.channel === 'job:events' && p.payload.jobId === jobId ? p.payload.events : []));

  it('runs a job in the warm worker, relays its events batched, keeps its log and records it in the history', async () => {
    registry.warmUp();
    expect(workers).toHaveLength(1);
    const { jobId } = registry.start({ kind: 'apply', bundlePath: '/b.hg', dest: '/r' }, 'my apply');
    expect(workers).toHaveLength(1);
    const w = workers[0]!;
    expect(w.received).toEqual([
      { type: 'start', jobId, request: { kind: 'apply', bundlePath: '/b.hg', dest: '/r' } },
    ]);
    w.emit({
      type: 'start',
      jobId,
      time: t(),
      kind: 'apply',
      files: 3,
      bytes: 30,
      requirements: [],
      source: '/b.hg',
      dest: '/r',
    });
    const started = registry.list().find((j) => j.jobId === jobId)!.startedAt;
    for (let i = 1; i <= 50; i++) {
      w.emit({
        type: 'progress',
        jobId,
        // the time since the job started is the chart's x, not elapsedMs (which restarts per phase)
        time: started + i * 10,
        bytes: i,
        files: 0,
        totalBytes: 50,
        totalFiles: 3,
        bytesPerSec: i * 100,
        elapsedMs: i * 10,
      });
    }
    w.say({
      type: 'events',
      jobId,
      events: [],
      log: fileChunk([
        { vfs: 's', name: 'data/a.i', size: 10 },
        { vfs: 's', name: 'data/b.i', size: 20 },
      ]),
    });
    w.emit({
      type: 'done',
      jobId,
      time: t(),
      wallMs: 500,
      userCpuMs: 1,
      systemCpuMs: 1,
      bytes: 50,
      files: 3,
      result: '/r',
    });
    w.say({ type: 'finished', jobId, ok: true });
    await registry.whenEnded(jobId);

    expect(states(jobId)).toEqual(['queued', 'running', 'done']);
    const events = relayed(jobId);
    expect(events.map((e) => e.type)).toEqual(['start', 'progress', 'done']);
    expect(events.find((e) => e.type === 'progress')).toMatchObject({ bytes: 50 });
    // the renderer learns the log's size, not its lines
    const last = pushes.filter((p) => p.channel === 'job:events').at(-1)!;
    expect(last.payload).toMatchObject({ log: { total: 2, dropped: 0 } });
    // the worker stays, warm for the next job
    expect(w.terminated).toBe(false);
    expect((await logs.page(jobId, 0, 10)).lines).toEqual([
      'adding [s] data/a.i (10 bytes)',
      'adding [s] data/b.i (20 bytes)',
    ]);

    const [record] = await history.list();
    expect(record).toMatchObject({
      jobId,
      label: 'my apply',
      state: 'done',
      done: { wallMs: 500, result: '/r' },
    });
    expect(record!.samples).toHaveLength(50);
    expect(record!.samples![49]).toEqual([500, 5000]);
    // a finished job keeps its done event, not its last progress
    expect(record!.progress).toBeUndefined();
    expect(registry.list()).toEqual([expect.objectContaining({ jobId, state: 'done' })]);

    const next = registry.start({ kind: 'verify', repo: '/r' });
    expect(workers).toHaveLength(1);
    expect(w.started).toEqual([jobId, next.jobId]);
  });

  it('a URL with a password reaches the engine only: job list, pushes and the history file show it without credentials', async () => {
    const url = 'https://user:s3cret-token@hg.example/repo';
    const { jobId } = registry.start({ kind: 'clone', url, dest: '/c' });
    const pull = registry.start({ kind: 'pull', repo: '/p', source: 'http://tok3n@hg.example/repo' });
    const w = workers[0]!;
    expect(w.received.filter((m) => m.type === 'start').map((m) => m.type === 'start' && m.request)).toEqual([
      { kind: 'clone', url, dest: '/c' },
      { kind: 'pull', repo: '/p', source: 'http://tok3n@hg.example/repo' },
    ]);
    for (const id of [jobId, pull.jobId]) {
      w.emit({ type: 'error', jobId: id, time: t(), code: 'AUTH', message: 'authorization failed' });
      w.say({
        type: 'finished',
        jobId: id,
        ok: false,
        error: { code: 'AUTH', message: 'authorization failed' },
      });
      await registry.whenEnded(id);
    }
    await history.flushed();
    const { readFile } = await import('node:fs/promises');
    for (const seen of [
      JSON.stringify(pushes),
      JSON.stringify(registry.list()),
      await readFile(join(dir, 'history.json'), 'utf8'),
    ]) {
      expect(seen).not.toMatch(/s3cret|tok3n/);
      expect(seen).toContain('https://hg.example/repo');
    }
  });

  it('a job that runs when its host stops is on disk as interrupted; its end replaces that', async () => {
    const request = { kind: 'clone' as const, url: 'http://127.0.0.1:1/r', dest: join(dir, 'clone') };
    const { jobId } = registry.start(request, 'quit under');
    await history.flushed();
    // this host runs it: not history yet
    expect(await history.list()).toEqual([]);
    // the next host (a restart after a quit or crash) reads the same file
    const nextHost = new HistoryStore(join(dir, 'history.json'));
    expect(await nextHost.list()).toEqual([
      expect.objectContaining({ jobId, state: 'interrupted', label: 'quit under', request }),
    ]);

    workers[0]!.emit({ type: 'error', jobId, time: t(), code: 'NETWORK', message: 'connection reset' });
    workers[0]!.say({
      type: 'finished',
      jobId,
      ok: false,
      error: { code: 'NETWORK', message: 'connection reset' },
    });
    await registry.whenEnded(jobId);
    await history.flushed();
    expect(await new HistoryStore(join(dir, 'history.json')).list()).toEqual([
      expect.objectContaining({
        jobId,
        state: 'failed',
        error: { code: 'NETWORK', message: 'connection reset' },
      }),
    ]);
  });

  it('queues jobs beyond the concurrency limit and starts them on the same worker as others end', async () => {
    const a = registry.start({ kind: 'verify', repo: '/a' });
    const b = registry.start({ kind: 'verify', repo: '/b' });
    const c = registry.start({ kind: 'verify', repo: '/c' });
    expect(workers).toHaveLength(1);
    expect(workers[0]!.started).toEqual([a.jobId, b.jobId]);
    expect(registry.list().map((j) => j.state)).toEqual(['running', 'running', 'queued']);
    workers[0]!.say({ type: 'finished', jobId: a.jobId, ok: true });
    await registry.whenEnded(a.jobId);
    expect(workers).toHaveLength(1);
    expect(workers[0]!.started).toEqual([a.jobId, b.jobId, c.jobId]);
    expect(registry.list().find((j) => j.jobId === b.jobId)!.state).toBe('running');
  });

  it('ignores messages for jobs the worker does not run', async () => {
    const a = registry.start({ kind: 'verify', repo: '/a' });
    workers[0]!.say({ type: 'finished', jobId: 'someone-else', ok: true });
    await tick();
    expect(registry.list()[0]).toMatchObject({ jobId: a.jobId, state: 'running' });
  });

  it('cancels through the worker when the engine stops in time', async () => {
    const { jobId } = registry.start({ kind: 'clone', url: 'http://127.0.0.1:1/r', dest: '/c' });
    await registry.cancel(jobId);
    expect(workers[0]!.received.at(-1)).toEqual({ type: 'cancel', jobId });
    workers[0]!.emit({
      type: 'progress',
      jobId,
      time: t(),
      bytes: 4096,
      files: 7,
      totalBytes: 8192,
      totalFiles: 9,
      bytesPerSec: 1,
      elapsedMs: 1,
    });
    workers[0]!.emit({ type: 'error', jobId, time: t(), code: 'CANCELLED', message: 'cancelled' });
    workers[0]!.say({
      type: 'finished',
      jobId,
      ok: false,
      error: { code: 'CANCELLED', message: 'cancelled' },
    });
    await registry.whenEnded(jobId);
    expect(states(jobId)).toEqual(['queued', 'running', 'cancelled']);
    expect(cleaned).toEqual([]);
    expect(workers[0]!.terminated).toBe(false);
    // how far it got, for the row after a reload
    expect((await history.list())[0]).toMatchObject({
      state: 'cancelled',
      error: { code: 'CANCELLED' },
      progress: { bytes: 4096, files: 7, totalBytes: 8192, totalFiles: 9 },
    });
  });

  it('terminates an engine that ignores the cancel, then cleans its temporaries; the next job gets a new worker', async () => {
    const { jobId } = registry.start({ kind: 'apply', bundlePath: '/b.hg', dest: '/stuck' });
    await registry.cancel(jobId);
    // the engine gets its grace period first: cancelled, not yet terminated
    expect(workers[0]!.received.at(-1)).toEqual({ type: 'cancel', jobId });
    expect(workers[0]!.terminated).toBe(false);
    expect(registry.list()[0]).toMatchObject({ jobId, state: 'running' });
    await registry.whenEnded(jobId);
    expect(workers[0]!.terminated).toBe(true);
    expect(cleaned).toEqual(['/stuck']);
    expect(states(jobId).at(-1)).toBe('cancelled');
    expect(relayed(jobId).some((e) => e.type === 'log' && /terminated/.test(e.message))).toBe(true);
    expect((await logs.page(jobId, 0, 10)).lines).toEqual([
      expect.stringMatching(/^warning: the engine did not stop .* terminated$/),
    ]);
    const next = registry.start({ kind: 'verify', repo: '/r' });
    expect(workers).toHaveLength(2);
    expect(workers[1]!.started).toEqual([next.jobId]);
  });

  it('gives up on a stuck job at once but stops its worker only after the other job on it ended', async () => {
    const stuck = registry.start({ kind: 'apply', bundlePath: '/b.hg', dest: '/stuck' });
    const other = registry.start({ kind: 'apply', bundlePath: '/b.hg', dest: '/other' });
    await registry.cancel(stuck.jobId);
    await registry.whenEnded(stuck.jobId);
    expect(states(stuck.jobId).at(-1)).toBe('cancelled');
    expect(workers[0]!.terminated).toBe(false);
    expect(registry.list().find((j) => j.jobId === other.jobId)!.state).toBe('running');
    // new jobs go to a new worker meanwhile
    const third = registry.start({ kind: 'verify', repo: '/r' });
    expect(workers).toHaveLength(2);
    expect(workers[1]!.started).toEqual([third.jobId]);
    workers[0]!.say({ type: 'finished', jobId: other.jobId, ok: true });
    await registry.whenEnded(other.jobId);
    expect(states(other.jobId).at(-1)).toBe('done');
    await expect.poll(() => workers[0]!.terminated).toBe(true);
    await expect.poll(() => cleaned).toEqual(['/stuck']);
  });

  it('fails every job of a worker that dies with a clear message; the next job starts a new worker', async () => {
    const a = registry.start({ kind: 'apply', bundlePath: '/b.hg', dest: '/r' });
    const b = registry.start({ kind: 'apply', bundlePath: '/b.hg', dest: '/s' });
    workers[0]!.say({
      type: 'events',
      jobId: a.jobId,
      events: [],
      log: fileChunk([{ vfs: 's', name: 'data/a.i', size: 1 }]),
    });
    workers[0]!.events.emit('crash', new Error('heap limit'));
    workers[0]!.events.emit('exit', 1);
    await registry.whenEnded(a.jobId);
    await registry.whenEnded(b.jobId);
    for (const id of [a.jobId, b.jobId]) {
      expect(states(id).at(-1)).toBe('failed');
      expect(relayed(id).at(-1)).toMatchObject({
        type: 'error',
        code: 'ENGINE_CRASHED',
        message: expect.stringMatching(/engine worker stopped unexpectedly \(heap limit\).*Start it again/),
      });
    }
    expect(cleaned.sort()).toEqual(['/r', '/s']);
    expect((await history.list())[0]).toMatchObject({ state: 'failed', error: { code: 'ENGINE_CRASHED' } });
    // what the log had survives, with the reason at its end
    const page = await logs.page(a.jobId, 0, 10);
    expect(page.lines[0]).toBe('adding [s] data/a.i (1 bytes)');
    expect(page.lines[1]).toMatch(/^abort: the engine worker stopped unexpectedly/);
    const next = registry.start({ kind: 'verify', repo: '/r' });
    expect(workers).toHaveLength(2);
    expect(workers[1]!.started).toEqual([next.jobId]);
  });

  it('starts a new worker when the idle one died', async () => {
    registry.warmUp();
    workers[0]!.events.emit('exit', 1);
    await tick();
    const a = registry.start({ kind: 'verify', repo: '/a' });
    expect(workers).toHaveLength(2);
    expect(workers[1]!.started).toEqual([a.jobId]);
  });

  it('refuses a second job writing a destination a running or queued job writes', async () => {
    const a = registry.start({ kind: 'apply', bundlePath: '/b.hg', dest: '/same' });
    expect(() => registry.start({ kind: 'clone', url: 'http://127.0.0.1:1/r', dest: '/same/' })).toThrow(
      /being written by another job/,
    );
    expect(registry.list()).toHaveLength(1);
    workers[0]!.say({ type: 'finished', jobId: a.jobId, ok: false, error: { code: 'IO', message: 'x' } });
    await registry.whenEnded(a.jobId);
    expect(() => registry.start({ kind: 'apply', bundlePath: '/b.hg', dest: '/same' })).not.toThrow();
  });

  it('reorders the queue, shows each queued job its place, and starts more when the limit rises', async () => {
    const a = registry.start({ kind: 'verify', repo: '/a' });
    const b = registry.start({ kind: 'verify', repo: '/b' });
    const c = registry.start({ kind: 'verify', repo: '/c' });
    const d = registry.start({ kind: 'verify', repo: '/d' });
    const e = registry.start({ kind: 'verify', repo: '/e' });
    const place = (id: string) => registry.list().find((j) => j.jobId === id)!.queuePosition;
    expect([c, d, e].map((j) => place(j.jobId))).toEqual([0, 1, 2]);
    registry.move(e.jobId, 0);
    expect([e, c, d].map((j) => place(j.jobId))).toEqual([0, 1, 2]);
    // the renderer hears the new places
    const lastPush = pushes.filter((p) => p.channel === 'job:state' && p.payload.jobId === c.jobId).at(-1);
    expect(lastPush?.payload).toMatchObject({ state: 'queued', queuePosition: 1 });
    registry.move(a.jobId, 0); // running: stays running
    await registry.cancel(c.jobId);
    expect(place(d.jobId)).toBe(1);
    workers[0]!.say({ type: 'finished', jobId: a.jobId, ok: true });
    await registry.whenEnded(a.jobId);
    expect(workers[0]!.started).toEqual([a.jobId, b.jobId, e.jobId]);
    expect(place(d.jobId)).toBe(0);
    registry.setMaxConcurrent(3);
    expect(workers[0]!.started).toEqual([a.jobId, b.jobId, e.jobId, d.jobId]);
    expect(place(d.jobId)).toBeUndefined();
  });

  it('cancels a queued job without starting it', async () => {
    registry.start({ kind: 'verify', repo: '/a' });
    registry.start({ kind: 'verify', repo: '/b' });
    const c = registry.start({ kind: 'verify', repo: '/c' });
    await registry.cancel(c.jobId);
    expect(states(c.jobId)).toEqual(['queued', 'cancelled']);
    expect(workers[0]!.started).not.toContain(c.jobId);
  });

  it('relays credential prompts to the renderer and answers for the right job', async () => {
    registry.start({ kind: 'verify', repo: '/a' });
    const { jobId } = registry.start({ kind: 'clone', url: 'https://example.org/r', dest: '/c' });
    workers[0]!.say({
      type: 'credentials',
      jobId,
      requestId: `${jobId}-c1`,
      url: 'https://example.org/r',
      realm: 'hg',
    });
    expect(pushes.at(-1)).toEqual({
      channel: 'credentials:request',
      payload: { requestId: `${jobId}-c1`, url: 'https://example.org/r', realm: 'hg' },
    });
    registry.answerCredentials(`${jobId}-c1`, { user: 'u', password: 'p' });
    registry.answerCredentials('unknown', null);
    expect(workers[0]!.received.filter((m) => m.type === 'credentials')).toEqual([
      { type: 'credentials', jobId, requestId: `${jobId}-c1`, answer: { user: 'u', password: 'p' } },
    ]);
    await tick();
  });

  it('answers with saved credentials first, forgets them when refused, then asks; "remember" saves an answer', async () => {
    const saved = new Map<string, { user: string; password: string }>([
      ['https://example.org', { user: 'kept', password: 'old' }],
    ]);
    const refused: string[] = [];
    const remembered: string[] = [];
    const reg = new JobRegistry({
      createWorker,
      history,
      logs,
      batchIntervalMs: 20,
      savedCredentials: {
        lookup: async (url) => saved.get(new URL(url).origin),
        remember: async (url, c) => (remembered.push(`${new URL(url).origin} ${c.user}`), true),
        refused: async (url) => void refused.push(new URL(url).origin),
      },
    });
    const seen: PushMessage[] = [];
    reg.onPush((m) => seen.push(m));
    const { jobId } = reg.start({ kind: 'clone', url: 'https://example.org/r', dest: '/c2' });
    const w = workers.at(-1)!;
    const answers = () => w.received.flatMap((m) => (m.type === 'credentials' ? [m.answer] : []));
    w.say({ type: 'credentials', jobId, requestId: 'r1', url: 'https://example.org/r', realm: 'hg' });
    await expect.poll(answers).toEqual([{ user: 'kept', password: 'old' }]);
    expect(seen.some((m) => m.channel === 'credentials:request')).toBe(false);
    // asked again: the saved ones were refused
    w.say({ type: 'credentials', jobId, requestId: 'r2', url: 'https://example.org/r', realm: 'hg' });
    await expect.poll(() => refused).toEqual(['https://example.org']);
    expect(
      seen
        .filter((m) => m.channel === 'credentials:request')
        .map((m) => (m.payload as { requestId: string }).requestId),
    ).toEqual(['r2']);
    reg.answerCredentials('r2', { user: 'new', password: 'pw' }, true);
    expect(answers()).toEqual([
      { user: 'kept', password: 'old' },
      { user: 'new', password: 'pw' },
    ]);
    await expect.poll(() => remembered).toEqual(['https://example.org new']);
    await reg.dispose();
  });
});
