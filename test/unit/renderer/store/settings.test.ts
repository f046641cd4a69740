import { describe, expect, it } from 'vitest';
import { createSluiceStore } from '../../../../src/renderer/src/store/index';
import { MAX_RECENT_URLS, SETTINGS_KEY } from '../../../../src/renderer/src/store/settings';
import { FakeHost, ManualScheduler } from '../../../support/renderer/fake-host';

function memoryStorage() {
  const m = new Map<string, string>();
  return { getItem: (k: string) => m.get(k) ?? null, setItem: (k: string, v: string) => void m.set(k, v) };
}

describe('settings: clone folder and recent clones', () => {
  it('the chosen clone folder replaces the host default everywhere and survives a restart', async () => {
    const storage = memoryStorage();
    const host = new FakeHost({
      'app:info': () => ({ version: '1', platform: 'linux', host: 'web', defaultCloneDir: '/home/u/Sluice' }),
    });
    const deps = { api: host, schedule: new ManualScheduler().schedule, now: () => 0, storage };
    const a = createSluiceStore(deps);
    await a.getState().loadAppInfo();
    a.getState().setCloneDir('/data/clones');
    expect(a.getState().appInfo?.defaultCloneDir).toBe('/data/clones');
    a.getState().setCloneDir('relative/path');
    expect(a.getState().appInfo?.defaultCloneDir).toBe('/home/u/Sluice');
    a.getState().setCloneDir('/data/clones');
    const b = createSluiceStore(deps);
    await b.getState().loadAppInfo();
    expect(b.getState().appInfo?.defaultCloneDir).toBe('/data/clones');
    expect(b.getState().hostCloneDir).toBe('/home/u/Sluice');
  });

  it('remembers the last URLs and folders, newest first, without duplicates, bounded', () => {
    const storage = memoryStorage();
    const deps = { api: new FakeHost(), schedule: new ManualScheduler().schedule, now: () => 0, storage };
    const s = createSluiceStore(deps);
    for (let i = 0; i < 12; i++) s.getState().rememberClone(`https://h/r${i}`, '/src');
    s.getState().rememberClone('https://h/r3', '/other');
    expect(s.getState().recentUrls[0]).toBe('https://h/r3');
    expect(s.getState().recentUrls).toHaveLength(MAX_RECENT_URLS);
    expect(new Set(s.getState().recentUrls).size).toBe(MAX_RECENT_URLS);
    expect(s.getState().recentCloneDirs).toEqual(['/other', '/src']);
    expect(JSON.parse(storage.getItem(SETTINGS_KEY)!)).toMatchObject({ recentCloneDirs: ['/other', '/src'] });
    expect(createSluiceStore(deps).getState().recentUrls[0]).toBe('https://h/r3');
  });

  it('a password or token typed into a URL is not kept among the recent URLs (local storage)', () => {
    const storage = memoryStorage();
    const s = createSluiceStore({
      api: new FakeHost(),
      schedule: new ManualScheduler().schedule,
      now: () => 0,
      storage,
    });
    s.getState().rememberClone('https://user:s3cret@h/r', '/src');
    expect(s.getState().recentUrls).toEqual(['https://h/r']);
    expect(storage.getItem(SETTINGS_KEY)).not.toContain('s3cret');
  });
});
