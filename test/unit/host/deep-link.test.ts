import { describe, expect, it } from 'vitest';
import {
  deepLinkFromArgv,
  parseBundleFile,
  parseCloneQuery,
  parseDeepLink,
} from '../../../src/main/host/deep-link';

const ok = (r: ReturnType<typeof parseDeepLink>) => (r.ok ? r.link : r.reason);

describe('sluice:// clone links', () => {
  it('pre-fill url, dest and rev, decoded', () => {
    expect(
      ok(
        parseDeepLink(
          'sluice://clone?url=https%3A%2F%2Fhg.example.org%2Frepo&dest=%2Fhome%2Fa%2Frepo&rev=stable',
          'linux',
        ),
      ),
    ).toEqual({ kind: 'clone', url: 'https://hg.example.org/repo', dest: '/home/a/repo', rev: 'stable' });
    expect(ok(parseDeepLink('sluice:clone?url=ssh://hg@example.org/r', 'linux'))).toEqual({
      kind: 'clone',
      url: 'ssh://hg@example.org/r',
    });
    expect(ok(parseDeepLink('sluice://clone/?url=http://h/r&dest=C:\\src\\r', 'win32'))).toMatchObject({
      dest: 'C:\\src\\r',
    });
  });

  it.each([
    ['sluice://clone?url=file:///etc', /file: source/],
    ['sluice://clone?url=/etc/passwd', /not a valid URL/],
    ['sluice://clone?url=javascript:alert(1)', /javascript: source/],
    ['sluice://clone?url=https://u:secret@h/r', /password/],
    ['sluice://clone?url=https://h/r&url=https://evil/r', /url given twice/],
    ['sluice://clone?url=https://h/r&run=1', /unknown parameter/],
    ['sluice://clone?url=https://h/r%0aevil', /control characters/],
    ['sluice://clone?url=https://h/r&dest=%00', /control characters/],
    ['sluice://clone?url=https://h/r&dest=relative/dir', /absolute/],
    ['sluice://clone?url=https://h/r&dest=/home/a/../../etc', /\.\./],
    ['sluice://clone?url=https://h/r&rev=$(rm%20-rf)', /rev must be/],
    ['sluice://clone?url=https://h/r&rev=' + 'a'.repeat(129), /rev must be/],
    ['sluice://clone?url=https://h/' + 'a'.repeat(3000), /longer than 2048/],
    ['sluice://clone?url=https://h/r&dest=/' + 'a'.repeat(5000), /longer than 4096/],
    ['sluice://delete?url=https://h/r', /unknown action/],
    ['sluice://clone', /names no url/],
    ['https://h/r', /not a sluice/],
    ['sluice://clone?url=https://h/r\u202e', /control characters/],
  ])('refuses %s', (link, reason) => {
    const r = parseDeepLink(link, 'linux');
    expect(r.ok).toBe(false);
    expect(ok(r)).toMatch(reason);
  });

  // The dialog checks its destination as soon as it opens (dest:check stats the path): on Windows a
  // UNC or device path would reach an SMB server, which gets the user's NTLM hash, before any click.
  it.each([
    '\\\\evil.example\\share\\repo',
    '\\\\?\\UNC\\evil.example\\share\\repo',
    '\\\\?\\C:\\repo',
    '\\\\.\\pipe\\x',
    '//evil.example/share/repo',
    '\\repo',
  ])('on Windows refuses the dest %s (only drive paths)', (dest) => {
    const r = parseDeepLink(`sluice://clone?url=https://h/r&dest=${encodeURIComponent(dest)}`, 'win32');
    expect(ok(r)).toMatch(/dest must be a path on a drive/);
    expect(ok(parseCloneQuery(`url=https://h/r&dest=${encodeURIComponent(dest)}`, 'win32'))).toMatch(
      /dest must be a path on a drive/,
    );
  });

  // autofs mounts /net/HOST (and macOS /Network) when the path is looked at: the check would reach HOST.
  it.each([
    '/net/evil.example/export/repo',
    '//net/evil.example/x',
    '/./net/evil.example/x',
    '/Network/Servers/evil/repo',
  ])('on macOS and Linux refuses the dest %s (automounted network hosts)', (dest) => {
    for (const platform of ['darwin', 'linux'] as const)
      expect(
        ok(parseDeepLink(`sluice://clone?url=https://h/r&dest=${encodeURIComponent(dest)}`, platform)),
      ).toMatch(/dest may not be under \/net or \/Network/);
  });

  it('a folder merely named net elsewhere is a fine dest', () => {
    const r = parseDeepLink(
      `sluice://clone?url=https://h/r&dest=${encodeURIComponent('/home/u/net/repo')}`,
      'darwin',
    );
    expect(r.ok).toBe(true);
  });

  it('the web host /open query goes through the same checks', () => {
    expect(ok(parseCloneQuery('?url=https://h/r&rev=default', 'linux'))).toEqual({
      kind: 'clone',
      url: 'https://h/r',
      rev: 'default',
    });
    expect(ok(parseCloneQuery('url=file:///x', 'linux'))).toMatch(/file:/);
  });
});

