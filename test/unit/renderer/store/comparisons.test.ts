import { describe, expect, it } from 'vitest';
import { createSluiceStore } from '../../../../src/renderer/src/store/index';
import { FakeHost, ManualScheduler, MemorySavedState } from '../../../support/renderer/fake-host';
import { doneEv, errorEv, progressEv, startEv } from '../../../support/renderer/events';
import {
  comparisonToCsv,
  comparisonToJson,
  latencyApplierFor,
  planComparison,
} from '../../../../src/renderer/src/store/comparison-plan';
import type { JobRequest } from '../../../../src/shared/jobs';

const tick = () => new Promise((r) => setTimeout(r, 0));

describe('comparison plan', () => {
  it('crosses closer settings with chunk sizes and generates each bundle once', () => {
    const configs = planComparison(
      { kind: 'repo', repo: '/src/repo' },
      {
        closer: [{ background: 'off' }, { background: 'on', threads: 4 }],
        chunkSizes: [4096, 32768],
        streams: [],
        latenciesUs: [],
        repeat: 1,
      },
      '/out',
    );
    expect(configs.map((c) => c.label)).toEqual([
      '4 KiB chunks · closer off',
      '4 KiB chunks · closer on, 4 threads',
      '32 KiB chunks · closer off',
      '32 KiB chunks · closer on, 4 threads',
    ]);
    expect(configs[0]!.prepare).toEqual({
      kind: 'bundle',
      repo: '/src/repo',
      out: '/out/stream-v2-4k.hg',
      type: 'v2',
      compression: 'none',
      chunkSize: 4096,
    });
    expect(configs[1]!.prepare?.out).toBe('/out/stream-v2-4k.hg');
    expect(configs[1]!.request).toEqual({
      kind: 'apply',
      bundlePath: '/out/stream-v2-4k.hg',
      dest: '/out/02-4-kib-chunks-closer-on-4-threads',
      closer: { backgroundClose: 'on', closeThreads: 4, minFileCount: 1 },
      verify: false,
    });
    expect(new Set(configs.map((c) => (c.request as { dest: string }).dest)).size).toBe(4);
  });

  it('a simulated slow close: the engine delays each close, closer off and on side by side under it, then without', () => {
    const configs = planComparison(
      { kind: 'bundle', bundlePath: '/b.hg' },
      {
        closer: [{ background: 'off' }, { background: 'on', threads: 48 }],
        chunkSizes: [],
        streams: [],
        latenciesUs: [],
        simulateCloseMs: [0, 2],
        repeat: 1,
      },
      '/out',
    );
    expect(configs.map((c) => c.label)).toEqual([
      'closer off · simulated slow close() 2 ms',
      'closer on, 48 threads · simulated slow close() 2 ms',
      'closer off · real close()',
      'closer on, 48 threads · real close()',
    ]);
    expect(
      configs.map((c) => (c.request as { closer?: { simulateCloseMs?: number } }).closer?.simulateCloseMs),
    ).toEqual([2, 2, undefined, undefined]);
    expect(configs.map((c) => c.simulatedCloseMs)).toEqual([2, 2, 0, 0]);
  });

  it('stream versions only for URLs; latency only when the host offers it; repeats numbered', () => {
    const choices = {
      closer: [{ background: 'off' as const }],
      chunkSizes: [4096],
      streams: ['v1' as const, 'v2' as const],
      latenciesUs: [0, 2000],
      repeat: 2,
    };
    const url = planComparison({ kind: 'url', url: 'http://h/r' }, choices, '/o');
    expect(url.map((c) => c.label)).toEqual([
      'stream v1 · closer off #1',
      'stream v1 · closer off #2',
      'stream v2 · closer off #1',
      'stream v2 · closer off #2',
    ]);
    expect(
      url.every((c) => c.request.kind === 'clone' && c.request.cloneBundles === false && !c.prepare),
    ).toBe(true);
    const info = {
      version: '0',
      platform: 'linux',
      host: 'web' as const,
      defaultCloneDir: '/home/u',
      emulatedCloseLatency: { prefix: '/slow', closeUs: 2000 },
    };
    expect(latencyApplierFor({ ...info, emulatedCloseLatency: undefined } as never)).toBeUndefined();
    const withLatency = planComparison(
      { kind: 'bundle', bundlePath: '/b.hg' },
      { ...choices, repeat: 1 },
      '/o',
      'linux',
      latencyApplierFor(info),
    );
    expect(withLatency.map((c) => c.label)).toEqual([
      'closer off · no emulated latency',
      'closer off · emulated close latency 2 ms',
    ]);
    // slowclose.so delays close() under its prefix: the emulated configuration writes there
    expect((withLatency[0]!.request as { dest: string }).dest).toBe('/o/01-closer-off-no-emulated-latency');
    expect((withLatency[1]!.request as { dest: string }).dest).toMatch(
      /^\/slow\/sluice-[a-z0-9]+-02-closer-off-emulated-close-latency-2-ms$/,
    );
    expect(withLatency[1]!.emulatedLatencyUs).toBe(2000);
  });

  it('exports CSV with quoting and JSON with the requests', () => {
    const run = {
      id: 'x',
      title: 'apply /b.hg',
      source: { kind: 'bundle' as const, bundlePath: '/b.hg' },
      createdAt: 0,
      outDir: '/o',
      configs: planComparison(
        { kind: 'bundle', bundlePath: '/b.hg' },
        { closer: [{ background: 'off' }], chunkSizes: [], streams: [], latenciesUs: [], repeat: 1 },
        '/o',
      ),
      results: [
        {
          configId: 'c1',
          label: 'closer off, "quoted"',
          state: 'done' as const,
          wallMs: 1500,
          userCpuMs: 700,
          systemCpuMs: 200,
          bytes: 3_000_000,
          files: 10,
          mibPerSec: 2,
        },
      ],
      state: 'done' as const,
    };
    const csv = comparisonToCsv(run).split('\n');
    expect(csv[0]).toBe(
      'label,state,wall_ms,user_cpu_ms,system_cpu_ms,bytes,files,mib_per_s,background_close,close_threads,writer_wait_ms,peak_rss_bytes,error',
    );
    expect(csv[1]).toBe('"closer off, ""quoted""",done,1500,700,200,3000000,10,2,,,,,');
    const json = JSON.parse(comparisonToJson(run));
    expect(json.results[0].request.kind).toBe('apply');
    expect(json.createdAt).toBe('1970-01-01T00:00:00.000Z');
  });
});

