import { describe, expect, it } from 'vitest';
import { createSluiceStore } from '../../../../src/renderer/src/store/index';
import { FakeHost, ManualScheduler } from '../../../support/renderer/fake-host';
import { doneEv, errorEv, progressEv, startEv } from '../../../support/renderer/events';
import { pushSample, SAMPLE_CAP } from '../../../../src/renderer/src/store/transfers';
import type { JobRequest } from '../../../../src/shared/jobs';

function setup() {
  const host = new FakeHost();
  let jobSeq = 0;
  host.handlers['job:start'] = () => ({ jobId: `job-${++jobSeq}` });
  host.handlers['job:cancel'] = () => undefined;
  const frames = new ManualScheduler();
  let now = 10_000;
  const store = createSluiceStore({ api: host, schedule: frames.schedule, now: () => now });
  return { host, frames, store, advance: (ms: number) => (now += ms) };
}

const cloneRequest: JobRequest = { kind: 'clone', url: 'http://127.0.0.1:8000/repo', dest: '/tmp/dest' };

describe('transfers slice: event reduction', () => {
  it('applies many batches with one state update per frame', () => {
    const { store, frames } = setup();
    let updates = 0;
    store.subscribe(() => updates++);
    store.getState().ingestEvents('a', [startEv('a', 1_000_000)]);
    for (let i = 1; i <= 20; i++)
      store.getState().ingestEvents('a', [progressEv('a', i * 50, i * 10_000, Math.floor(i / 4))]);
    store.getState().ingestEvents('b', [startEv('b', 1_000_000, { kind: 'apply', source: '/x.hg' })]);
    expect(updates).toBe(0);
    expect(frames.waiting).toBe(1);
    frames.runFrame();
    expect(updates).toBe(1);
    const a = store.getState().jobs['a']!;
    expect(a.state).toBe('running');
    expect(a.bytes).toBe(200_000);
    expect(a.files).toBe(5);
    expect(a.totalBytes).toBe(1_000_000);
    expect(a.samples).toHaveLength(20);
    expect(store.getState().jobOrder).toEqual(['b', 'a']);
    // nothing queued: no frame requested, no update
    frames.runFrame();
    expect(updates).toBe(1);
  });

  it('computes files/sec over a ~2 s window of progress', () => {
    const { store, frames } = setup();
    const evs = [startEv('a', 1_000_000)];
    for (let t = 0; t <= 4000; t += 100) evs.push(progressEv('a', t, t * 100, t / 10) as never);
    store.getState().ingestEvents('a', evs);
    frames.runFrame();
    // 10 files per 100 ms
    expect(store.getState().jobs['a']!.filesPerSec).toBeCloseTo(100, 5);
  });

  it("keeps the debug log's counts the host pushes, not its lines", () => {
    const { store, frames } = setup();
    store
      .getState()
      .ingestEvents('a', [startEv('a', 1_000_000, { files: 3, bytes: 1500 })], { total: 2, dropped: 0 });
    store.getState().ingestEvents('a', [progressEv('a', 100, 1000, 2)], { total: 300_000, dropped: 5 });
    frames.runFrame();
    expect(store.getState().jobs['a']).toMatchObject({ logLines: 300_000, logDropped: 5 });
    // a batch without counts keeps the last ones
    store.getState().ingestEvents('a', [progressEv('a', 200, 1500, 3)]);
    frames.runFrame();
    expect(store.getState().jobs['a']).toMatchObject({ logLines: 300_000, logDropped: 5, files: 3 });
  });

  it('fetches log pages and exports through the host', async () => {
    const { store, host } = setup();
    const calls: unknown[][] = [];
    host.handlers['job:log'] = (...args: unknown[]) => (
      calls.push(args),
      { from: 0, lines: ['x'], total: 1, dropped: 0 }
    );
    host.handlers['job:exportLog'] = (...args: unknown[]) => (calls.push(args), '/exports/a.log');
    expect(await store.getState().fetchLogPage('a', 0, 200)).toMatchObject({ lines: ['x'] });
    await store.getState().fetchLogPage('a', 200, 200, 'data/');
    expect(await store.getState().exportJobLog('a', 'a.log', '# h')).toBe('/exports/a.log');
    expect(calls).toEqual([
      ['a', 0, 200],
      ['a', 200, 200, 'data/'],
      ['a', 'a.log', '# h'],
    ]);
    expect(store.getState().notices.at(-1)).toMatchObject({ tone: 'success', detail: '/exports/a.log' });
  });

  it('marks done with the done event timings, and failed/cancelled from error codes', () => {
    const { store, frames } = setup();
    const s = store.getState();
    s.ingestEvents('a', [startEv('a', 1_000_000), progressEv('a', 1000, 500_000, 5), doneEv('a')]);
    s.ingestEvents('b', [startEv('b', 1_000_000), errorEv('b', 'NETWORK', 'connection refused')]);
    s.ingestEvents('c', [startEv('c', 1_000_000), errorEv('c', 'CANCELLED')]);
    frames.runFrame();
    const { jobs } = store.getState();
    expect(jobs['a']).toMatchObject({ state: 'done', bytes: 1_000_000, elapsedMs: 2000, dest: '/tmp/dest' });
    expect(jobs['a']!.done?.userCpuMs).toBe(800);
    expect(jobs['b']).toMatchObject({
      state: 'failed',
      error: { code: 'NETWORK', message: 'connection refused' },
    });
    expect(jobs['c']!.state).toBe('cancelled');
    expect(store.getState().historyStale).toBe(true);
  });

  it('a late job:state never moves a finished job back to running', () => {
    const { store, frames } = setup();
    store.getState().ingestEvents('a', [startEv('a', 1_000_000), doneEv('a')]);
    store
      .getState()
      .ingestJobState({ jobId: 'a', request: cloneRequest, state: 'running', startedAt: 1_000_000 });
    frames.runFrame();
    expect(store.getState().jobs['a']!.state).toBe('done');
    expect(store.getState().jobs['a']!.request).toEqual(cloneRequest);
  });

  it('downsamples the throughput samples but keeps their time span', () => {
    let samples: [number, number][] = [];
    for (let i = 0; i < 1000; i++) samples = pushSample(samples, [i * 100, i]);
    expect(samples.length).toBeLessThanOrEqual(SAMPLE_CAP);
    expect(samples.length).toBeGreaterThan(SAMPLE_CAP / 2);
    expect(samples[samples.length - 1]![0]).toBe(99_900);
    for (let i = 1; i < samples.length; i++) expect(samples[i]![0]).toBeGreaterThan(samples[i - 1]![0]);
  });
});

