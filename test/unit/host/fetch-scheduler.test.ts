// FetchScheduler over a real library of hg clones and real fetches (fetchCounts against a local
// source), with the clock and the power state injected: rounds come when repositories are due,
// share one timer, stay within the concurrency, pause on battery and offline, and notify when
// changesets arrive.

import { afterEach, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FetchScheduler, type PowerState, type SchedulerClock } from '../../../src/main/host/fetch-scheduler';
import { RepoLibrary } from '../../../src/main/host/repo-library';
import { fetchCounts } from '../../../src/main/host/engine-api';
import { hgSync, missing, removeDir, skipNote, tempDirMaker } from '../../support/env';
import type { IncomingNotice } from '../../../src/shared/library';

const makeTempDir = tempDirMaker('fetch-scheduler');
const cleanup: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

function hg(cwd: string, ...args: string[]): string {
  const r = hgSync(args, cwd);
  if (r.status !== 0) throw new Error(`hg ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

class FakeClock implements SchedulerClock {
  t = 1_000_000;
  timers = new Map<number, { at: number; fn: () => void }>();
  private id = 0;
  now = (): number => this.t;
  setTimer = (fn: () => void, ms: number): unknown => {
    this.timers.set(++this.id, { at: this.t + ms, fn });
    return this.id;
  };
  clearTimer = (h: unknown): void => void this.timers.delete(h as number);
  /** moves time on, firing what falls due, in order */
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      const next = [...this.timers.entries()].sort((a, b) => a[1].at - b[1].at)[0];
      if (!next || next[1].at > end) break;
      this.timers.delete(next[0]);
      this.t = next[1].at;
      next[1].fn();
    }
    this.t = end;
  }
}

class FakePower implements PowerState {
  battery = false;
  connected = true;
  private listeners = new Set<() => void>();
  onBattery = (): boolean => this.battery;
  online = (): boolean => this.connected;
  onChange = (l: () => void): (() => void) => (this.listeners.add(l), () => this.listeners.delete(l));
  set(change: { battery?: boolean; connected?: boolean }): void {
    Object.assign(this, change);
    for (const l of this.listeners) l();
  }
}

async function setup(label: string, clones: number) {
  const dir = makeTempDir(label);
  cleanup.push(() => removeDir(dir));
  const upstream = join(dir, 'upstream');
  hg(dir, 'init', 'upstream');
  writeFileSync(join(upstream, 'a.txt'), 'a\n');
  hg(upstream, 'commit', '-q', '-A', '-m', 'one');
  const repos: string[] = [];
  for (let i = 0; i < clones; i++) {
    const repo = join(dir, `clone${i}`);
    hg(dir, 'clone', '-q', upstream, repo);
    repos.push(repo);
  }
  const library = new RepoLibrary({
    file: join(dir, 'data', 'library.json'),
    onUpdate: () => undefined,
    watch: { pollMs: 0 },
    batchMs: 10,
  });
  cleanup.push(() => library.dispose());
  for (const r of repos) await library.add(r, 'clone');
  await expect.poll(async () => (await library.list()).every((r) => r.status === 'ok')).toBe(true);
  const clock = new FakeClock();
  const power = new FakePower();
  const notices: IncomingNotice[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  let fetched = 0;
  const scheduler = new FetchScheduler({
    library,
    fetch: async (repo, previous) => {
      maxInFlight = Math.max(maxInFlight, ++inFlight);
      try {
        return await fetchCounts({ repo, ...(previous && { previous }) });
      } finally {
        inFlight--;
        fetched++;
      }
    },
    power,
    clock,
    notify: (n) => notices.push(n),
  });
  cleanup.push(() => scheduler.dispose());
  const commitUpstream = (n: number) => {
    for (let i = 0; i < n; i++) {
      writeFileSync(join(upstream, 'a.txt'), `change ${Math.random()}\n`);
      hg(upstream, 'commit', '-q', '-m', `upstream ${i}`);
    }
  };
  return {
    library,
    scheduler,
    clock,
    power,
    notices,
    repos,
    commitUpstream,
    stats: () => ({ maxInFlight, fetched }),
  };
}

/** Lets a round that a timer started run to its end. */
async function roundDone(s: FetchScheduler): Promise<void> {
  await s.idle();
}

describe.skipIf(missing('hg'))(`FetchScheduler${skipNote('hg')}`, () => {
  it('fetches every repository when due, one timer for all, at most fetchConcurrency at once; counts match hg incoming', async () => {
    const t = await setup('rounds', 5);
    await t.library.setSettings({ fetchInterval: 5, fetchConcurrency: 2 });
    await t.scheduler.reschedule();
    // never fetched: due now, all on one timer
    expect(t.clock.timers.size).toBe(1);
    t.clock.advance(0);
    await roundDone(t.scheduler);
    expect(t.stats()).toEqual({ maxInFlight: 2, fetched: 5 });
    for (const row of await t.library.list()) expect(row.fetch).toMatchObject({ incoming: 0, outgoing: 0 });
    expect(t.clock.timers.size).toBe(1);

    t.commitUpstream(3);
    t.clock.advance(4 * 60_000);
    await roundDone(t.scheduler);
    expect(t.stats().fetched).toBe(5); // not yet due
    t.clock.advance(60_000);
    await roundDone(t.scheduler);
    expect(t.stats().fetched).toBe(10);
    const expected = hgSync(['-R', t.repos[0]!, 'incoming', '-q']).stdout.split('\n').filter(Boolean).length;
    expect(expected).toBe(3);
    for (const row of await t.library.list()) expect(row.fetch).toMatchObject({ incoming: 3, outgoing: 0 });
    // changesets arrived on a background round: one notice per repository
    expect(t.notices.map((n) => [n.incoming, n.previous])).toEqual(Array(5).fill([3, 0]));
  });

  it('pauses on battery and offline, resumes when the power state changes; a repository can opt out', async () => {
    const t = await setup('power', 2);
    await t.library.setSettings({ fetchInterval: 15 });
    await t.library.setFetchInterval(t.repos[1]!, 0);
    t.power.set({ battery: true });
    await t.scheduler.reschedule();
    t.clock.advance(0);
    await roundDone(t.scheduler);
    expect(t.stats().fetched).toBe(0);
    t.clock.advance(10 * 60_000);
    await roundDone(t.scheduler);
    expect(t.stats().fetched).toBe(0);
    t.power.set({ battery: false, connected: false });
    t.clock.advance(60_000);
    await roundDone(t.scheduler);
    expect(t.stats().fetched).toBe(0);
    t.power.set({ connected: true });
    await t.scheduler.reschedule(); // what the change event started, finished
    t.clock.advance(0);
    await roundDone(t.scheduler);
    // only the repository that follows the library's interval
    expect(t.stats().fetched).toBe(1);
    expect((await t.library.list()).find((r) => r.path === t.repos[1])?.fetch).toBeUndefined();
  });

  it('Fetch all runs on battery too, and a repeat with the same heads reuses the incoming count', async () => {
    const t = await setup('all', 3);
    t.power.set({ battery: true });
    t.commitUpstream(2);
    await t.scheduler.fetchAll();
    expect(t.stats().fetched).toBe(3);
    for (const row of await t.library.list()) expect(row.fetch).toMatchObject({ incoming: 2 });
    expect(t.library.previousFetch(t.repos[0]!)).toMatchObject({ incoming: 2 });
    await t.scheduler.fetchAll();
    for (const row of await t.library.list()) expect(row.fetch).toMatchObject({ incoming: 2 });
    expect(t.notices).toEqual([]);
  });
});
