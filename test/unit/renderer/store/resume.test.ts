import { describe, expect, it } from 'vitest';
import { createSluiceStore } from '../../../../src/renderer/src/store/index';
import { canResume } from '../../../../src/renderer/src/store/downloads';
import {
  retrySecondsLeft,
  shouldPromptBeforeUnload,
  unresumedInterruptions,
} from '../../../../src/renderer/src/store/transfers';
import type { HistoryRecord } from '../../../../src/shared/ipc';
import type { JobRequest, PartialDownloadInfo } from '../../../../src/shared/jobs';
import { FakeHost, ManualScheduler } from '../../../support/renderer/fake-host';
import { doneEv, errorEv, progressEv, retryEv, startEv } from '../../../support/renderer/events';

const cloneRequest: JobRequest = { kind: 'clone', url: 'http://127.0.0.1:8000/repo', dest: '/tmp/dest' };

function partial(dest: string): PartialDownloadInfo {
  return {
    key: '0123456789abcdef0123456789abcdef',
    url: 'http://127.0.0.1:8000/bundle.hg',
    dest,
    bytes: 400_000,
    total: 1_000_000,
    created: 1,
    updated: 2,
    inUse: false,
  };
}

function setup(partials: PartialDownloadInfo[] = [], history: HistoryRecord[] = []) {
  const host = new FakeHost();
  let jobSeq = 0;
  host.handlers['job:start'] = () => ({ jobId: `job-${++jobSeq}` });
  host.handlers['job:list'] = () => [];
  host.handlers['history:list'] = () => history;
  host.handlers['downloads:list'] = () => partials;
  const frames = new ManualScheduler();
  let now = 10_000;
  const store = createSluiceStore({ api: host, schedule: frames.schedule, now: () => now });
  return { host, frames, store, advance: (ms: number) => (now += ms) };
}

const settle = () => new Promise((r) => setTimeout(r, 0));

describe('retry countdown', () => {
  it('counts down from the event time + waitMs and clears on the next progress', () => {
    const { store, frames } = setup();
    store.getState().ingestEvents('a', [startEv('a', 1_000_000), progressEv('a', 100, 400_000, 0)]);
    store
      .getState()
      .ingestEvents('a', [retryEv('a', 1_000_500, { attempt: 2, maxAttempts: 5, waitMs: 4000 })]);
    frames.runFrame();
    const retry = store.getState().jobs['a']!.retry!;
    expect(retry).toMatchObject({ attempt: 2, maxAttempts: 5, until: 1_004_500, reason: 'socket hang up' });
    expect(retry).toMatchObject({ bytes: 400_000, totalBytes: 1_000_000 });
    expect(retrySecondsLeft(retry, 1_000_500)).toBe(4);
    expect(retrySecondsLeft(retry, 1_001_600)).toBe(3);
    expect(retrySecondsLeft(retry, 1_009_000)).toBe(0);
    expect(store.getState().jobs['a']!.state).toBe('running');

    store.getState().ingestEvents('a', [progressEv('a', 5000, 450_000, 0)]);
    frames.runFrame();
    expect(store.getState().jobs['a']!.retry).toBeUndefined();
  });

  it('is not a stall while it waits, and the end clears it', () => {
    const { store, frames, advance } = setup();
    store.setState({ stallSeconds: 3 });
    store.getState().ingestEvents('a', [startEv('a', 1_000_000), retryEv('a', 1_000_100, { waitMs: 8000 })]);
    frames.runFrame();
    advance(7000);
    store.getState().checkStalled();
    expect(store.getState().jobs['a']!.stalled).toBe(false);
    advance(5000);
    store.getState().checkStalled();
    expect(store.getState().jobs['a']!.stalled).toBe(true);

    store.getState().ingestEvents('a', [errorEv('a', 'NETWORK', 'gave up after 5 attempts')]);
    frames.runFrame();
    expect(store.getState().jobs['a']).toMatchObject({ state: 'failed', retry: undefined });
  });

  it('a done event clears the wait too', () => {
    const { store, frames } = setup();
    store.getState().ingestEvents('a', [startEv('a', 1_000_000), retryEv('a', 1_000_100), doneEv('a')]);
    frames.runFrame();
    expect(store.getState().jobs['a']).toMatchObject({ state: 'done', retry: undefined });
  });
});