describe('transfers slice: stalled detection', () => {
  it('flags a running job without progress for stallSeconds and clears it when bytes move', () => {
    const { store, frames, advance } = setup();
    store.getState().setStallSeconds(10);
    store.getState().ingestEvents('a', [startEv('a', 1_000_000), progressEv('a', 100, 1000, 1)]);
    frames.runFrame();
    advance(5_000);
    // a progress event that moves nothing is not progress
    store.getState().ingestEvents('a', [progressEv('a', 5100, 1000, 1)]);
    frames.runFrame();
    store.getState().checkStalled();
    expect(store.getState().jobs['a']!.stalled).toBe(false);
    advance(5_000);
    store.getState().checkStalled();
    expect(store.getState().jobs['a']!.stalled).toBe(true);
    store.getState().ingestEvents('a', [progressEv('a', 11_000, 2000, 1)]);
    frames.runFrame();
    expect(store.getState().jobs['a']!.stalled).toBe(false);
  });

  it('never flags finished jobs, and does not update the store when nothing changes', () => {
    const { store, frames, advance } = setup();
    store.getState().ingestEvents('a', [startEv('a', 1_000_000), doneEv('a')]);
    frames.runFrame();
    let updates = 0;
    store.subscribe(() => updates++);
    advance(3_600_000);
    store.getState().checkStalled();
    expect(store.getState().jobs['a']!.stalled).toBe(false);
    expect(updates).toBe(0);
  });
});

