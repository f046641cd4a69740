// ssh:// and http(s) URLs as hostile input. ssh: the command line Sluice hands to the shell (as hg does) keeps a
// host, user or path with shell metacharacters or a leading `-` as one inert argument. Proven by
// running the real command line with `printf` standing in for ssh.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/main/engine/errors';
import { parseSshUrl, sshCommandLine } from '../../src/main/engine/client/ssh-command';

const work = mkdtempSync(join(tmpdir(), 'sluice-hostile-ssh-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const pwned = join(work, 'pwned');

describe.skipIf(process.platform === 'win32')('ssh:// URLs through the shell', () => {
  it.each([
    `ssh://h%3Btouch%20${pwned}/repo`,
    `ssh://u%60touch%20${pwned}%60@h/repo`,
    `ssh://h/repo%27%3Btouch%20${pwned}%3B%27`,
    `ssh://h/$(touch%20${pwned})`,
    'ssh://h/-oProxyCommand=x',
    'ssh://h:22/--help',
  ])('%s stays inert: one argument for the target, one for the remote command', (url) => {
    const target = parseSshUrl(url);
    const line = sshCommandLine(`printf '%s\\n'`, target, 'hg');
    const r = spawnSync('/bin/sh', ['-c', line], { encoding: 'latin1' });
    expect(r.status).toBe(0);
    const args = r.stdout.split('\n').slice(0, -1);
    const host = target.user ? `${target.user}@${target.host}` : target.host;
    expect(args).toEqual([
      ...(target.port ? ['-p', target.port] : []),
      host,
      expect.stringContaining(' serve --stdio'),
    ]);
    // and the remote shell (sh, as hg assumes) sees `-R PATH` with PATH whole
    const remote = spawnSync('/bin/sh', ['-c', args[args.length - 1]!.replace(/^hg /, 'echo ')], {
      encoding: 'latin1',
    });
    expect(remote.stdout).toBe(`-R ${target.path} serve --stdio\n`);
    expect(existsSync(pwned)).toBe(false);
  });

  it.each(['ssh://-oProxyCommand=touch%20x/r', 'ssh://%2DoProxyCommand=x/r', 'ssh://-l@h/r'])(
    '%s (an option where the host goes) is refused before anything runs',
    (url) => {
      expect(() => parseSshUrl(url)).toThrow(SluiceError);
    },
  );
});

describe('http(s) URLs with malformed escapes in their credentials', () => {
  it('are split as typed, not a URIError', async () => {
    const { splitUrlCredentials } = await import('../../src/main/engine/client/http-client');
    expect(splitUrlCredentials('http://a%zz:p%25%@127.0.0.1/r')).toEqual({
      url: 'http://127.0.0.1/r',
      credentials: { user: 'a%zz', password: 'p%25%' },
    });
  });
});