describe('comparisons slice', () => {
  function setup() {
    const host = new FakeHost();
    const started: { jobId: string; request: JobRequest }[] = [];
    host.handlers['job:start'] = (request) => {
      const jobId = `j${started.length + 1}`;
      started.push({ jobId, request });
      return { jobId };
    };
    host.handlers['job:cancel'] = () => undefined;
    const frames = new ManualScheduler();
    const saved = new MemorySavedState();
    const store = createSluiceStore({ api: host, schedule: frames.schedule, now: () => 0, saved });
    return { host, frames, store, started, saved };
  }

  it('runs configurations one after another and keeps each done event as a result', async () => {
    const { host, store, frames, started, saved } = setup();
    const id = await store.getState().runComparison(
      { kind: 'repo', repo: '/src/repo' },
      {
        closer: [{ background: 'off' }, { background: 'on', threads: 2 }],
        chunkSizes: [4096],
        streams: [],
        latenciesUs: [],
        repeat: 1,
      },
      '/out',
    );
    await tick();
    // the bundle job first, alone
    expect(started.map((s) => s.request.kind)).toEqual(['bundle']);
    store
      .getState()
      .ingestEvents('j1', [startEv('j1', 1, { kind: 'bundle' }), doneEv('j1', { wallMs: 100 })]);
    frames.runFrame();
    await tick();
    expect(started.map((s) => s.request.kind)).toEqual(['bundle', 'apply']);
    store.getState().ingestEvents('j2', [
      // progressEv's time is 1_000_000 + elapsedMs: the job started at its clock's zero
      startEv('j2', 1_000_000, { kind: 'apply' }),
      progressEv('j2', 500, 500_000, 5),
      doneEv('j2', { wallMs: 1000, userCpuMs: 400, systemCpuMs: 100, bytes: 2_000_000 }),
    ]);
    frames.runFrame();
    await tick();
    // the bundle is reused, not generated again
    expect(started.map((s) => s.request.kind)).toEqual(['bundle', 'apply', 'apply']);
    store
      .getState()
      .ingestEvents('j3', [
        startEv('j3', 1, { kind: 'apply' }),
        doneEv('j3', { wallMs: 500, bytes: 2_000_000 }),
      ]);
    frames.runFrame();
    await tick();
    const run = store.getState().comparisons.find((r) => r.id === id)!;
    expect(run.state).toBe('done');
    expect(run.results.map((r) => [r.state, r.wallMs, r.mibPerSec])).toEqual([
      ['done', 1000, 2_000_000 / 1048576],
      ['done', 500, 4_000_000 / 1048576],
    ]);
    expect(run.results[0]!.userCpuMs).toBe(400);
    expect(run.results[0]!.samples).toEqual([[500, 1_000_000]]);
    // finished runs are saved by the host (its validator took them) and come back after a restart
    expect(saved.initial.comparisons?.[0]?.id).toBe(id);
    const again = createSluiceStore({
      api: host,
      schedule: frames.schedule,
      now: () => 0,
      saved: saved.restart(),
    });
    expect(again.getState().comparisons[0]).toMatchObject({ id, state: 'done' });
  });

  it('a failed configuration does not stop the others; cancel stops the run', async () => {
    const { store, frames, started, host } = setup();
    const id = await store.getState().runComparison(
      { kind: 'bundle', bundlePath: '/b.hg' },
      {
        closer: [{ background: 'off' }, { background: 'on', threads: 1 }, { background: 'on', threads: 8 }],
        chunkSizes: [],
        streams: [],
        latenciesUs: [],
        repeat: 1,
      },
      '/out',
    );
    await tick();
    store
      .getState()
      .ingestEvents('j1', [startEv('j1', 1, { kind: 'apply' }), errorEv('j1', 'IO', 'disk full')]);
    frames.runFrame();
    await tick();
    expect(started).toHaveLength(2);
    await store.getState().cancelComparison(id);
    expect(host.callsTo('job:cancel')).toEqual([['j2']]);
    store.getState().ingestEvents('j2', [errorEv('j2', 'CANCELLED')]);
    frames.runFrame();
    await tick();
    await tick();
    expect(started).toHaveLength(2);
    const run = store.getState().comparisons.find((r) => r.id === id)!;
    expect(run.state).toBe('cancelled');
    expect(run.results.map((r) => r.state)).toEqual(['failed', 'cancelled', 'cancelled']);
    expect(run.results[0]!.error).toEqual({ code: 'IO', message: 'disk full' });
  });
});
