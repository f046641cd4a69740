import { describe, expect, it } from 'vitest';
import { createSluiceStore } from '../../../../src/renderer/src/store/index';
import { MAX_RECENT_URLS } from '../../../../src/renderer/src/store/settings';
import { FakeHost, ManualScheduler, MemorySavedState } from '../../../support/renderer/fake-host';
import { doneEv, errorEv, startEv } from '../../../support/renderer/events';

describe('settings: clone folder and recent clones', () => {
  it('the chosen clone folder replaces the host default everywhere and survives a restart', async () => {
    const saved = new MemorySavedState();
    const host = new FakeHost({
      'app:info': () => ({ version: '1', platform: 'linux', host: 'web', defaultCloneDir: '/home/u/Sluice' }),
    });
    const deps = { api: host, schedule: new ManualScheduler().schedule, now: () => 0 };
    const a = createSluiceStore({ ...deps, saved });
    await a.getState().loadAppInfo();
    a.getState().setCloneDir('/data/clones');
    expect(a.getState().appInfo?.defaultCloneDir).toBe('/data/clones');
    a.getState().setCloneDir('relative/path');
    expect(a.getState().appInfo?.defaultCloneDir).toBe('/home/u/Sluice');
    a.getState().setCloneDir('/data/clones');
    const b = createSluiceStore({ ...deps, saved: saved.restart() });
    await b.getState().loadAppInfo();
    expect(b.getState().appInfo?.defaultCloneDir).toBe('/data/clones');
    expect(b.getState().hostCloneDir).toBe('/home/u/Sluice');
  });

  it('remembers the last URLs and folders, newest first, without duplicates, bounded', () => {
    const saved = new MemorySavedState();
    const deps = { api: new FakeHost(), schedule: new ManualScheduler().schedule, now: () => 0 };
    const s = createSluiceStore({ ...deps, saved });
    for (let i = 0; i < 12; i++) s.getState().rememberClone(`https://h/r${i}`, '/src');
    s.getState().rememberClone('https://h/r3', '/other');
    expect(s.getState().recentUrls[0]).toBe('https://h/r3');
    expect(s.getState().recentUrls).toHaveLength(MAX_RECENT_URLS);
    expect(new Set(s.getState().recentUrls).size).toBe(MAX_RECENT_URLS);
    expect(s.getState().recentCloneDirs).toEqual(['/other', '/src']);
    expect(saved.initial.settings).toMatchObject({ recentCloneDirs: ['/other', '/src'] });
    expect(createSluiceStore({ ...deps, saved: saved.restart() }).getState().recentUrls[0]).toBe(
      'https://h/r3',
    );
  });

  it("a clone's folder joins the recent ones only when the clone is done", async () => {
    const saved = new MemorySavedState();
    const frames = new ManualScheduler();
    const s = createSluiceStore({ api: new FakeHost(), schedule: frames.schedule, now: () => 0, saved });
    const failed = s.getState().rememberCloneJob('j1', 'https://h/a', '/bad');
    const done = s.getState().rememberCloneJob('j2', 'https://h/b', '/good');
    expect(s.getState().recentUrls).toEqual(['https://h/b', 'https://h/a']);
    s.getState().ingestEvents('j1', [startEv('j1', 1), errorEv('j1', 'DEST_EXISTS', '/bad/x exists')]);
    s.getState().ingestEvents('j2', [startEv('j2', 1), doneEv('j2', {})]);
    frames.runFrame();
    await Promise.all([failed, done]);
    expect(s.getState().recentCloneDirs).toEqual(['/good']);
    expect(saved.initial.settings?.recentCloneDirs).toEqual(['/good']);
  });

  it('a password or token typed into a URL is not kept among the recent URLs (saved state)', () => {
    const saved = new MemorySavedState();
    const s = createSluiceStore({
      api: new FakeHost(),
      schedule: new ManualScheduler().schedule,
      now: () => 0,
      saved,
    });
    s.getState().rememberClone('https://user:s3cret@h/r', '/src');
    expect(s.getState().recentUrls).toEqual(['https://h/r']);
    expect(JSON.stringify(saved.initial)).not.toContain('s3cret');
  });
});
