import { describe, expect, it } from 'vitest';
import { createSluiceStore } from '../../../../src/renderer/src/store/index';
import { FakeHost, ManualScheduler } from '../../../support/renderer/fake-host';
import type { BundleInfo } from '../../../../src/shared/jobs';
import { LEGACY_SETTINGS_KEY } from '../../../../src/renderer/src/store/settings';
import { loadSavedState } from '../../../../src/renderer/src/store/saved-state';
import { MemorySavedState, MemoryStorage } from '../../../support/renderer/fake-host';

const info = (o: Partial<BundleInfo> = {}): BundleInfo => ({
  path: '/b.hg',
  type: 'v2',
  compression: 'UN',
  requirements: ['generaldelta', 'revlogv1'],
  files: 12,
  bytes: 4096,
  unsupported: [],
  sizeOnDisk: 5000,
  ...o,
});

function setup(host = new FakeHost()) {
  return createSluiceStore({ api: host, schedule: new ManualScheduler().schedule, now: () => 0 });
}

describe('ui slice: opening bundles', () => {
  it('a valid bundle opens the apply dialog', async () => {
    const store = setup(new FakeHost({ 'bundle:inspect': (path) => info({ path }) }));
    const p = store.getState().openBundle('/x.hg');
    expect(store.getState().inspecting).toBe('/x.hg');
    await p;
    expect(store.getState().inspecting).toBeNull();
    expect(store.getState().dialog).toEqual({ type: 'apply', info: info({ path: '/x.hg' }) });
  });

  it('unsupported requirements are refused before anything starts', async () => {
    const host = new FakeHost({
      'bundle:inspect': () => info({ unsupported: ['exp-compression-zstd-foo'] }),
    });
    const store = setup(host);
    await store.getState().openBundle('/x.hg');
    const d = store.getState().dialog;
    expect(d?.type).toBe('refused');
    expect(d?.type === 'refused' && d.error.code).toBe('UNSUPPORTED_REQUIREMENTS');
    expect(d?.type === 'refused' && d.error.message).toContain('exp-compression-zstd-foo');
    expect(host.callsTo('job:start')).toHaveLength(0);
  });

  it('a dropped file goes through pathForFile, then inspect', async () => {
    const host = new FakeHost({ 'bundle:inspect': (path) => info({ path }) });
    const store = setup(host);
    await store.getState().openDroppedFile(new File([new Uint8Array([1, 2, 3])], 'dropped.hg'));
    expect(host.callsTo('bundle:inspect')).toEqual([['/uploads/dropped.hg']]);
    expect(store.getState().dialog).toMatchObject({ type: 'apply', info: { path: '/uploads/dropped.hg' } });
  });

  it('a file inspect rejects is refused with the error code', async () => {
    const store = setup(
      new FakeHost({
        'bundle:inspect': () =>
          Promise.reject(Object.assign(new Error('not a stream bundle'), { code: 'BAD_MAGIC' })),
      }),
    );
    await store.getState().openBundle('/notes.txt');
    expect(store.getState().dialog).toEqual({
      type: 'refused',
      path: '/notes.txt',
      error: { code: 'BAD_MAGIC', message: 'not a stream bundle' },
    });
  });
});

describe('ui slice: sample clone and credentials', () => {
  it('clones the sample into defaultCloneDir/<name>, avoiding destinations already used', async () => {
    const host = new FakeHost({
      'app:info': () => ({
        version: '0.1.0',
        platform: 'linux',
        host: 'web',
        defaultCloneDir: '/home/u/Sluice',
      }),
      'sample:get': () => ({ url: 'http://127.0.0.1:9/sample', name: 'sample', files: 40 }),
      'history:list': () => [
        {
          jobId: 'h',
          request: { kind: 'clone', url: 'u', dest: '/home/u/Sluice/sample' },
          state: 'done',
          startedAt: 0,
          endedAt: 1,
        },
      ],
      'job:start': () => ({ jobId: 'j1' }),
    });
    const store = setup(host);
    await store.getState().cloneSample();
    const [request, label] = host.callsTo('job:start')[0]!;
    expect(request).toMatchObject({
      kind: 'clone',
      url: 'http://127.0.0.1:9/sample',
      dest: '/home/u/Sluice/sample-2',
      stream: 'auto',
    });
    expect(label).toBe('Sample repository (sample)');
    expect(store.getState().jobs['j1']!.origin).toBe('sample');
  });

  it('credentials prompts queue and answers go back to the host', async () => {
    const host = new FakeHost({ 'credentials:answer': () => undefined });
    const store = setup(host);
    store.getState().promptCredentials({ requestId: 'r1', url: 'http://h', realm: 'hg' });
    store.getState().promptCredentials({ requestId: 'r1', url: 'http://h', realm: 'hg' });
    store.getState().promptCredentials({ requestId: 'r2', url: 'http://h2', realm: 'hg' });
    expect(store.getState().credentials.map((c) => c.requestId)).toEqual(['r1', 'r2']);
    await store.getState().answerCredentials('r1', { user: 'me', password: 'pw' });
    await store.getState().answerCredentials('r2', null);
    expect(host.callsTo('credentials:answer')).toEqual([
      ['r1', { user: 'me', password: 'pw' }],
      ['r2', null],
    ]);
    expect(store.getState().credentials).toEqual([]);
  });
});

