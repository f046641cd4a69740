import { describe, expect, it } from 'vitest';
import { createSluiceStore } from '../../../../src/renderer/src/store/index';
import { FakeHost, ManualScheduler } from '../../../support/renderer/fake-host';
import type { HistoryRecord } from '../../../../src/shared/ipc';
import { doneEv, startEv } from '../../../support/renderer/events';

const rec = (jobId: string, endedAt: number): HistoryRecord => ({
  jobId,
  request: { kind: 'apply', bundlePath: '/b.hg', dest: `/d/${jobId}` },
  state: 'done',
  startedAt: endedAt - 1000,
  endedAt,
  done: doneEv(jobId, { time: endedAt }),
});

describe('history slice', () => {
  it('loads records newest first and clears them through the host', async () => {
    const host = new FakeHost({
      'history:list': () => [rec('old', 1000), rec('new', 5000), rec('mid', 3000)],
      'history:clear': () => undefined,
    });
    const store = createSluiceStore({ api: host, schedule: new ManualScheduler().schedule, now: () => 0 });
    expect(store.getState().historyStatus).toBe('idle');
    await store.getState().loadHistory();
    expect(store.getState().history.map((r) => r.jobId)).toEqual(['new', 'mid', 'old']);
    expect(store.getState().historyStatus).toBe('ready');
    expect(store.getState().historyStale).toBe(false);
    await store.getState().clearHistory();
    expect(store.getState().history).toEqual([]);
    expect(host.callsTo('history:clear')).toHaveLength(1);
  });

  it('concurrent loads share one request; a failure is kept as an error state', async () => {
    let calls = 0;
    const host = new FakeHost({
      'history:list': () => {
        calls++;
        throw Object.assign(new Error('disk gone'), { code: 'IO' });
      },
    });
    const store = createSluiceStore({ api: host, schedule: new ManualScheduler().schedule, now: () => 0 });
    await Promise.all([store.getState().loadHistory(), store.getState().loadHistory()]);
    expect(calls).toBe(1);
    expect(store.getState().historyStatus).toBe('error');
    expect(store.getState().historyError).toEqual({ code: 'IO', message: 'disk gone' });
  });

  it('becomes stale when a job ends', async () => {
    const frames = new ManualScheduler();
    const store = createSluiceStore({
      api: new FakeHost({ 'history:list': () => [] }),
      schedule: frames.schedule,
      now: () => 0,
    });
    await store.getState().loadHistory();
    store.getState().ingestEvents('a', [startEv('a', 1)]);
    frames.runFrame();
    expect(store.getState().historyStale).toBe(false);
    store.getState().ingestEvents('a', [doneEv('a')]);
    frames.runFrame();
    expect(store.getState().historyStale).toBe(true);
  });
});
