// A library fetch against a source that wants credentials (hg serve behind a basic-auth proxy),
// through the real job registry and engine worker, wired as the host wires them: a background
// fetch never asks the user, marks the row "needs sign-in" and is not retried by later rounds;
// "Sign in…" runs the same fetch asking (the sign-in dialog's credentials:request push), and
// credentials remembered there let the next background fetch through without asking.

import { afterEach, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CredentialStore } from '../../../src/main/host/credential-store';
import { EngineWorkerHost } from '../../../src/main/host/engine-worker-host';
import { FetchScheduler, type SchedulerClock } from '../../../src/main/host/fetch-scheduler';
import { HistoryStore } from '../../../src/main/host/history-store';
import { JobLogStore } from '../../../src/main/host/job-log-store';
import { JobRegistry, type PushMessage } from '../../../src/main/host/job-registry';
import { RepoLibrary } from '../../../src/main/host/repo-library';
import { SOURCE_WORKER } from '../../../src/main/host/source-worker';
import { startBasicAuthProxy } from '../../support/basic-auth-proxy';
import { hgSync, missing, removeDir, skipNote, tempDirMaker } from '../../support/env';
import { startHgServe } from '../../interop/wire-support';

const makeTempDir = tempDirMaker('fetch-sign-in');
const cleanup: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

function hg(cwd: string, ...args: string[]): string {
  const r = hgSync(args, cwd);
  if (r.status !== 0) throw new Error(`hg ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** Timers fire only when the test moves time on. */
class ManualClock implements SchedulerClock {
  t = 1_000_000;
  readonly timers = new Map<number, { at: number; fn: () => void }>();
  private id = 0;
  now = (): number => this.t;
  setTimer = (fn: () => void, ms: number): unknown => {
    this.timers.set(++this.id, { at: this.t + ms, fn });
    return this.id;
  };
  clearTimer = (h: unknown): void => void this.timers.delete(h as number);
  advance(ms: number): void {
    this.t += ms;
    for (const [id, timer] of [...this.timers].sort((a, b) => a[1].at - b[1].at)) {
      if (timer.at > this.t) break;
      this.timers.delete(id);
      timer.fn();
    }
  }
}

describe.skipIf(missing('hg'))(`library fetch of a source that wants credentials${skipNote('hg')}`, () => {
  it('never asks in the background, needs sign-in until "Sign in…", which asks; remembered credentials serve the next round', async () => {
    const dir = makeTempDir('auth');
    cleanup.push(() => removeDir(dir));
    const upstream = join(dir, 'upstream');
    hg(dir, 'init', 'upstream');
    writeFileSync(join(upstream, 'a.txt'), 'a\n');
    hg(upstream, 'commit', '-q', '-A', '-m', 'one');
    const repo = join(dir, 'clone');
    hg(dir, 'clone', '-q', upstream, repo);
    writeFileSync(join(upstream, 'a.txt'), 'b\n');
    hg(upstream, 'commit', '-q', '-m', 'two');
    const server = await startHgServe(upstream);
    cleanup.push(() => server.stop());
    const proxy = await startBasicAuthProxy(server.url, 'alice', 's3cret');
    cleanup.push(() => proxy.stop());
    writeFileSync(join(repo, '.hg', 'hgrc'), `[paths]\ndefault = ${proxy.url}\n`);

    // a real credential store; its "cipher" is the identity (no keychain in a test)
    const identity = { encrypt: (s: string) => Buffer.from(s), decrypt: (b: Buffer) => b.toString() };
    const saved = new CredentialStore(join(dir, 'data', 'credentials.bin'), identity);
    const registry = new JobRegistry({
      createWorker: (start) => new EngineWorkerHost(start, SOURCE_WORKER),
      history: new HistoryStore(join(dir, 'data', 'history.json')),
      logs: new JobLogStore(join(dir, 'data', 'logs')),
      savedCredentials: {
        lookup: (url) => saved.lookup(url),
        remember: (url, c) => saved.remember(url, c),
        refused: (url) => saved.forget(new URL(url).origin),
      },
      batchIntervalMs: 10,
    });
    cleanup.push(() => registry.dispose());
    const pushes: PushMessage[] = [];
    registry.onPush((m) => pushes.push(m));
    const prompts = () => pushes.flatMap((p) => (p.channel === 'credentials:request' ? [p.payload] : []));

    const library = new RepoLibrary({
      file: join(dir, 'data', 'library.json'),
      onUpdate: () => undefined,
      watch: { pollMs: 0 },
      batchMs: 10,
    });
    cleanup.push(() => library.dispose());
    await library.add(repo, 'clone');
    await expect.poll(async () => (await library.list())[0]?.status).toBe('ok');
    await library.setSettings({ fetchInterval: 5 });
    const clock = new ManualClock();
    const scheduler = new FetchScheduler({
      library,
      // as EngineHost wires it
      fetch: (path, previous, { interactive }) =>
        registry.query(
          { kind: 'fetch', request: { repo: path, ...(previous && { previous }) } },
          { interactive },
        ),
      clock,
    });
    cleanup.push(() => scheduler.dispose());
    const row = async () => (await library.list())[0]!;

    // a background round: refused, nobody asked, the row needs sign-in
    await scheduler.reschedule();
    clock.advance(0);
    await scheduler.idle();
    expect((await row()).fetch).toMatchObject({ needsSignIn: { message: expect.any(String) } });
    expect(prompts()).toEqual([]);
    expect([proxy.refused() > 0, proxy.passed()]).toEqual([true, 0]);

    // later rounds leave it alone: no timer, no request
    const refused = proxy.refused();
    expect(clock.timers.size).toBe(0);
    clock.advance(60 * 60_000);
    await scheduler.idle();
    expect(proxy.refused()).toBe(refused);

    // "Sign in…": the same fetch, asking; the answer (remembered) gets it through
    const signIn = scheduler.signIn(repo);
    await expect.poll(() => prompts().length, { timeout: 20_000 }).toBe(1);
    expect(prompts()[0]).toMatchObject({ url: expect.stringContaining(proxy.url.replace(/\/$/, '')) });
    registry.answerCredentials(prompts()[0]!.requestId, { user: 'alice', password: 's3cret' }, true);
    await signIn;
    const incoming = hgSync(['-R', repo, 'incoming', '-q', server.url]).stdout.split('\n').filter(Boolean);
    expect((await row()).fetch).toMatchObject({ incoming: incoming.length, outgoing: 0 });
    expect(incoming.length).toBe(1);
    await expect.poll(async () => (await saved.list()).map((c) => c.user)).toEqual(['alice']);

    // background again: due after its interval, through with the saved credentials, no prompt
    expect(clock.timers.size).toBe(1);
    const passed = proxy.passed();
    writeFileSync(join(upstream, 'a.txt'), 'c\n');
    hg(upstream, 'commit', '-q', '-m', 'three');
    clock.advance(5 * 60_000);
    await scheduler.idle();
    expect((await row()).fetch).toMatchObject({ incoming: 2 });
    expect(proxy.passed()).toBeGreaterThan(passed);
    expect(prompts()).toHaveLength(1);
  });
});
