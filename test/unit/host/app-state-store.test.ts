import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppStateStore } from '../../../src/main/host/app-state-store';
import { validateInvoke } from '../../../src/main/host/validate';
import type { PersistedSettings } from '../../../src/shared/app-state';

const settings: PersistedSettings = {
  theme: 'dark',
  defaults: { stream: 'v2', backgroundClose: 'on', closeThreads: 8, verify: true },
  stallSeconds: 30,
  density: 'compact',
  cloneDir: '/data/clones',
  recentUrls: ['https://hg.example/repo'],
  recentCloneDirs: ['/data/clones'],
};

describe('AppStateStore', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-state-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps settings and comparisons across a restart; patches sent together all land', async () => {
    const file = join(dir, 'state.json');
    const a = new AppStateStore(file);
    expect(await a.get()).toEqual({});
    // not awaited one by one: the renderer sends each change as it happens
    const writes = [
      a.set({ settings: { ...settings, theme: 'light' } }),
      a.set({ comparisons: [{ id: 'cmp-1', title: 'x' }] }),
      a.set({ settings }),
    ];
    await Promise.all(writes);
    const b = new AppStateStore(file);
    expect(await b.get()).toEqual({ settings, comparisons: [{ id: 'cmp-1', title: 'x' }] });
    // written whole through a temporary, none left over
    expect(await readdir(dir)).toEqual(['state.json']);
  });

  it('a state file that does not parse or has the wrong shape is set aside, not used', async () => {
    const file = join(dir, 'state.json');
    await writeFile(file, JSON.stringify({ settings: { ...settings, cloneDir: 'relative' } }));
    expect(await new AppStateStore(file).get()).toEqual({});
    const names = await readdir(dir);
    expect(names.some((n) => n.startsWith('state.json.corrupt-'))).toBe(true);
    expect(names).not.toContain('state.json');
    await writeFile(file, '{"settings":');
    expect(await new AppStateStore(file).get()).toEqual({});
    expect(
      await readFile(
        join(
          dir,
          names.find((n) => n.includes('corrupt'))!,
        ),
        'utf8',
      ),
    ).toContain('relative');
  });
});

describe('state:set validation', () => {
  const set = (patch: unknown) => () => validateInvoke('state:set', [patch]);
  it('takes a full settings object and bounded comparisons', () => {
    expect(validateInvoke('state:set', [{ settings }])).toEqual([{ settings }]);
    expect(validateInvoke('state:set', [{ comparisons: [{ id: 'cmp-a', n: 1 }] }])).toEqual([
      { comparisons: [{ id: 'cmp-a', n: 1 }] },
    ]);
  });
  it('refuses what the settings dialog cannot produce', () => {
    expect(set({ settings: { ...settings, theme: 'neon' } })).toThrow(/theme/);
    expect(set({ settings: { ...settings, cloneDir: 'rel/dir' } })).toThrow(/cloneDir/);
    expect(set({ settings: { ...settings, recentCloneDirs: ['/a', 'b'] } })).toThrow(/recentCloneDirs\[1\]/);
    expect(set({ settings: { ...settings, stallSeconds: 1e9 } })).toThrow(/stallSeconds/);
    expect(set({ settings: { ...settings, extra: 1 } })).toThrow(/unknown field "extra"/);
    expect(set({ settings: { ...settings, recentUrls: Array(9).fill('https://h/r') } })).toThrow(
      /more than 8/,
    );
    expect(set({ other: {} })).toThrow(/unknown field "other"/);
  });
  it('refuses too many comparisons, ones without an id, and an oversized state', () => {
    const many = Array.from({ length: 13 }, (_, i) => ({ id: `c${i}` }));
    expect(set({ comparisons: many })).toThrow(/more than 12/);
    expect(set({ comparisons: [{ title: 'no id' }] })).toThrow(/id/);
    expect(set({ comparisons: [{ id: 'big', blob: 'x'.repeat(5 * 1024 * 1024) }] })).toThrow(/larger than/);
  });
});
