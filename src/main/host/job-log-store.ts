// The debug logs of the host's jobs (hg --debug style lines: `adding [s] data/foo.i (66 bytes)`),
// kept where they are made instead of in the renderer. The engine worker sends a job's lines as
// one compact chunk per batch (a file's line is its vfs, name and size: job-log-lines.ts), so the
// main thread only keeps chunks (nothing per file); a running job's chunks form a bounded ring in
// memory, a finished job's are written to the data dir (job-log-file.ts) and read back page by page
// when the log dialog shows or exports them, after a reload or a restart too. Lines are formatted
// only then. The renderer receives only line counts and the pages on screen.

import type { JobLogPage } from '../../shared/ipc';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from './engine-api';
import { textChunk, type LogChunk } from '../../shared/job-log-lines';
import { diskSource, encodeLog, liveSource, type LogCounts, type LogSource } from './job-log-file';

export type { LogCounts } from './job-log-file';

/** Lines a job's log keeps; older ones are dropped a chunk at a time (the count says how many). */
export const LOG_LINE_CAP = 300_000;
/** Finished jobs whose logs stay on disk (oldest removed first; the history keeps 500 records). */
export const MAX_LOGS_ON_DISK = 200;
/** Largest page a caller gets at once. */
export const MAX_PAGE_LINES = 2000;

/** A page as job:log returns it (the IPC contract's one definition). */
export type LogPage = JobLogPage;

interface LiveLog {
  chunks: LogChunk[];
  lines: number;
  dropped: number;
}

/** A filter's matches, extended as the log grows (the log dialog types a query once, lines keep coming). */
interface FilterCache {
  jobId: string;
  needle: string;
  dropped: number;
  scannedLines: number;
  matches: number[];
}

export class JobLogStore {
  private readonly live = new Map<string, LiveLog>();
  private readonly writes = new Map<string, Promise<void>>();
  private filter: FilterCache | null = null;

  constructor(
    readonly dir: string,
    private readonly cap = LOG_LINE_CAP,
    private readonly maxOnDisk = MAX_LOGS_ON_DISK,
  ) {}

  /** Appends a chunk of `lines` '\n'-terminated lines to a running job's log. */
  append(jobId: string, text: string, lines: number): void {
    if (lines > 0) this.appendChunk(jobId, textChunk(text.split('\n').slice(0, lines)));
  }

  /** Appends a chunk of lines to a running job's log. */
  appendChunk(jobId: string, chunk: LogChunk): void {
    if (chunk.lines <= 0) return;
    let log = this.live.get(jobId);
    if (!log) this.live.set(jobId, (log = { chunks: [], lines: 0, dropped: 0 }));
    log.chunks.push(chunk);
    log.lines += chunk.lines;
    // Whole chunks leave the head, so appending stays O(1) and nothing is split.
    while (log.lines > this.cap && log.chunks.length > 1) {
      const head = log.chunks.shift()!;
      log.lines -= head.lines;
      log.dropped += head.lines;
    }
  }

  /** Appends lines the host itself writes (a crash, a terminated engine). */
  appendLines(jobId: string, lines: readonly string[]): void {
    this.appendChunk(jobId, textChunk(lines));
  }

  counts(jobId: string): LogCounts {
    const log = this.live.get(jobId);
    return log ? { total: log.lines, dropped: log.dropped } : { total: 0, dropped: 0 };
  }

  /**
   * Writes a finished job's log to disk and frees its memory. Resolves once it is there (a page
   * asked for meanwhile is served from memory until then).
   */
  finish(jobId: string): Promise<void> {
    const log = this.live.get(jobId) ?? { chunks: [], lines: 0, dropped: 0 };
    const write = (async () => {
      await mkdir(this.dir, { recursive: true });
      const { data, index } = encodeLog(log.chunks, log.dropped);
      const base = join(this.dir, jobId);
      // The log first, its index last: an index on disk always describes a complete log.
      await writeFileAtomic(`${base}.log`, data);
      await writeFileAtomic(`${base}.json`, JSON.stringify(index));
      await this.prune();
    })()
      .catch((e: unknown) => console.warn(`job log: cannot save the log of ${jobId}:`, e))
      .finally(() => {
        this.live.delete(jobId);
        this.writes.delete(jobId);
      });
    this.writes.set(jobId, write);
    return write;
  }

