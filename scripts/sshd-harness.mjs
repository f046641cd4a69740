// A private OpenSSH server for the ssh tests and the ssh bench row: /usr/sbin/sshd on 127.0.0.1
// and a free port, with its own config, host key, client key and authorized_keys in a temp dir,
// key authentication only. Every remote command runs through a login script that sets HOME to
// a temp home (so ssh://host/rel paths are relative to it and the user's real dotfiles are never
// read or touched) and sources its `.shellrc` first, like a login shell's rc: a banner printed
// there lands on stdout before the protocol, as real login noise does. stop() kills sshd by pid.
//
// Plain JavaScript so that both vitest (test/interop/wire-ssh.test.ts, typed by
// sshd-harness.d.mts) and `npm run bench` (scripts/bench/wire-bench.mjs) use this one definition.

import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { freePort } from './net-harness.mjs';

const SSHD = '/usr/sbin/sshd';

function keygen(path) {
  const r = spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'sluice-test', '-f', path], {
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`ssh-keygen failed: ${r.stderr}`);
}

/** Resolves once the port answers with an SSH identification line. */
async function waitForSsh(port, timeoutMs) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.setTimeout(2000, () => (s.destroy(), resolve(false)));
      s.once('error', () => resolve(false));
      s.once('data', (d) => {
        s.destroy();
        resolve(d.toString('latin1').startsWith('SSH-'));
      });
    });
    if (ok) return;
    if (Date.now() > end) throw new Error(`sshd on port ${port} did not come up`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Quotes for sh. */
const q = (s) => `'${String(s).replace(/'/g, `'\\''`)}'`;

/**
 * Starts sshd. Returns { host, port, user, dir, home, url(path), sshCommand, sshCommandWith(known),
 * wrongKnownHosts, setBanner(text), stop() }: `sshCommand` is a shell command line for --ssh
 * (hg's and Sluice's) with the client key and a known_hosts holding the server's key.
 */
export async function startSshd({ timeoutMs = 15_000 } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-sshd-'));
  const home = join(dir, 'home');
  mkdirSync(home);
  keygen(join(dir, 'host_key'));
  keygen(join(dir, 'client_key'));
  keygen(join(dir, 'other_host_key'));
  writeFileSync(join(dir, 'authorized_keys'), readFileSync(join(dir, 'client_key.pub')));
  chmodSync(join(dir, 'authorized_keys'), 0o600);
  const login = join(dir, 'login.sh');
  writeFileSync(
    login,
    [
      '#!/bin/sh',
      `HOME=${q(home)}; export HOME`,
      'cd "$HOME" || exit 1',
      '[ -f "$HOME/.shellrc" ] && . "$HOME/.shellrc"',
      'exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"',
      '',
    ].join('\n'),
  );
  chmodSync(login, 0o755);
  const port = await freePort();
  const user = userInfo().username;
  const config = join(dir, 'sshd_config');
  writeFileSync(
    config,
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${join(dir, 'host_key')}`,
      `PidFile ${join(dir, 'sshd.pid')}`,
      `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
      'PubkeyAuthentication yes',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'UsePAM no',
      'StrictModes no',
      'PermitRootLogin prohibit-password',
      `AllowUsers ${user}`,
      `ForceCommand ${login}`,
      'PrintMotd no',
      'PrintLastLog no',
      'X11Forwarding no',
      'AllowTcpForwarding no',
      'LogLevel ERROR',
      '',
    ].join('\n'),
  );
  // Debian's sshd wants its privilege separation directory when started as root
  if (process.getuid?.() === 0) mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
  const proc = spawn(SSHD, ['-D', '-e', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  proc.stderr.setEncoding('utf8');
  proc.stderr.on('data', (s) => {
    log = (log + s).slice(-8192);
  });
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  try {
    await Promise.race([
      waitForSsh(port, timeoutMs),
      exited.then((code) => {
        throw new Error(`sshd exited (${code}): ${log}`);
      }),
    ]);
  } catch (e) {
    proc.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  const hostPub = readFileSync(join(dir, 'host_key.pub'), 'utf8').trim().split(' ').slice(0, 2).join(' ');
  const otherPub = readFileSync(join(dir, 'other_host_key.pub'), 'utf8')
    .trim()
    .split(' ')
    .slice(0, 2)
    .join(' ');
  const knownHosts = join(dir, 'known_hosts');
  const wrongKnownHosts = join(dir, 'known_hosts_wrong');
  writeFileSync(knownHosts, `[127.0.0.1]:${port} ${hostPub}\n`);
  writeFileSync(wrongKnownHosts, `[127.0.0.1]:${port} ${otherPub}\n`);
  const sshCommandWith = (known) =>
    [
      'ssh -F /dev/null',
      `-i ${q(join(dir, 'client_key'))}`,
      '-o IdentitiesOnly=yes',
      `-o UserKnownHostsFile=${q(known)}`,
      '-o StrictHostKeyChecking=yes',
      '-o PasswordAuthentication=no',
      '-o LogLevel=ERROR',
    ].join(' ');
  return {
    host: '127.0.0.1',
    port,
    user,
    dir,
    home,
    pid: proc.pid,
    /** ssh://user@127.0.0.1:PORT/<path> (relative to the temp home; `/abs` for an absolute path) */
    url: (path) => `ssh://${user}@127.0.0.1:${port}/${path}`,
    sshCommand: sshCommandWith(knownHosts),
    sshCommandWith,
    wrongKnownHosts,
    /** the remote login rc (sourced before every command); '' removes it */
    setBanner(text) {
      if (text) writeFileSync(join(home, '.shellrc'), text);
      else rmSync(join(home, '.shellrc'), { force: true });
    },
    log: () => log,
    async stop() {
      proc.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
