// The `sluice` process stopped by SIGTERM or SIGHUP (a service manager, a closed terminal, sshd
// ending a session) while a server stalls mid-reply: the job is cancelled as by Ctrl-C (hg's
// catchterm does the same), so no temporary, lock or journal is left, and the process exits with
// 128 + the signal's number.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmptyRepository } from '../../src/main/engine/changegroup';
import { startServer, type RunningServer } from '../../src/main/engine/operations/serve/http-server';
import { ROOT, hgSync, missing, skipNote } from '../support/env';
import { extractFixture, removeDir, tempDir } from '../interop/wire-support';
import { scriptedServer, type ScriptedServer } from '../wire-faults/harness';

let work = '';
let source = '';
let backend: RunningServer;
let stalling: ScriptedServer;

beforeAll(async () => {
  work = tempDir('cli-signals');
  source = extractFixture('default', work);
  backend = await startServer({ repo: source });
  // the getbundle reply's first half, then nothing (the connection stays open)
  stalling = await scriptedServer(backend.url, async (_req, res, ctx) => {
    if (ctx.cmd !== 'getbundle') return false;
    const b = await ctx.forward();
    res.writeHead(200, b.headers);
    res.write(b.body.subarray(0, b.body.length >> 1));
    return true;
  });
});

afterAll(async () => {
  await stalling.close();
  await backend.close();
  removeDir(work);
});

interface Run {
  child: ChildProcessWithoutNullStreams;
  exited: Promise<number | null>;
  output: () => string;
}

function sluice(args: string[]): Run {
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'sluice.cjs'), ...args], {
    cwd: ROOT,
    env: { ...process.env, SLUICE_FROM_SOURCE: '1', SLUICE_CLI_NO_RUN: '' },
  });
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (out += b.toString()));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return { child, exited, output: () => out };
}

async function until(what: string, ok: () => boolean, run: Run): Promise<void> {
  for (let i = 0; i < 1200 && !ok(); i++) await new Promise((r) => setTimeout(r, 50));
  expect(ok(), `${what}; output: ${run.output()}`).toBe(true);
}

/** The exit code, or 'hung' when the process is still running after `ms`. */
function exitWithin(run: Run, ms: number): Promise<number | null | 'hung'> {
  return Promise.race([run.exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), ms))]);
}

describe('SIGTERM or SIGHUP while a server stalls mid-reply', () => {
  it.each([
    ['SIGTERM', 143, []],
    ['SIGHUP', 129, ['--pull']],
  ] as const)(
    'clone, %s: exit %i, no temporary left beside DEST',
    async (signal, status, extra) => {
      const parent = join(work, `clone-${signal}`);
      mkdirSync(parent);
      const run = sluice(['clone', stalling.url, join(parent, 'c'), '--idle-timeout', '60', ...extra]);
      await until('the clone started writing', () => readdirSync(parent).length > 0, run);
      await new Promise((r) => setTimeout(r, 300)); // into the stalled reply
      run.child.kill(signal);
      expect(await exitWithin(run, 15_000)).toBe(status);
      expect(run.output()).toContain('interrupted!');
      expect(readdirSync(parent)).toEqual([]);
    },
    60_000,
  );

  it('pull, SIGTERM: exit 143, the journal rolled back, no lock left', async () => {
    const repo = join(work, 'pulled');
    await createEmptyRepository(repo);
    const run = sluice(['pull', repo, stalling.url, '--idle-timeout', '60']);
    await until(
      'the pull opened its transaction',
      () => existsSync(join(repo, '.hg', 'store', 'journal')),
      run,
    );
    await new Promise((r) => setTimeout(r, 300));
    run.child.kill('SIGTERM');
    expect(await exitWithin(run, 15_000)).toBe(143);
    const left = [...readdirSync(join(repo, '.hg')), ...readdirSync(join(repo, '.hg', 'store'))];
    expect(left.filter((f) => /^(journal|lock$|wlock$)/.test(f))).toEqual([]);
  }, 60_000);

  it.skipIf(missing('hg'))(`pull, SIGTERM: hg verify passes, no changeset added${skipNote('hg')}`, () => {
    const repo = join(work, 'pulled');
    expect(hgSync(['verify', '-q'], repo).status).toBe(0);
    expect(hgSync(['log', '-q'], repo).stdout).toBe('');
  });
});

describe('serve --stdio stopped by a signal while the client keeps stdin open', () => {
  it.each([
    ['SIGTERM', 143],
    ['SIGHUP', 129],
    ['SIGINT', 130],
  ] as const)(
    '%s: the session ends at once (exit %i), not when the client next writes',
    async (signal, status) => {
      const run = sluice(['-R', source, 'serve', '--stdio']);
      run.child.stdin.write('hello\n');
      await until('the server answered hello', () => run.output().includes('capabilities:'), run);
      run.child.kill(signal);
      // the grace given to a command that ignores the signal is 20 s: well past this bound
      expect(await exitWithin(run, 10_000)).toBe(status);
      run.child.stdin.destroy();
    },
    60_000,
  );
});
