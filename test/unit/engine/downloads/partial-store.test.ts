// The partial downloads folder: one lock per URL (a second run is refused the partial, a dead
// run's lock is broken), the sidecar decides what resumes, the oldest go first past the bound,
// and removal takes only what no running download holds.

import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PartialStore, partialKey } from '../../../../src/main/engine/downloads/partial-store';
import {
  defaultDownloadsDir,
  defaultDownloadsPolicy,
} from '../../../../src/main/engine/downloads/downloads-dir';
import { lockHostPrefix } from '../../../../src/main/engine/repo/lock';
import { removeDir, tempDirMaker } from '../../../support/env';

const tempDir = tempDirMaker('partials');
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) removeDir(d);
});

function store(maxBytes = 1 << 30): PartialStore {
  const dir = tempDir('store');
  dirs.push(dir);
  return new PartialStore({ dir, maxBytes });
}

/** A partial as an earlier run leaves it: `bytes` on disk, the sidecar saved, the lock released. */
async function leave(s: PartialStore, url: string, bytes: number, total: number, updated = Date.now()) {
  const part = (await s.claim(url, url, '/dest'))!;
  writeFileSync(part.path, Buffer.alloc(bytes, 7));
  await part.save({ have: bytes, validator: '"v1"', total });
  await part.release();
  const sidecar = join(s.policy.dir, `${part.key}.json`);
  const meta = JSON.parse((await import('node:fs')).readFileSync(sidecar, 'utf8'));
  writeFileSync(sidecar, JSON.stringify({ ...meta, updated }));
  return part.key;
}

describe('PartialStore', () => {
  it('resumes what the sidecar and the .part file agree on', async () => {
    const s = store();
    await leave(s, 'http://h/a.hg', 1000, 5000);
    const again = (await s.claim('http://h/a.hg', 'http://h/a.hg', '/dest'))!;
    expect(again.resume).toEqual({ have: 1000, validator: '"v1"', total: 5000 });
    await again.release();
  });

  it('starts from zero when the .part is longer than the total, or the sidecar is missing', async () => {
    const s = store();
    const key = await leave(s, 'http://h/a.hg', 1000, 500);
    const a = (await s.claim('http://h/a.hg', 'http://h/a.hg', '/dest'))!;
    expect(a.resume).toBeNull();
    await a.release();
    writeFileSync(join(s.policy.dir, `${key}.part`), 'x'.repeat(10));
    const b = (await s.claim('http://h/a.hg', 'http://h/a.hg', '/dest'))!;
    expect(b.resume).toBeNull(); // the claim that started from zero removed the old sidecar
    await b.release();
  });

  it('a corrupt sidecar is no resume (set aside, then swept with its key)', async () => {
    const s = store();
    const key = await leave(s, 'http://h/a.hg', 1000, 5000);
    writeFileSync(join(s.policy.dir, `${key}.json`), '{"url": 1');
    const part = (await s.claim('http://h/a.hg', 'http://h/a.hg', '/dest'))!;
    expect(part.resume).toBeNull();
    await part.discard();
    expect(await s.clear()).toBe(1); // the set-aside sidecar
    expect(readdirSync(s.policy.dir)).toEqual([]);
  });

  it('one run per URL: a second claim gets nothing while the first holds it', async () => {
    const s = store();
    const first = (await s.claim('http://h/a.hg', 'http://h/a.hg', '/dest'))!;
    expect(await s.claim('http://h/a.hg', 'http://h/a.hg', '/dest')).toBeNull();
    expect(await s.remove(first.key)).toBe(false);
    expect((await s.claim('http://h/b.hg', 'http://h/b.hg', '/dest')) !== null).toBe(true);
    await first.release();
    expect((await s.claim('http://h/a.hg', 'http://h/a.hg', '/dest')) !== null).toBe(true);
  });

  it("a killed run's lock (dead pid on this host) is broken", async () => {
    const s = store();
    await leave(s, 'http://h/a.hg', 10, 50);
    const dead = spawnSync(process.execPath, [
      '-e',
      'process.stdout.write(String(process.pid))',
    ]).stdout.toString();
    symlinkSync(`${lockHostPrefix()}:${dead}`, join(s.policy.dir, `${partialKey('http://h/a.hg')}.lock`));
    const part = await s.claim('http://h/a.hg', 'http://h/a.hg', '/dest');
    expect(part?.resume?.have).toBe(10);
    await part?.release();
  });

  it('the oldest partials go first once the folder is over its bound', async () => {
    const s = store(2500);
    const old = await leave(s, 'http://h/old.hg', 1000, 9000, 1000);
    const mid = await leave(s, 'http://h/mid.hg', 1000, 9000, 2000);
    await leave(s, 'http://h/new.hg', 1000, 9000, 3000);
    // the next claim sees 3000 bytes over 2500: the oldest goes
    const again = (await s.claim('http://h/new.hg', 'http://h/new.hg', '/dest'))!;
    await again.release();
    const left = (await s.list()).map((p) => p.key);
    expect(left).not.toContain(old);
    expect(left).toContain(mid);
  });

  it('list reports sizes, totals and use; remove refuses keys that are not keys', async () => {
    const s = store();
    const key = await leave(s, 'http://h/a.hg', 300, 900);
    truncateSync(join(s.policy.dir, `${key}.part`), 200);
    expect(await s.list()).toMatchObject([
      { key, url: 'http://h/a.hg', bytes: 200, total: 900, inUse: false },
    ]);
    await expect(s.remove('../x')).rejects.toMatchObject({ code: 'USAGE' });
    expect(await s.remove(key)).toBe(true);
    expect(existsSync(join(s.policy.dir, `${key}.part`))).toBe(false);
    expect(await s.list()).toEqual([]);
  });
});

describe('defaultDownloadsDir', () => {
  it('SLUICE_CACHE_DIR first, then the platform cache folder', () => {
    expect(defaultDownloadsDir({ SLUICE_CACHE_DIR: '/c' }, 'linux')).toBe(join('/c', 'downloads'));
    expect(defaultDownloadsDir({ XDG_CACHE_HOME: '/x' }, 'linux')).toBe(join('/x', 'Sluice', 'downloads'));
    expect(defaultDownloadsDir({ LOCALAPPDATA: 'C:\\L' }, 'win32')).toBe(
      join('C:\\L', 'Sluice', 'downloads'),
    );
    expect(defaultDownloadsDir({}, 'darwin')).toMatch(/Library[/\\]Caches[/\\]Sluice[/\\]downloads$/);
    expect(defaultDownloadsPolicy({ SLUICE_DOWNLOADS_MAX_MB: '10' }).maxBytes).toBe(10 << 20);
    expect(defaultDownloadsPolicy({ SLUICE_DOWNLOADS_MAX_MB: 'lots' }).maxBytes).toBe(4 * 1024 ** 3);
  });
});