describe('resume offering', () => {
  it('offers Resume on a failed clone once the host lists its partial download', async () => {
    const { store, frames, host } = setup([partial('/tmp/dest')]);
    const jobId = await store.getState().startJob(cloneRequest);
    expect(canResume(store.getState().jobs[jobId]!, store.getState().partials)).toBe(false);
    store.getState().ingestEvents(jobId, [startEv(jobId, 1_000_000), errorEv(jobId, 'NETWORK')]);
    frames.runFrame();
    await settle();
    expect(host.callsTo('downloads:list')).toHaveLength(1);
    const failed = store.getState().jobs[jobId]!;
    expect(canResume(failed, store.getState().partials)).toBe(true);
    // another destination's partial does not make it resumable
    expect(canResume(failed, [partial('/tmp/other')])).toBe(false);
    // a running or finished job never offers it
    expect(canResume({ ...failed, state: 'running' }, store.getState().partials)).toBe(false);
    expect(canResume({ ...failed, state: 'done' }, store.getState().partials)).toBe(false);
  });

  it('Resume runs the same request again and drops the stopped row', async () => {
    const { store, frames, host } = setup([partial('/tmp/dest')]);
    const first = await store.getState().startJob(cloneRequest, 'repo');
    store.getState().ingestEvents(first, [startEv(first, 1_000_000), errorEv(first, 'CANCELLED')]);
    frames.runFrame();
    const second = await store.getState().resumeJob(first);
    expect(second).toBe('job-2');
    expect(host.callsTo('job:start')[1]).toEqual([cloneRequest, 'repo']);
    expect(store.getState().jobs[first]).toBeUndefined();
    expect(store.getState().jobOrder).toEqual(['job-2']);
  });

  it('lists the jobs the app quit under with Resume, unless a later job wrote their destination', async () => {
    const record = (jobId: string, dest: string, state: HistoryRecord['state']): HistoryRecord => ({
      jobId,
      request: { ...cloneRequest, dest },
      state,
      startedAt: 1,
      endedAt: 1,
      progress: { bytes: 300, files: 0, totalBytes: 1000, totalFiles: 0 },
    });
    // newest first, as history:list
    const history = [
      record('later', '/tmp/b', 'done'),
      record('quit-a', '/tmp/a', 'interrupted'),
      record('quit-b', '/tmp/b', 'interrupted'),
    ];
    expect(unresumedInterruptions(history).map((r) => r.jobId)).toEqual(['quit-a']);

    const { store } = setup([], history);
    await store.getState().loadJobs();
    const job = store.getState().jobs['quit-a']!;
    expect(job).toMatchObject({ state: 'interrupted', kind: 'clone', dest: '/tmp/a', bytes: 300 });
    expect(store.getState().jobs['quit-b']).toBeUndefined();
    // no partial needed: the request runs again, and continues from one if the engine kept it
    expect(canResume(job, [])).toBe(true);
  });
});

describe('closing the web page mid-transfer', () => {
  it('prompts only on the web host, only while a transfer (not a verify) runs', () => {
    const { store, frames } = setup();
    const web = { version: '1', platform: 'linux', host: 'web' as const, defaultCloneDir: '/tmp' };
    store.setState({ appInfo: web });
    expect(shouldPromptBeforeUnload(store.getState())).toBe(false);
    store.getState().ingestEvents('v', [startEv('v', 1_000_000, { kind: 'verify' })]);
    frames.runFrame();
    expect(shouldPromptBeforeUnload(store.getState())).toBe(false);
    store.getState().ingestEvents('a', [startEv('a', 1_000_000)]);
    frames.runFrame();
    expect(shouldPromptBeforeUnload(store.getState())).toBe(true);
    expect(shouldPromptBeforeUnload({ ...store.getState(), appInfo: { ...web, host: 'electron' } })).toBe(
      false,
    );
    store.getState().ingestEvents('a', [doneEv('a')]);
    frames.runFrame();
    expect(shouldPromptBeforeUnload(store.getState())).toBe(false);
  });
});

describe('partial downloads in Settings', () => {
  it('removes one or all through the host and lists what is left', async () => {
    const { store, host } = setup();
    let listed = [partial('/tmp/a'), { ...partial('/tmp/b'), key: 'f'.repeat(32), inUse: true }];
    host.handlers['downloads:list'] = () => listed;
    host.handlers['downloads:remove'] = (key?: string) => {
      const before = listed.length;
      listed = listed.filter((p) => p.inUse || (key !== undefined && p.key !== key));
      return { removed: before - listed.length };
    };
    await store.getState().loadPartials();
    expect(store.getState().partials.map((p) => p.dest)).toEqual(['/tmp/a', '/tmp/b']);
    // one in use cannot go: the user is told
    await store.getState().removePartials('f'.repeat(32));
    expect(store.getState().notices.at(-1)).toMatchObject({ text: 'That download is in use' });
    await store.getState().removePartials();
    expect(host.callsTo('downloads:remove')).toEqual([['f'.repeat(32)], []]);
    expect(store.getState().partials.map((p) => p.dest)).toEqual(['/tmp/b']);
  });
});
