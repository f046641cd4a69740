import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SluiceError } from '../../../../src/main/engine/errors';
import { HG_ENV, hgSync, missing, skipNote } from '../../../support/env';
import { acquireLock, lockExists, lockHostPrefix, lockName } from '../../../../src/main/engine/repo/lock';

const work = mkdtempSync(join(tmpdir(), 'sluice-lock-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('store lock (hg lock.py protocol)', () => {
  it('is a host:pid symlink, released on release()', async () => {
    const p = join(work, 'lock1');
    const l = await acquireLock(p, { timeoutMs: 0 });
    expect(readlinkSync(p)).toBe(lockName());
    expect(lockName()).toBe(`${lockHostPrefix()}:${process.pid}`);
    l.release();
    expect(lockExists(p)).toBe(false);
  });

  it('waits for a live holder, then refuses with LOCKED', async () => {
    const p = join(work, 'lock2');
    symlinkSync(`${lockHostPrefix()}:1`, p); // pid 1 is alive
    const waited: string[] = [];
    const err = await acquireLock(p, { timeoutMs: 150, onWait: (h) => waited.push(h) }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SluiceError);
    expect((err as SluiceError).code).toBe('LOCKED');
    // lock.trylock's warning and scmutil.callcatch's abort, as hg words them
    const [host, pid] = [lockHostPrefix(), '1'];
    expect(waited).toEqual([`waiting for lock on ${p} held by process '${pid}' on host '${host}'`]);
    expect((err as SluiceError).message).toBe(`${p}: timed out waiting for lock held by '${host}:1'`);
  });

  it("breaks a dead process's lock like hg", async () => {
    const p = join(work, 'lock3');
    const dead = spawnSync(process.execPath, ['-e', '0']).pid!;
    symlinkSync(`${lockHostPrefix()}:${dead}`, p);
    const l = await acquireLock(p, { timeoutMs: 0 });
    expect(readlinkSync(p)).toBe(lockName());
    l.release();
  });

  it('a hostile lock file (a FIFO, a huge file) is refused as held, never read to its end', async () => {
    const fifo = join(work, 'lock4');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0); // opening it to read would block forever
    const huge = join(work, 'lock5');
    writeFileSync(huge, `${lockHostPrefix()}:1`.padEnd(8 << 20, 'x'));
    for (const p of [fifo, huge]) {
      const held: string[] = [];
      const err = await acquireLock(p, { timeoutMs: 50, onWait: (h) => held.push(h) }).catch(
        (e: unknown) => e,
      );
      expect((err as SluiceError).code).toBe('LOCKED');
      expect(held[0]!.length).toBeLessThanOrEqual(1024 + 200);
    }
  });
});

describe.skipIf(missing('hg'))(`lock interop with hg${skipNote('hg')}`, () => {
  it("Sluice waits for hg's store lock and hg honours Sluice's", async () => {
    const repo = join(work, 'repo');
    expect(hgSync(['init', repo]).status).toBe(0);
    const lockPath = join(repo, '.hg', 'store', 'lock');
    // hg holds the store lock until it is interrupted
    const holder = spawn('hg', ['debuglocks', '--set-lock'], { cwd: repo, env: HG_ENV, stdio: 'ignore' });
    for (let i = 0; i < 300 && !lockExists(lockPath); i++) await new Promise((r) => setTimeout(r, 50));
    expect(lockExists(lockPath)).toBe(true);
    const err = await acquireLock(lockPath, { timeoutMs: 200 }).catch((e: unknown) => e);
    expect((err as SluiceError).code).toBe('LOCKED');
    const gone = new Promise((r) => holder.on('exit', r));
    holder.kill('SIGINT');
    await gone;
    const mine = await acquireLock(lockPath, { timeoutMs: 5000 });
    // hg sees Sluice's lock as held (and does not break it: this process is alive)
    const shown = hgSync(['debuglocks'], repo);
    expect(shown.stdout).toMatch(new RegExp(`lock: .*${process.pid}`));
    const blocked = hgSync(['--config', 'ui.timeout=0', 'debuglocks', '--set-lock'], repo);
    expect(blocked.status).not.toBe(0);
    mine.release();
    expect(lockExists(lockPath)).toBe(false);
  });
});
