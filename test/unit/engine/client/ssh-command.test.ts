// ssh:// URLs and the command line, against what hg 6.3.2's urlutil.url / sshpeer / posix.sshargs
// give for the same input (the expected values were printed by hg's own functions).

import { chownSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SluiceError } from '../../../../src/main/engine/errors';
import { removeDir, tempDirMaker } from '../../../support/env';
import {
  isOpenSsh,
  parseSshUrl,
  resolveSshSettings,
  serverQuote,
  shellQuote,
  sshCommandLine,
} from '../../../../src/main/engine/client/ssh-command';
import { explainSshFailure } from '../../../../src/main/engine/client/ssh-peer';

describe('parseSshUrl (urlutil.url + sshpeer.instance checks)', () => {
  it.each([
    ['ssh://u@h:22/rel/p', { user: 'u', host: 'h', port: '22', path: 'rel/p' }],
    ['ssh://h//abs/p', { host: 'h', path: '/abs/p' }],
    ['ssh://h/', { host: 'h', path: '.' }],
    ['ssh://[::1]:2222/x', { host: '::1', port: '2222', path: 'x' }],
    ['ssh://a%20b@h/p%20q', { user: 'a b', host: 'h', path: 'p q' }],
    ['ssh://h/~/x', { host: 'h', path: '~/x' }],
    ['ssh://h:/x', { host: 'h', path: 'x' }],
  ])('%s', (url, want) => {
    expect(parseSshUrl(url)).toEqual(want);
  });

  it.each([
    ['ssh://h', /couldn't parse location/],
    ['ssh://u:pw@h/x', /password in URL not supported/],
    ['ssh://-oProxyCommand=evil/x', /potentially unsafe url/],
    ['ssh://%2DoProxyCommand=evil/x', /potentially unsafe url/],
    ['ssh://-u@h/x', /potentially unsafe url/],
    ['ssh://h:99x/x', /invalid port/],
  ])('refuses %s', (url, re) => {
    expect(() => parseSshUrl(url)).toThrow(re);
    expect(() => parseSshUrl(url)).toThrow(SluiceError);
  });
});

const makeTempDir = tempDirMaker('ssh');
const dirs: string[] = [];
const made = (dir: string): string => (dirs.push(dir), dir);
afterAll(() => dirs.forEach(removeDir));

describe('the command line (sshpeer._makeconnection)', () => {
  it('quotes like procutil.shellquote and sshpeer._serverquote', () => {
    expect(shellQuote('abc-1.2/x')).toBe('abc-1.2/x');
    expect(shellQuote("it's")).toBe(`'it'\\''s'`);
    expect(serverQuote('a@b:%c')).toBe('a@b:%c');
    expect(serverQuote('my repo')).toBe(`'my repo'`);
    expect(sshCommandLine('ssh -C', parseSshUrl('ssh://u@h:2222/my repo'), 'hg')).toBe(
      `ssh -C -p 2222 'u@h' 'hg -R '\\''my repo'\\'' serve --stdio'`,
    );
    expect(sshCommandLine('ssh', parseSshUrl('ssh://h//srv/r'), '/opt/hg', ['-o', 'BatchMode=yes'])).toBe(
      `ssh -o BatchMode=yes h 'hg -R /srv/r serve --stdio'`.replace('hg -R', '/opt/hg -R'),
    );
  });

  it('knows OpenSSH from plink and wrappers', () => {
    expect(isOpenSsh('ssh')).toBe(true);
    expect(isOpenSsh('/usr/bin/ssh -i key')).toBe(true);
    expect(isOpenSsh('"C:\\Program Files\\OpenSSH\\ssh.exe" -C')).toBe(true);
    expect(isOpenSsh('plink -ssh')).toBe(false);
    expect(isOpenSsh('/tmp/fakessh')).toBe(false);
  });

  it('settings: explicit, then SLUICE_SSH, then [ui] of the user config, then ssh / hg', async () => {
    const dir = made(makeTempDir('settings'));
    const rc = join(dir, 'hgrc');
    writeFileSync(rc, '[ui]\nssh = ssh -C -i ~/k\nremotecmd = /opt/hg/bin/hg\n');
    const env = { HGRCPATH: rc, HOME: dir };
    expect(await resolveSshSettings({}, { env })).toEqual({
      sshCommand: 'ssh -C -i ~/k',
      remoteCommand: '/opt/hg/bin/hg',
    });
    expect(await resolveSshSettings({}, { env: { ...env, SLUICE_SSH: 'myssh' } })).toMatchObject({
      sshCommand: 'myssh',
    });
    expect(
      await resolveSshSettings(
        { sshCommand: 'x', remoteCommand: 'y' },
        { env: { ...env, SLUICE_SSH: 'myssh' } },
      ),
    ).toEqual({
      sshCommand: 'x',
      remoteCommand: 'y',
    });
    expect(await resolveSshSettings({}, { env: { HGRCPATH: '', HOME: dir } })).toEqual({
      sshCommand: 'ssh',
      remoteCommand: 'hg',
    });
  });

  // ui._trusted: a repository's hgrc owned by someone else is not read (its [ui] ssh is a shell
  // command: a repository in a shared folder must not run its owner's commands as the puller)
  const root = process.getuid?.() === 0;
  it.skipIf(!root)(
    `the repository's [ui] ssh / remotecmd apply only when its hgrc is the user's own${root ? '' : ' (skipped: needs root to chown a file to another user)'}`,
    async () => {
      const dir = made(makeTempDir('trust'));
      const repo = join(dir, 'repo');
      mkdirSync(join(repo, '.hg', 'store'), { recursive: true });
      writeFileSync(join(repo, '.hg', 'requires'), 'store\nrevlogv1\n');
      writeFileSync(join(repo, '.hg', 'hgrc'), '[ui]\nssh = touch /tmp/pwned; ssh\nremotecmd = evil\n');
      const env = { HGRCPATH: '', HOME: dir };
      expect(await resolveSshSettings({}, { repo, env })).toEqual({
        sshCommand: 'touch /tmp/pwned; ssh',
        remoteCommand: 'evil',
      });
      chownSync(join(repo, '.hg', 'hgrc'), 65534, 65534);
      expect(await resolveSshSettings({}, { repo, env })).toEqual({ sshCommand: 'ssh', remoteCommand: 'hg' });
    },
  );
});

describe('explainSshFailure: what ssh and the remote shell print, in words', () => {
  const what = { host: 'h', remoteCommand: 'hg', sshCommand: 'ssh' };
  const code = (lines: string[], exit = 255): string =>
    explainSshFailure(lines, { code: exit, signal: null }, what).code;
  it('maps OpenSSH 9 and sh/bash messages to codes', () => {
    expect(code(['Host key verification failed.'])).toBe('SSH_HOST_KEY');
    expect(code(['@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @'])).toBe('SSH_HOST_KEY');
    expect(code(['u@h: Permission denied (publickey).'])).toBe('AUTH');
    expect(code(['sh: 1: hg: not found'], 127)).toBe('SSH_REMOTE_COMMAND');
    expect(code(['bash: line 1: hg: command not found'], 127)).toBe('SSH_REMOTE_COMMAND');
    expect(code(['/bin/sh: 1: ssh: not found'], 127)).toBe('SSH_FAILED');
    expect(code(['ssh: connect to host h port 22: Connection refused'])).toBe('NETWORK');
    expect(code(['ssh: Could not resolve hostname h: Name or service not known'])).toBe('NETWORK');
    expect(code(['abort: repository x not found'])).toBe('NOT_A_REPO');
    expect(code(['something else'], 1)).toBe('PROTOCOL');
  });
});
