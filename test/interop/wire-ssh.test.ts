// ssh:// both ways against a real OpenSSH server (scripts/sshd-harness.mjs: its own sshd on
// 127.0.0.1, key auth only, a temp remote home): Sluice cloning from `hg serve --stdio` and from
// `sluice -R REPO serve --stdio`, hg cloning from `sluice -R REPO serve --stdio` through
// --remotecmd, each clone verified and compared with the source's log, phases and bookmarks; then
// what goes wrong: login-banner noise, a wrong host key, a missing remote command, a stalled
// server, cancel.

import { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSshd, type Sshd } from '../../scripts/sshd-harness.mjs';
import { SluiceError } from '../../src/main/engine/errors';
import { JobContext, type ConnectOptions } from '../../src/main/engine/context/job-context';
import { cloneFromUrl } from '../../src/main/engine/operations/clone/clone';
import { pullFromUrl } from '../../src/main/engine/operations/pull/pull';
import {
  ROOT,
  describeClone,
  extractFixture,
  hgAsync,
  makeTinyCorpus,
  missing,
  removeDir,
  skipNote,
  tempDir,
} from './wire-support';

const TOOLS = ['sshd', 'ssh', 'hg'] as const;

describe.skipIf(missing(...TOOLS))(`ssh:// clones through a real sshd${skipNote(...TOOLS)}`, () => {
  let sshd: Sshd;
  let work = '';
  let source = '';
  let reference: Awaited<ReturnType<typeof describeClone>>;
  /** remote commands: sluice from source, sluice with --v1-only, a stalling fake */
  let sluiceCmd = '';
  let sluiceV1Cmd = '';
  let n = 0;

  const script = (name: string, body: string): string => {
    const p = join(work, name);
    writeFileSync(p, `#!/bin/sh\n${body}\n`);
    chmodSync(p, 0o755);
    return p;
  };

  beforeAll(async () => {
    sshd = await startSshd();
    work = tempDir('ssh');
    // the source lives in the remote home: ssh://host/src is relative to it
    source = extractFixture('default', sshd.home);
    // what hg itself gets over ssh from hg (the fixture is publishing: its drafts arrive public)
    const ref = join(work, 'reference');
    const r = await hgAsync(['clone', '--stream', '-U', '--ssh', sshd.sshCommand, sshd.url('default'), ref]);
    if (r.status !== 0) throw new Error(`reference clone failed: ${r.stderr}`);
    reference = await describeClone(ref);
    const sluice = `SLUICE_FROM_SOURCE=1 exec '${process.execPath}' '${join(ROOT, 'bin', 'sluice.cjs')}'`;
    sluiceCmd = script('sluice-remote', `${sluice} "$@"`);
    sluiceV1Cmd = script('sluice-remote-v1', `${sluice} "$@" --v1-only`);
  }, 60_000);

  afterAll(async () => {
    await sshd?.stop();
    removeDir(work);
  });

  async function sluiceClone(
    url: string,
    connect: ConnectOptions,
    opts: {
      stream?: 'v1' | 'v2';
      pull?: boolean;
      signal?: AbortSignal;
      idleTimeoutMs?: number;
      onEvent?: (e: { type: string }) => void;
    } = {},
  ) {
    const dest = join(work, `clone-${++n}`);
    const logs: string[] = [];
    const ctx = new JobContext({
      connect: { sshCommand: sshd.sshCommand, ...connect },
      ...(opts.signal ? { signal: opts.signal } : {}),
      sink: (e) => {
        if (e.type === 'log') logs.push(e.message);
        opts.onEvent?.(e);
      },
    });
    try {
      const r = await cloneFromUrl(
        {
          kind: 'clone',
          url,
          dest,
          stream: opts.stream ?? 'auto',
          ...(opts.pull ? { pull: true, update: false } : {}),
          ...(opts.idleTimeoutMs ? { idleTimeoutMs: opts.idleTimeoutMs } : {}),
        },
        ctx,
      );
      return { dest, result: r, error: null, logs };
    } catch (e) {
      return { dest, result: null, error: e as SluiceError, logs };
    }
  }

  /** hg clone --stream -U over the test sshd, the remote end run as `remotecmd` */
  async function hgStreamClone(remotecmd: string) {
    const dest = join(work, `hg-${++n}`);
    const ssh = ['--ssh', sshd.sshCommand, '--remotecmd', remotecmd];
    return { dest, r: await hgAsync(['clone', '--stream', '-U', ...ssh, sshd.url('default'), dest]) };
  }

  /** verify passes; log, phases and bookmarks equal hg's own ssh clone of the source */
  async function expectSameAsSource(dest: string): Promise<void> {
    const got = await describeClone(dest);
    expect(got.verify.status, got.verify.stderr).toBe(0);
    expect(got.log).toBe(reference.log);
    expect(got.bookmarks).toBe(reference.bookmarks);
    expect(got.phases).toBe(reference.phases);
  }

  for (const stream of ['v2', 'v1'] as const) {
    it(`Sluice clones from hg serve --stdio (remotecmd hg), stream ${stream}`, async () => {
      const c = await sluiceClone(sshd.url('default'), { remoteCommand: 'hg' }, { stream });
      expect(c.error).toBeNull();
      expect(c.result!.via).toBe(`stream-${stream}`);
      expect(c.result!.url).toBe(sshd.url('default'));
      await expectSameAsSource(c.dest);
      expect(readFileSync(join(c.dest, '.hg', 'hgrc'), 'utf8')).toContain(`default = ${sshd.url('default')}`);
    });

    it(`Sluice clones from sluice -R REPO serve --stdio, stream ${stream}`, async () => {
      const c = await sluiceClone(sshd.url('default'), { remoteCommand: sluiceCmd }, { stream });
      expect(c.error).toBeNull();
      await expectSameAsSource(c.dest);
    }, 60_000);
  }

  it('an absolute path: ssh://host//abs is /abs on the remote', async () => {
    const c = await sluiceClone(sshd.url(source), { remoteCommand: 'hg' });
    expect(source.startsWith('/')).toBe(true);
    expect(c.error).toBeNull();
    await expectSameAsSource(c.dest);
  });

  for (const [label, remote] of [
    ['stream v2', () => sluiceCmd],
    ['stream v1 (server --v1-only)', () => sluiceV1Cmd],
  ] as const) {
    it(`hg clone --stream from sluice -R REPO serve --stdio via --remotecmd, ${label}`, async () => {
      const { dest, r } = await hgStreamClone(remote());
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/streaming all changes/);
      await expectSameAsSource(dest);
    }, 60_000);
  }

  for (const [label, remote] of [
    ['hg serve --stdio', () => 'hg'],
    ['sluice -R REPO serve --stdio', () => sluiceCmd],
  ] as const) {
    it(`Sluice clones with the pull protocol (discovery, getbundle changegroup) from ${label}`, async () => {
      const c = await sluiceClone(sshd.url('default'), { remoteCommand: remote() }, { pull: true });
      expect(c.error).toBeNull();
      expect(c.result!.via).not.toMatch(/^stream/);
      await expectSameAsSource(c.dest);
    }, 60_000);

    it(`sluice pull brings a partial clone up to date over ssh from ${label}`, async () => {
      const dest = join(work, `partial-${++n}`);
      const r = await hgAsync(['clone', '-U', '-r', '1', join(sshd.home, 'default'), dest]);
      expect(r.status, r.stderr).toBe(0);
      const ctx = new JobContext({ connect: { sshCommand: sshd.sshCommand, remoteCommand: remote() } });
      const out = await pullFromUrl({ kind: 'pull', repo: dest, source: sshd.url('default') }, ctx);
      expect(out.changesets).toBeGreaterThan(0);
      await expectSameAsSource(dest);
      const again = await pullFromUrl({ kind: 'pull', repo: dest, source: sshd.url('default') }, ctx);
      expect(again.upToDate).toBe(true);
    }, 60_000);
  }

  it('hg clone (pull protocol) and hg pull from sluice -R REPO serve --stdio via --remotecmd', async () => {
    const dest = join(work, `hg-pull-${++n}`);
    const ssh = ['--ssh', sshd.sshCommand, '--remotecmd', sluiceCmd];
    const c = await hgAsync(['clone', '-U', '-r', '1', ...ssh, sshd.url('default'), dest]);
    expect(c.status, c.stderr).toBe(0);
    expect(c.stdout).not.toMatch(/streaming all changes/);
    const p = await hgAsync(['-R', dest, 'pull', ...ssh, sshd.url('default')]);
    expect(p.status, p.stderr).toBe(0);
    expect(p.stdout).toMatch(/added \d+ changesets/);
    await expectSameAsSource(dest);
  }, 60_000);

  it('login-banner noise on stdout (the remote shell rc) is skipped, and stderr comes back as remote: lines', async () => {
    sshd.setBanner('echo "Welcome to the test host"\necho 1\necho "rc says hi" >&2\n');
    try {
      const c = await sluiceClone(sshd.url('default'), { remoteCommand: 'hg' });
      expect(c.error).toBeNull();
      expect(c.logs).toContain('remote: rc says hi');
      await expectSameAsSource(c.dest);
      const { r } = await hgStreamClone(sluiceCmd);
      expect(r.status, r.stderr).toBe(0);
    } finally {
      sshd.setBanner('');
    }
  }, 60_000);

  it('a wrong host key: SSH_HOST_KEY in plain words, nothing at DEST', async () => {
    const c = await sluiceClone(sshd.url('default'), {
      sshCommand: sshd.sshCommandWith(sshd.wrongKnownHosts),
    });
    expect(c.error?.code).toBe('SSH_HOST_KEY');
    expect(c.error?.message).toMatch(/host key of 127\.0\.0\.1 could not be verified/);
    expect(existsSync(c.dest)).toBe(false);
  });

  it('a missing remote command: SSH_REMOTE_COMMAND names it and --remotecmd', async () => {
    const c = await sluiceClone(sshd.url('default'), { remoteCommand: 'no-such-hg' });
    expect(c.error?.code).toBe('SSH_REMOTE_COMMAND');
    expect(c.error?.message).toMatch(/'no-such-hg' was not found on 127\.0\.0\.1.*--remotecmd/s);
    expect(existsSync(c.dest)).toBe(false);
  });

  it('a missing repository: NOT_A_REPO with the remote abort', async () => {
    const c = await sluiceClone(sshd.url('nothing-here'), { remoteCommand: 'hg' });
    expect(c.error?.code).toBe('NOT_A_REPO');
    expect(c.error?.message).toMatch(/repository nothing-here not found/);
  });

  it('a server that answers the handshake, then stalls: TIMEOUT after the idle timeout', async () => {
    // the handshake reply of a stream-capable server, then nothing until the client goes away
    const caps = 'capabilities: batch getbundle known stream';
    const stall = script(
      'stall-remote',
      `printf '%s\\n%s\\n1\\n\\n' ${caps.length + 1} '${caps}'\ncat >/dev/null`,
    );
    const c = await sluiceClone(sshd.url('default'), { remoteCommand: stall }, { idleTimeoutMs: 1500 });
    expect(c.error?.code).toBe('TIMEOUT');
    expect(c.error?.message).toMatch(/stopped sending data for 1500 ms/);
  });

  it.skipIf(missing('make-corpus'))(
    `cancel mid-stream: CANCELLED, nothing at DEST, the ssh child is gone${skipNote('make-corpus')}`,
    async () => {
      makeTinyCorpus(sshd.home);
      const ac = new AbortController();
      const c = await sluiceClone(
        sshd.url('tiny'),
        { remoteCommand: 'hg' },
        {
          signal: ac.signal,
          onEvent: (e) => {
            if (e.type === 'progress') ac.abort();
          },
        },
      );
      expect(c.error?.code).toBe('CANCELLED');
      expect(existsSync(c.dest)).toBe(false);
      // no ssh process to this server's port is left (read from /proc, nothing killed here)
      await new Promise((r) => setTimeout(r, 500));
      const left = readdirSync('/proc')
        .filter((p) => /^\d+$/.test(p))
        .map((p) => {
          try {
            return readFileSync(`/proc/${p}/cmdline`, 'latin1').split('\0');
          } catch {
            return [];
          }
        })
        .filter(
          (argv) =>
            argv[0] === 'ssh' && argv.includes(`${sshd.port}`) && argv.some((a) => a.includes('tiny')),
        );
      expect(left).toEqual([]);
    },
    120_000,
  );
});
