import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HistoryStore, MAX_SAMPLES, ThroughputSampler } from '../../../src/main/host/history-store';
import type { HistoryRecord } from '../../../src/shared/ipc';

const record = (jobId: string, endedAt = 1): HistoryRecord => ({
  jobId,
  request: { kind: 'verify', repo: '/r' },
  state: 'done',
  startedAt: 0,
  endedAt,
});

describe('HistoryStore', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-history-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('persists records newest first across instances and caps their number', async () => {
    const file = join(dir, 'sub', 'history.json');
    const a = new HistoryStore(file, 3);
    for (const id of ['j1', 'j2', 'j3', 'j4']) await a.add(record(id));
    expect((await a.list()).map((r) => r.jobId)).toEqual(['j4', 'j3', 'j2']);
    const b = new HistoryStore(file, 3);
    expect((await b.list()).map((r) => r.jobId)).toEqual(['j4', 'j3', 'j2']);
    await b.clear();
    expect(await new HistoryStore(file).list()).toEqual([]);
  });

  it('keeps the last write when writes overlap and leaves no temporary file', async () => {
    const file = join(dir, 'history.json');
    const store = new HistoryStore(file);
    await Promise.all(Array.from({ length: 20 }, (_, i) => store.add(record(`j${i}`))));
    await store.flushed();
    const onDisk = JSON.parse(await readFile(file, 'utf8')) as { records: HistoryRecord[] };
    expect(onDisk.records).toHaveLength(20);
    expect(await readdir(dir)).toEqual(['history.json']);
  });

  it('sets a corrupt file aside instead of overwriting it', async () => {
    const file = join(dir, 'history.json');
    await writeFile(file, '{"version":1,"records":[');
    const store = new HistoryStore(file);
    expect(await store.list()).toEqual([]);
    await store.add(record('j1'));
    const names = await readdir(dir);
    expect(names.filter((n) => n.startsWith('history.json.corrupt-'))).toHaveLength(1);
  });
});

describe('ThroughputSampler', () => {
  it('keeps every sample of a short job', () => {
    const s = new ThroughputSampler();
    for (let i = 0; i < 150; i++) s.add(i * 100, i);
    expect(s.samples()).toHaveLength(150);
  });

  it('bounds a long job to MAX_SAMPLES evenly spread samples that reach the end', () => {
    const s = new ThroughputSampler();
    const n = 100_000;
    for (let i = 0; i < n; i++) s.add(i * 100, i);
    const out = s.samples();
    expect(out.length).toBeLessThanOrEqual(MAX_SAMPLES);
    expect(out.length).toBeGreaterThan(MAX_SAMPLES / 2);
    expect(out[0]).toEqual([0, 0]);
    expect(out.at(-1)![1]).toBeGreaterThan(n * 0.99);
    const gaps = out.slice(1).map((x, i) => x[1] - out[i]![1]);
    const inner = gaps.slice(0, -1);
    expect(Math.max(...inner) / Math.min(...inner)).toBeLessThanOrEqual(2);
  });
});
