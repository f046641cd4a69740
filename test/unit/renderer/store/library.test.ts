import { describe, expect, it } from 'vitest';
import { createSluiceStore } from '../../../../src/renderer/src/store/index';
import { filterRepos, sortRepos } from '../../../../src/renderer/src/store/library';
import { FakeHost, ManualScheduler } from '../../../support/renderer/fake-host';
import type { RepoRow } from '../../../../src/shared/library';

const row = (name: string, patch: Partial<RepoRow> = {}): RepoRow => ({
  path: `/r/${name}`,
  name,
  status: 'ok',
  addedAt: 0,
  origin: 'user',
  ...patch,
});

const tip = (date: number, summary = 's') => ({
  rev: 1,
  node: 'abcdef012345',
  date,
  tz: 0,
  user: 'u',
  summary,
  branch: 'default',
  bookmarks: [],
});

describe('library slice', () => {
  it('loads rows, applies pushed updates and removals', async () => {
    const host = new FakeHost({ 'library:list': () => [row('a'), row('b')] });
    const store = createSluiceStore({ api: host, schedule: new ManualScheduler().schedule, now: () => 0 });
    await store.getState().loadLibrary();
    expect(Object.keys(store.getState().repos)).toEqual(['/r/a', '/r/b']);
    store
      .getState()
      .ingestLibrary({ rows: [row('b', { tip: tip(5, 'new tip') }), row('c')], removed: ['/r/a'] });
    expect(Object.keys(store.getState().repos).sort()).toEqual(['/r/b', '/r/c']);
    expect(store.getState().repos['/r/b']!.tip?.summary).toBe('new tip');
  });

  it('opens the reveal dialog instead of the file manager in the web host, and shows the terminal command when none started', async () => {
    const host = new FakeHost({
      'app:info': () => ({ version: '1', platform: 'linux', host: 'web', defaultCloneDir: '/h' }),
      'library:openTerminal': () => ({ opened: false, command: "cd '/r/a'" }),
    });
    const store = createSluiceStore({ api: host, schedule: new ManualScheduler().schedule, now: () => 0 });
    await store.getState().loadAppInfo();
    await store.getState().openRepositoryFolder('/r/a');
    expect(store.getState().dialog).toEqual({ type: 'reveal', path: '/r/a', what: 'folder' });
    expect(host.callsTo('shell:openPath')).toHaveLength(0);
    await store.getState().openRepositoryTerminal('/r/a');
    expect(store.getState().dialog).toEqual({
      type: 'reveal',
      path: '/r/a',
      what: 'terminal',
      command: "cd '/r/a'",
    });
  });

  it('filters over name, source, branch and summary; sorts by each key', () => {
    const rows = [
      row('zeta', { tip: tip(10, 'fix parser'), storeBytes: 5, lastPullAt: 1 }),
      row('alpha', { source: 'https://hg.example/alpha', tip: tip(30), storeBytes: 50 }),
      row('mid', { status: 'missing', tip: tip(20), storeBytes: 1, lastPullAt: 9 }),
    ];
    expect(filterRepos(rows, 'PARSER').map((r) => r.name)).toEqual(['zeta']);
    expect(filterRepos(rows, 'hg.example').map((r) => r.name)).toEqual(['alpha']);
    expect(filterRepos(rows, 'missing').map((r) => r.name)).toEqual(['mid']);
    expect(sortRepos(rows, 'name').map((r) => r.name)).toEqual(['alpha', 'mid', 'zeta']);
    expect(sortRepos(rows, 'changed').map((r) => r.name)).toEqual(['alpha', 'mid', 'zeta']);
    expect(sortRepos(rows, 'pulled').map((r) => r.name)).toEqual(['mid', 'zeta', 'alpha']);
    expect(sortRepos(rows, 'size').map((r) => r.name)).toEqual(['alpha', 'zeta', 'mid']);
  });
});
