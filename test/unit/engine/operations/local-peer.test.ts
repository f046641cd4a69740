import { describe, expect, it } from 'vitest';
import { removeDir, tempDirMaker } from '../../../support/env';
import {
  isLocalSource,
  localSourcePath,
  openLocalPeer,
} from '../../../../src/main/engine/operations/local-peer';

const tempDir = tempDirMaker('local-peer');

describe('local sources (urlutil.url.islocal)', () => {
  it('paths and file: URLs are local; http, https and ssh URLs are not', () => {
    for (const s of ['/srv/repo', 'repo', './a', '../a', 'file:///srv/repo', 'file:rel', 'C:\\repo'])
      expect(isLocalSource(s), s).toBe(true);
    for (const s of ['http://h/r', 'https://h/r', 'ssh://h/r', 'SSH://h//r'])
      expect(isLocalSource(s), s).toBe(false);
  });

  it('resolves relative paths against the base, file: URLs to their (unquoted) path', () => {
    expect(localSourcePath('a', '/work')).toBe('/work/a');
    expect(localSourcePath('../a/./b', '/work/x')).toBe('/work/a/b');
    expect(localSourcePath('/srv/repo/', '/work')).toBe('/srv/repo');
    expect(localSourcePath('file:///srv/my%20repo', '/work')).toBe('/srv/my repo');
    expect(localSourcePath('file://localhost/srv/r', '/work')).toBe('/srv/r');
    expect(localSourcePath('file:rel', '/work')).toBe('/work/rel');
    expect(() => localSourcePath('file://otherhost/r', '/work')).toThrow(/not a host/);
    expect(() => localSourcePath('', '/work')).toThrow(/empty/);
  });

  it('a directory that is no repository: NOT_A_REPO naming it', async () => {
    const dir = tempDir('plain');
    try {
      await expect(openLocalPeer(dir)).rejects.toMatchObject({
        code: 'NOT_A_REPO',
        message: `repository ${dir} not found`,
      });
    } finally {
      removeDir(dir);
    }
  });
});
