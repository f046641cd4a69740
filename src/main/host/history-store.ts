// Finished jobs, persisted as one JSON file (Electron: userData/history.json; web host: its data
// dir), newest first, capped. Writes go to a temporary file renamed over the old one, one at a
// time, so a crash mid-write leaves the previous history, never half a file. A file that does not
// parse is set aside (history.json.corrupt-<time>) rather than silently overwritten.

import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { HistoryRecord } from '../../shared/ipc';

export const HISTORY_FILE_VERSION = 1;
export const MAX_SAMPLES = 200;

interface HistoryFile {
  version: number;
  records: HistoryRecord[];
}

export class HistoryStore {
  private records: HistoryRecord[] | null = null;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    readonly file: string,
    private readonly maxRecords = 500,
  ) {}

  /** Newest first. */
  async list(): Promise<HistoryRecord[]> {
    return (await this.load()).slice();
  }

  async add(record: HistoryRecord): Promise<void> {
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
  flushed(): Promise<void> {
    return this.writing;
  }

  private async load(): Promise<HistoryRecord[]> {
    if (this.records) return this.records;
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') console.warn(`history: cannot read ${this.file}:`, e);
      return (this.records ??= []);
    }
    try {
      const parsed = JSON.parse(text) as HistoryFile;
      if (parsed.version !== HISTORY_FILE_VERSION || !Array.isArray(parsed.records)) throw new Error('unexpected shape');
      this.records ??= parsed.records.filter((r) => r && typeof r.jobId === 'string');
    } catch (e) {
      const aside = `${this.file}.corrupt-${Date.now()}`;
      console.warn(`history: ${this.file} is not readable (${(e as Error).message}); moved to ${aside}`);
      await rename(this.file, aside).catch(() => {});
      this.records ??= [];
    }
    return this.records;
  }

  private save(): Promise<void> {
    const snapshot: HistoryFile = { version: HISTORY_FILE_VERSION, records: this.records ?? [] };
    const text = JSON.stringify(snapshot);
    const write = async () => {
      await mkdir(dirname(this.file), { recursive: true });
      const tmp = `${this.file}.${process.pid}.tmp`;
      await writeFile(tmp, text);
      await rename(tmp, this.file);
    };
    this.writing = this.writing.then(write, write);
    return this.writing;
  }
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
