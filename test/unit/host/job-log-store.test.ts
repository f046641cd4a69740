import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JobLogStore } from '../../../src/main/host/job-log-store';

const lines = (from: number, n: number) =>
  Array.from({ length: n }, (_, i) => `adding [s] data/file${from + i}.i (${from + i} bytes)`);
const chunk = (from: number, n: number) =>
  lines(from, n)
    .map((l) => `${l}\n`)
    .join('');

describe('JobLogStore', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-logs-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('serves pages of a running log from memory and of a finished one from disk, identically', async () => {
    const store = new JobLogStore(join(dir, 'logs'));
    for (let c = 0; c < 10; c++) store.append('j', chunk(c * 1000, 1000), 1000);
    expect(store.counts('j')).toEqual({ total: 10_000, dropped: 0 });
    const live = await store.page('j', 1990, 30);
    expect(live.lines).toEqual(lines(1990, 30));
    expect(live).toMatchObject({ total: 10_000, dropped: 0, from: 1990 });
    await store.finish('j');
    expect(store.counts('j')).toEqual({ total: 0, dropped: 0 }); // memory freed
    expect(await readdir(join(dir, 'logs'))).toEqual(['j.json', 'j.log']);
    // a new store (a restart) reads the same pages
    const again = new JobLogStore(join(dir, 'logs'));
    expect((await again.page('j', 1990, 30)).lines).toEqual(lines(1990, 30));
    expect((await again.page('j', 9995, 100)).lines).toEqual(lines(9995, 5));
    expect((await again.page('j', 0, 5000)).lines).toHaveLength(2000);
    expect(await again.page('unknown', 0, 5)).toEqual({ from: 0, lines: [], total: 0, dropped: 0 });
  });

  it('filters case-insensitively, in memory and on disk, and extends the matches as the log grows', async () => {
    const store = new JobLogStore(join(dir, 'logs'));
    store.append('j', chunk(0, 100), 100);
    const first = await store.page('j', 0, 50, 'FILE7');
    expect(first.matches).toBe(11); // file7, file70..79
    expect(first.lines[0]).toBe('adding [s] data/file7.i (7 bytes)');
    expect(first.lineNumbers?.slice(0, 2)).toEqual([8, 71]);
    store.append('j', chunk(100, 100), 100);
    expect((await store.page('j', 0, 50, 'file7')).matches).toBe(11);
    store.append('j', chunk(700, 10), 10);
    expect((await store.page('j', 0, 50, 'file7')).matches).toBe(21);
    await store.finish('j');
    const onDisk = await store.page('j', 11, 50, 'file7');
    expect(onDisk.matches).toBe(21);
    // each match keeps its number in the whole log (line 701 is file700)
    expect(onDisk.lineNumbers).toEqual(Array.from({ length: 10 }, (_, k) => 201 + k));
    expect(onDisk.lines).toEqual(lines(700, 10));
  });

  it('keeps at most `cap` lines, dropping whole chunks from the head, and says so in the export', async () => {
    const store = new JobLogStore(join(dir, 'logs'), 3000);
    for (let c = 0; c < 5; c++) store.append('j', chunk(c * 1000, 1000), 1000);
    expect(store.counts('j')).toEqual({ total: 3000, dropped: 2000 });
    expect((await store.page('j', 0, 1)).lines).toEqual(lines(2000, 1));
    await store.finish('j');
    const text = await store.text('j', '# Sluice apply');
    const out = text.split('\n');
    expect(out[0]).toBe('# Sluice apply');
    expect(out[1]).toBe('# 2000 earlier lines were dropped (the log keeps the last 3000)');
    expect(out.slice(2, -1)).toEqual(lines(2000, 3000));
  });

  it('keeps the logs of the newest finished jobs only, and clear() removes them', async () => {
    const store = new JobLogStore(join(dir, 'logs'), 1000, 3);
    for (let j = 0; j < 5; j++) {
      store.append(`j${j}`, chunk(0, 2), 2);
      await store.finish(`j${j}`);
      await new Promise((r) => setTimeout(r, 5));
    }
    expect((await readdir(join(dir, 'logs'))).sort()).toEqual([
      'j2.json',
      'j2.log',
      'j3.json',
      'j3.log',
      'j4.json',
      'j4.log',
    ]);
    await store.clear();
    expect(await readdir(join(dir, 'logs'))).toEqual([]);
  });
});