describe('transfers slice: actions', () => {
  it('starts a job, keeps its request, and retry re-submits the same request', async () => {
    const { store, host, frames } = setup();
    const id = await store.getState().startJob(cloneRequest, 'my clone');
    expect(id).toBe('job-1');
    expect(store.getState().jobs[id]).toMatchObject({
      kind: 'clone',
      source: cloneRequest.url,
      dest: '/tmp/dest',
      label: 'my clone',
      state: 'queued',
    });
    store.getState().ingestEvents(id, [startEv(id, 1_000_000), errorEv(id, 'NETWORK')]);
    frames.runFrame();
    const retried = await store.getState().retryJob(id);
    expect(retried).toBe('job-2');
    expect(host.callsTo('job:start')).toEqual([
      [cloneRequest, 'my clone'],
      [cloneRequest, 'my clone'],
    ]);
  });

  it('events that arrive before job:start resolves are kept and merged', async () => {
    const { store, host, frames } = setup();
    host.handlers['job:start'] = async () => {
      store.getState().ingestEvents('early', [startEv('early', 1_000_000), progressEv('early', 100, 10, 0)]);
      frames.runFrame();
      return { jobId: 'early' };
    };
    await store.getState().startJob(cloneRequest, 'x');
    const job = store.getState().jobs['early']!;
    expect(job.request).toEqual(cloneRequest);
    expect(job.bytes).toBe(10);
    expect(store.getState().jobOrder).toEqual(['early']);
  });

  it('cancel asks the host and waiters resolve when the job ends', async () => {
    const { store, host, frames } = setup();
    const id = await store.getState().startJob(cloneRequest);
    // no label: the argument is left out rather than sent as undefined (null over JSON)
    expect(host.callsTo('job:start')[0]).toEqual([cloneRequest]);
    const waiting = store.getState().waitForJob(id);
    await store.getState().cancelJob(id);
    expect(host.callsTo('job:cancel')).toEqual([[id]]);
    expect(store.getState().jobs[id]!.cancelRequested).toBe(true);
    store.getState().ingestEvents(id, [errorEv(id, 'CANCELLED')]);
    frames.runFrame();
    await expect(waiting).resolves.toMatchObject({ jobId: id, state: 'cancelled' });
  });

  it('restart of a stalled job cancels it, waits for its end, then re-submits', async () => {
    const { store, host, frames } = setup();
    const id = await store.getState().startJob(cloneRequest, 'slow');
    store.getState().ingestEvents(id, [startEv(id, 1)]);
    frames.runFrame();
    const restarted = store.getState().restartJob(id);
    await new Promise((r) => setTimeout(r, 0));
    expect(host.callsTo('job:cancel')).toEqual([[id]]);
    expect(host.callsTo('job:start')).toHaveLength(1);
    store.getState().ingestEvents(id, [errorEv(id, 'CANCELLED')]);
    frames.runFrame();
    await expect(restarted).resolves.toBe('job-2');
    expect(host.callsTo('job:start')[1]).toEqual([cloneRequest, 'slow']);
  });

  it('verify starts a verify job for the repository', async () => {
    const { store, host } = setup();
    const id = await store.getState().verifyRepository('/tmp/dest');
    expect(host.callsTo('job:start')).toEqual([[{ kind: 'verify', repo: '/tmp/dest' }, 'Verify dest']]);
    expect(store.getState().jobs[id!]).toMatchObject({ kind: 'verify', source: '/tmp/dest' });
  });

  it('jobs loaded after a reload take their numbers from the history record', async () => {
    const { store, host, frames } = setup();
    host.handlers['job:list'] = () => [
      { jobId: 'old', request: cloneRequest, state: 'done', startedAt: 1000, endedAt: 3000 },
      { jobId: 'live', request: cloneRequest, state: 'running', startedAt: 2000 },
    ];
    host.handlers['history:list'] = () => [
      {
        jobId: 'old',
        request: cloneRequest,
        label: 'first',
        state: 'done',
        startedAt: 1000,
        endedAt: 3000,
        done: doneEv('old', { bytes: 4096, files: 3, wallMs: 2000 }),
        samples: [
          [500, 1000],
          [1000, 3000],
        ],
      },
    ];
    await store.getState().loadJobs();
    frames.runFrame();
    const old = store.getState().jobs['old']!;
    expect(old).toMatchObject({
      state: 'done',
      label: 'first',
      bytes: 4096,
      totalBytes: 4096,
      files: 3,
      elapsedMs: 2000,
    });
    expect(old.samples).toHaveLength(2);
    expect(store.getState().jobs['live']).toMatchObject({ state: 'running', bytes: 0 });
  });

  it('a cancelled job loaded after a reload shows how far it got (the history keeps its last progress)', async () => {
    const { store, host, frames } = setup();
    host.handlers['job:list'] = () => [
      { jobId: 'c', request: cloneRequest, state: 'cancelled', startedAt: 1000, endedAt: 3000 },
    ];
    host.handlers['history:list'] = () => [
      {
        jobId: 'c',
        request: cloneRequest,
        state: 'cancelled',
        startedAt: 1000,
        endedAt: 3000,
        error: { code: 'CANCELLED', message: 'cancelled' },
        progress: { bytes: 70_000_000, files: 2329, totalBytes: 90_000_000, totalFiles: 3005 },
      },
    ];
    await store.getState().loadJobs();
    frames.runFrame();
    expect(store.getState().jobs['c']).toMatchObject({
      state: 'cancelled',
      bytes: 70_000_000,
      files: 2329,
      totalBytes: 90_000_000,
      totalFiles: 3005,
    });
  });

  it('a transfer of unknown size (a pull) has no ETA while it runs', () => {
    const { store, frames } = setup();
    store
      .getState()
      .ingestEvents('p', [
        startEv('p', 1_000_000, { kind: 'pull', bytes: 0, files: 0 }),
        progressEv('p', 500, 10_000, 3, { totalBytes: 0, totalFiles: 0, etaMs: 0 }),
      ]);
    frames.runFrame();
    expect(store.getState().jobs['p']!.etaMs).toBeUndefined();
  });

  it('samples are timed from the job start, across phases whose elapsedMs restarts (clone, then checkout)', () => {
    const { store, frames } = setup();
    store
      .getState()
      .ingestEvents('k', [
        startEv('k', 1_000_000),
        progressEv('k', 1000, 500_000, 5),
        progressEv('k', 2000, 1_000_000, 10),
        { ...progressEv('k', 100, 0, 1, { totalBytes: 0, totalFiles: 10 }), time: 1_002_100, elapsedMs: 100 },
      ]);
    frames.runFrame();
    expect(store.getState().jobs['k']!.samples.map(([t]) => t)).toEqual([1000, 2000, 2100]);
  });

  it('dismiss and clear finished remove only terminal jobs', async () => {
    const { store, frames } = setup();
    store.getState().ingestEvents('a', [startEv('a', 1), doneEv('a')]);
    store.getState().ingestEvents('b', [startEv('b', 1)]);
    frames.runFrame();
    store.getState().dismissJob('b');
    expect(store.getState().jobOrder).toEqual(['b', 'a']);
    store.getState().clearFinished();
    expect(store.getState().jobOrder).toEqual(['b']);
  });
});
