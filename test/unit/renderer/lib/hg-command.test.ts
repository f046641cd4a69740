import { describe, expect, it } from 'vitest';
import { hgCloneCommand, shellQuote } from '../../../../src/renderer/src/lib/hg-command';

describe('hgCloneCommand', () => {
  it('is hg clone --stream with the options as hg config', () => {
    expect(hgCloneCommand({ kind: 'clone', url: 'https://hg.example/repo', dest: '/home/u/repo' })).toBe(
      'hg clone --stream https://hg.example/repo /home/u/repo',
    );
    expect(
      hgCloneCommand({ kind: 'clone', url: 'https://h/r', dest: '/d', update: true, updateRev: 'stable' }),
    ).toBe('hg clone --stream -u stable https://h/r /d');
    expect(hgCloneCommand({ kind: 'clone', url: 'https://h/r', dest: '/d', pull: true })).toBe(
      'hg clone --pull https://h/r /d',
    );
    expect(
      hgCloneCommand({
        kind: 'clone',
        url: 'http://127.0.0.1:8000/',
        dest: "/home/u/my repo's",
        stream: 'v1',
        closer: { backgroundClose: 'on', closeThreads: 48 },
        cloneBundles: false,
        obsmarkers: true,
        verify: true,
        update: false,
      }),
    ).toBe(
      "hg --config devel.legacy.exchange=bundle1 --config worker.backgroundclose=true --config worker.backgroundclosethreadcount=48 --config ui.clonebundles=false --config experimental.evolution=all clone --stream -U http://127.0.0.1:8000/ '/home/u/my repo'\\''s' && hg verify -R '/home/u/my repo'\\''s'",
    );
    expect(
      hgCloneCommand({ kind: 'clone', url: 'https://h/r', dest: '/d', closer: { backgroundClose: 'off' } }),
    ).toContain('worker.backgroundclose=false');
    expect(
      hgCloneCommand({
        kind: 'clone',
        url: 'https://h/r',
        dest: '/d',
        closer: { backgroundClose: 'auto', closeThreads: 48 },
        update: false,
      }),
    ).toBe('hg clone --stream -U https://h/r /d');
  });

  it('quotes for cmd on Windows', () => {
    expect(shellQuote('C:\\Users\\Ada\\My Repo', 'win32')).toBe('"C:\\Users\\Ada\\My Repo"');
    expect(shellQuote('C:\\plain', 'win32')).toBe('"C:\\plain"');
  });
});
