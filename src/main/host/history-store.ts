// Finished jobs, persisted as one JSON file (Electron: userData/history.json; web host: its data
// dir), newest first, capped; written atomically and set aside when corrupt (json-file.ts).

import { JsonFile } from './engine-api';
import type { HistoryRecord } from '../../shared/ipc';

export const HISTORY_FILE_VERSION = 1;
export const MAX_SAMPLES = 200;

interface HistoryFile {
  version: number;
  records: HistoryRecord[];
}

export class HistoryStore {
  private records: HistoryRecord[] | null = null;
  /** jobs this host started and has not ended: their records say `interrupted` only on disk */
  private readonly live = new Set<string>();
  private readonly pending = new Set<Promise<void>>();
  private readonly json: JsonFile<HistoryFile>;

  constructor(
    readonly file: string,
    private readonly maxRecords = 500,
  ) {
    this.json = new JsonFile(file, parseHistoryFile, 'history');
  }

  /** Newest first; a job this host is still running is not history yet. */
  async list(): Promise<HistoryRecord[]> {
    return (await this.load()).filter((r) => !this.live.has(r.jobId));
  }

  /**
   * Records a job that started as `interrupted` before it runs: if this host stops before the
   * job's add(), the next host finds it so, and the app offers Resume.
   */
  async started(record: HistoryRecord): Promise<void> {
    this.live.add(record.jobId);
    await this.put({ ...record, state: 'interrupted' });
  }

  /** Records a job that ended (replacing its started() record). */
  async add(record: HistoryRecord): Promise<void> {
    this.live.delete(record.jobId);
    await this.put(record);
  }

  private put(record: HistoryRecord): Promise<void> {
    // flushed() waits for puts still reading the file, not only for writes already queued
    const done = this.write(record);
    this.pending.add(done);
    return done.finally(() => this.pending.delete(done));
  }

  private async write(record: HistoryRecord): Promise<void> {
    const records = await this.load();
    const at = records.findIndex((r) => r.jobId === record.jobId);
    if (at >= 0) records.splice(at, 1);
    records.unshift(record);
    if (records.length > this.maxRecords) records.length = this.maxRecords;
    await this.save();
  }

  async clear(): Promise<void> {
    this.records = [];
    await this.save();
  }

  /** Resolves when every write queued so far is on disk. */
  async flushed(): Promise<void> {
    await Promise.allSettled([...this.pending]);
    return this.json.flushed();
  }

  private async load(): Promise<HistoryRecord[]> {
    if (this.records) return this.records;
    const parsed = await this.json.read();
    this.records ??= parsed?.records ?? [];
    return this.records;
  }

  private save(): Promise<void> {
    return this.json.write({ version: HISTORY_FILE_VERSION, records: this.records ?? [] });
  }
}

function parseHistoryFile(value: unknown): HistoryFile {
  const parsed = value as HistoryFile;
  if (!parsed || parsed.version !== HISTORY_FILE_VERSION || !Array.isArray(parsed.records))
    throw new Error('unexpected shape');
  return { version: parsed.version, records: parsed.records.filter((r) => r && typeof r.jobId === 'string') };
}

/**
 * Throughput over time for the history chart, in bounded memory: keeps every `stride`-th sample
 * and doubles the stride (dropping every other kept sample) whenever 2 x MAX_SAMPLES are held, so
 * a job of any length ends with between MAX_SAMPLES and 2 x MAX_SAMPLES evenly spaced samples,
 * then `samples()` thins them to at most MAX_SAMPLES.
 */
export class ThroughputSampler {
  private kept: [number, number][] = [];
  private stride = 1;
  private seen = 0;

  constructor(private readonly max = MAX_SAMPLES) {}

  add(elapsedMs: number, bytesPerSec: number): void {
    if (this.seen++ % this.stride !== 0) return;
    this.kept.push([Math.round(elapsedMs), Math.round(bytesPerSec)]);
    if (this.kept.length >= 2 * this.max) {
      this.kept = this.kept.filter((_, i) => i % 2 === 0);
      this.stride *= 2;
    }
  }

  samples(): [number, number][] {
    if (this.kept.length <= this.max) return this.kept.slice();
    const out: [number, number][] = [];
    const step = this.kept.length / this.max;
    for (let i = 0; i < this.max; i++) out.push(this.kept[Math.floor(i * step)]!);
    // The last sample is the end of the job: keep it so the chart reaches the end.
    out[out.length - 1] = this.kept[this.kept.length - 1]!;
    return out;
  }
}