  /**
   * Lines [from, from + count) of a job's log, or of the lines matching `query` (case-insensitive
   * substring, as the log dialog's filter) when one is given.
   */
  async page(jobId: string, from: number, count: number, query = ''): Promise<LogPage> {
    count = Math.max(0, Math.min(count, MAX_PAGE_LINES));
    from = Math.max(0, from);
    const needle = query.trim().toLowerCase();
    const source = await this.source(jobId);
    if (!source) return { from, lines: [], total: 0, dropped: 0, ...(needle ? { matches: 0 } : {}) };
    if (!needle)
      return { from, lines: await source.read(from, count), total: source.total, dropped: source.dropped };
    const matches = await this.matches(jobId, needle, source);
    const wanted = matches.slice(from, from + count);
    const out: string[] = [];
    // matches are ascending: read the span they cover once
    if (wanted.length > 0) {
      const span = await source.read(wanted[0]!, wanted[wanted.length - 1]! - wanted[0]! + 1);
      for (const i of wanted) out.push(span[i - wanted[0]!] ?? '');
    }
    return {
      from,
      lines: out,
      // the matching lines' numbers in the whole log, as the unfiltered view numbers them
      lineNumbers: wanted.map((i) => source.dropped + i + 1),
      total: source.total,
      dropped: source.dropped,
      matches: matches.length,
    };
  }

  /** The whole retained log as text (export), with a header and a note about dropped lines. */
  async text(jobId: string, header?: string): Promise<string> {
    const source = await this.source(jobId);
    const head: string[] = [];
    if (header) head.push(header);
    if (source && source.dropped > 0)
      head.push(`# ${source.dropped} earlier lines were dropped (the log keeps the last ${this.cap})`);
    const body = source ? await source.all() : '';
    return (head.length ? head.join('\n') + '\n' : '') + body;
  }

  /** Removes every finished job's log (history cleared). Running jobs keep theirs. */
  async clear(): Promise<void> {
    await Promise.all(this.writes.values());
    let names: string[] = [];
    try {
      names = await readdir(this.dir);
    } catch {
      return;
    }
    await Promise.all(names.map((n) => rm(join(this.dir, n), { force: true })));
  }

  private async matches(jobId: string, needle: string, source: LogSource): Promise<number[]> {
    let f = this.filter;
    if (
      !f ||
      f.jobId !== jobId ||
      f.needle !== needle ||
      f.dropped !== source.dropped ||
      f.scannedLines > source.total
    ) {
      f = this.filter = { jobId, needle, dropped: source.dropped, scannedLines: 0, matches: [] };
    }
    if (f.scannedLines < source.total) {
      const lines = await source.read(f.scannedLines, source.total - f.scannedLines);
      for (let i = 0; i < lines.length; i++)
        if (lines[i]!.toLowerCase().includes(needle)) f.matches.push(f.scannedLines + i);
      f.scannedLines += lines.length;
    }
    return f.matches;
  }

  private async source(jobId: string): Promise<LogSource | null> {
    const live = this.live.get(jobId);
    if (live) return liveSource(live.chunks, { total: live.lines, dropped: live.dropped });
    await this.writes.get(jobId);
    return diskSource(join(this.dir, jobId));
  }

  private async prune(): Promise<void> {
    const names = (await readdir(this.dir)).filter((n) => n.endsWith('.json'));
    if (names.length <= this.maxOnDisk) return;
    const dated = await Promise.all(
      names.map(async (n) => ({ n, t: (await stat(join(this.dir, n)).catch(() => null))?.mtimeMs ?? 0 })),
    );
    dated.sort((a, b) => a.t - b.t);
    for (const { n } of dated.slice(0, dated.length - this.maxOnDisk)) {
      const base = join(this.dir, n.slice(0, -'.json'.length));
      await rm(`${base}.json`, { force: true });
      await rm(`${base}.log`, { force: true });
    }
  }
}