describe('settings slice', () => {
  it("takes an older app's localStorage settings once, ignoring garbage, and saves them to the host", async () => {
    const legacy = new MemoryStorage();
    legacy.setItem(
      LEGACY_SETTINGS_KEY,
      JSON.stringify({ theme: 'neon', stallSeconds: 1e9, defaults: { closeThreads: 6, stream: 'v9' } }),
    );
    const host = new FakeHost({ 'state:get': () => ({}) });
    const saved = await loadSavedState(host, legacy);
    const held = new MemorySavedState();
    const deps = { api: host, schedule: new ManualScheduler().schedule, now: () => 0 };
    const a = createSluiceStore({ ...deps, saved: { initial: saved.initial, save: held.save } });
    expect(a.getState().theme).toBe('system');
    expect(a.getState().stallSeconds).toBe(15);
    expect(a.getState().defaults).toMatchObject({ closeThreads: 6, stream: 'auto' });
    a.getState().setTheme('dark');
    a.getState().setDefaults({ verify: true });
    a.getState().setDensity('compact');
    const b = createSluiceStore({ ...deps, saved: held.restart() });
    expect(b.getState().theme).toBe('dark');
    expect(b.getState().defaults).toMatchObject({ closeThreads: 6, verify: true });
    expect(b.getState().density).toBe('compact');
  });

  it("the host's saved settings win over an older app's localStorage", async () => {
    const legacy = new MemoryStorage();
    legacy.setItem(LEGACY_SETTINGS_KEY, JSON.stringify({ theme: 'light' }));
    const host = new FakeHost({ 'state:get': () => ({ settings: { theme: 'dark' } as never }) });
    const saved = await loadSavedState(host, legacy);
    const s = createSluiceStore({ api: host, schedule: new ManualScheduler().schedule, now: () => 0, saved });
    expect(s.getState().theme).toBe('dark');
  });
});

describe('host pushes', () => {
  it('bundle:opened inspects the bundle; app:command opens the clone dialog', async () => {
    const { connectHost } = await import('../../../../src/renderer/src/store/index');
    const host = new FakeHost({
      'bundle:inspect': (path) => info({ path }),
      'app:info': () => ({ version: '0', platform: 'linux', host: 'electron', defaultCloneDir: '/c' }),
      'job:list': () => [],
    });
    const deps = { api: host, schedule: new ManualScheduler().schedule, now: () => 0 };
    const store = createSluiceStore(deps);
    const off = connectHost(store, deps, 60_000);
    host.push('bundle:opened', { path: '/opened.hg' });
    await new Promise((r) => setTimeout(r, 0));
    expect(store.getState().dialog).toMatchObject({ type: 'apply', info: { path: '/opened.hg' } });
    host.push('app:command', { command: 'clone-from-url' });
    expect(store.getState().dialog).toEqual({ type: 'clone' });
    host.push('credentials:request', { requestId: 'r', url: 'http://h', realm: 'x' });
    expect(store.getState().credentials).toHaveLength(1);
    off();
    host.push('app:command', { command: 'clone-from-url' });
    expect(host.callsTo('app:info')).toHaveLength(1);
  });

  it('link:opened fills the clone dialog, opens a bundle, or says why a link was refused', async () => {
    const { connectHost } = await import('../../../../src/renderer/src/store/index');
    const host = new FakeHost({
      'bundle:inspect': (path) => info({ path }),
      'app:info': () => ({ version: '0', platform: 'linux', host: 'web', defaultCloneDir: '/c' }),
      'job:list': () => [],
    });
    const deps = { api: host, schedule: new ManualScheduler().schedule, now: () => 0 };
    const store = createSluiceStore(deps);
    const off = connectHost(store, deps, 60_000);
    host.push('link:opened', {
      ok: true,
      link: { kind: 'clone', url: 'https://h/r', dest: '/home/a/r', rev: 'stable' },
    });
    expect(store.getState().dialog).toEqual({
      type: 'clone',
      initial: { url: 'https://h/r', dest: '/home/a/r', update: true, updateRev: 'stable' },
      fromLink: true,
    });
    // nothing started: the dialog waits for the user's click
    expect(host.callsTo('job:start')).toHaveLength(0);
    host.push('link:opened', { ok: true, link: { kind: 'clone', url: 'ssh://h/r' } });
    expect(store.getState().dialog).toEqual({ type: 'clone', initial: { url: 'ssh://h/r' }, fromLink: true });

    store.getState().closeDialog();
    host.push('link:opened', { ok: false, reason: 'a link may not name a javascript: source' });
    expect(store.getState().dialog).toBeNull();
    expect(store.getState().notices.at(-1)).toMatchObject({
      tone: 'error',
      text: 'A link was not opened',
      detail: 'a link may not name a javascript: source',
    });

    host.push('link:opened', { ok: true, link: { kind: 'apply', bundlePath: '/b/x.hg' } });
    await new Promise((r) => setTimeout(r, 0));
    expect(store.getState().dialog).toMatchObject({ type: 'apply', info: { path: '/b/x.hg' } });
    off();
  });

  it('on the web host, "Apply bundle…" opens a path dialog instead of a native picker', async () => {
    const host = new FakeHost({
      'app:info': () => ({ version: '0', platform: 'linux', host: 'web', defaultCloneDir: '/c' }),
    });
    const store = setup(host);
    await store.getState().loadAppInfo();
    await store.getState().pickBundle();
    expect(store.getState().dialog).toEqual({ type: 'open-bundle' });
    expect(host.callsTo('dialog:pickBundle')).toHaveLength(0);
  });
});