describe('bundle files and argv', () => {
  it('a bundle file handed to the app opens the apply dialog', () => {
    expect(ok(parseBundleFile('/home/a/x.hg', 'linux'))).toEqual({
      kind: 'apply',
      bundlePath: '/home/a/x.hg',
    });
    expect(ok(parseBundleFile('C:\\b\\x.BUNDLE', 'win32'))).toEqual({
      kind: 'apply',
      bundlePath: 'C:\\b\\x.BUNDLE',
    });
    expect(ok(parseBundleFile('x.hg', 'linux'))).toMatch(/absolute/);
    expect(ok(parseBundleFile('/etc/passwd', 'linux'))).toMatch(/not a bundle/);
  });

  it('argv: a link first, else a bundle file; flags and argv[0] skipped; nothing asked → null', () => {
    expect(
      deepLinkFromArgv(
        ['/opt/Sluice/sluice', '--no-sandbox', '/tmp/a.hg', 'sluice://clone?url=https://h/r'],
        'linux',
      ),
    ).toEqual({
      ok: true,
      link: { kind: 'clone', url: 'https://h/r' },
    });
    expect(deepLinkFromArgv(['/opt/Sluice/sluice', '/tmp/a.hg'], 'linux')).toEqual({
      ok: true,
      link: { kind: 'apply', bundlePath: '/tmp/a.hg' },
    });
    expect(deepLinkFromArgv(['/opt/Sluice/sluice', '--inspect'], 'linux')).toBeNull();
    expect(deepLinkFromArgv(['/opt/Sluice/sluice', 'sluice://clone?url=file:///'], 'linux')).toMatchObject({
      ok: false,
    });
  });

  it("a second instance's argv: a relative bundle is taken from its own working directory", () => {
    // what Electron forwards through 'second-instance' (argv, workingDirectory)
    expect(deepLinkFromArgv(['/opt/Sluice/sluice', 'sub/x.hg'], 'linux', '/home/a')).toEqual({
      ok: true,
      link: { kind: 'apply', bundlePath: '/home/a/sub/x.hg' },
    });
    expect(deepLinkFromArgv(['C:\\Sluice\\Sluice.exe', 'x.bundle'], 'win32', 'D:\\dl')).toEqual({
      ok: true,
      link: { kind: 'apply', bundlePath: 'D:\\dl\\x.bundle' },
    });
    // Windows passes a protocol link as the last argument, after Chromium's switches
    expect(
      deepLinkFromArgv(
        ['C:\\Sluice\\Sluice.exe', '--allow-file-access-from-files', 'sluice://clone/?url=https://h/r'],
        'win32',
        'C:\\',
      ),
    ).toEqual({ ok: true, link: { kind: 'clone', url: 'https://h/r' } });
    // a development run (`electron .`): the app folder is neither a link nor a bundle
    expect(deepLinkFromArgv(['/usr/bin/electron', '.'], 'linux', '/src/sluice')).toBeNull();
    expect(deepLinkFromArgv(['/x/sluice', 'sluice://clone?url=javascript:alert(1)'], 'linux', '/')).toEqual({
      ok: false,
      reason: 'a link may not name a javascript: source',
    });
  });
});
