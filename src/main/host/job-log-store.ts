// The debug logs of the host's jobs (hg --debug style lines: `adding [s] data/foo.i (66 bytes)`),
// kept where they are made instead of in the renderer. The engine worker formats a job's lines and
// sends them as one text chunk per batch, so the main thread only appends strings (nothing per
// file); a running job's chunks form a bounded ring in memory, a finished job's log is written to
// the data dir (`logs/<jobId>.log` plus a small chunk index) and read back page by page when the
// log dialog shows or exports it, after a reload or a restart too. The renderer receives only line
// counts and the pages on screen.

import type { JobLogPage } from '../../shared/ipc';
import { mkdir, open, readdir, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from './engine-api';

/** Lines a job's log keeps; older ones are dropped a chunk at a time (the count says how many). */
export const LOG_LINE_CAP = 300_000;
/** Finished jobs whose logs stay on disk (oldest removed first; the history keeps 500 records). */
export const MAX_LOGS_ON_DISK = 200;
/** Largest page a caller gets at once. */
export const MAX_PAGE_LINES = 2000;

const INDEX_VERSION = 1;

export interface LogCounts {
  /** retained lines */
  total: number;
  /** lines dropped from the head once the cap was reached */
  dropped: number;
}

/** A page as job:log returns it (the IPC contract's one definition). */
export type LogPage = JobLogPage;

interface Chunk {
  /** '\n'-terminated lines */
  text: string;
  lines: number;
}

interface LiveLog {
  chunks: Chunk[];
  lines: number;
  dropped: number;
}

interface LogIndex {
  version: number;
  dropped: number;
  lines: number;
  /** per chunk: [first line, byte offset] into the .log file */
  chunks: [number, number][];
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
    if (lines <= 0) return;
    let log = this.live.get(jobId);
    if (!log) this.live.set(jobId, (log = { chunks: [], lines: 0, dropped: 0 }));
    log.chunks.push({ text, lines });
    log.lines += lines;
    // Whole chunks leave the head, so appending stays O(1) and nothing is split.
    while (log.lines > this.cap && log.chunks.length > 1) {
      const head = log.chunks.shift()!;
      log.lines -= head.lines;
      log.dropped += head.lines;
    }
  }

  /** Appends lines the host itself writes (a crash, a terminated engine). */
  appendLines(jobId: string, lines: readonly string[]): void {
    if (lines.length > 0) this.append(jobId, lines.map((l) => `${l}\n`).join(''), lines.length);
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
      const index: LogIndex = { version: INDEX_VERSION, dropped: log.dropped, lines: log.lines, chunks: [] };
      let line = 0;
      let offset = 0;
      for (const c of log.chunks) {
        index.chunks.push([line, offset]);
        line += c.lines;
        offset += Buffer.byteLength(c.text);
      }
      const base = join(this.dir, jobId);
      // The log first, its index last: an index on disk always describes a complete log.
      await writeFileAtomic(`${base}.log`, log.chunks.map((c) => c.text).join(''));
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
    if (live) return liveSource(live);
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

interface LogSource extends LogCounts {
  read(from: number, count: number): Promise<string[]>;
  all(): Promise<string>;
}

/** Chunk k covers lines [starts[k], starts[k] + lines of k). */
function chunkAt(starts: readonly number[], line: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid]! <= line) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

function splitLines(text: string): string[] {
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

function liveSource(log: LiveLog): LogSource {
  const starts: number[] = [];
  let n = 0;
  for (const c of log.chunks) {
    starts.push(n);
    n += c.lines;
  }
  return {
    total: log.lines,
    dropped: log.dropped,
    async read(from, count) {
      const end = Math.min(log.lines, from + count);
      if (from >= end) return [];
      const out: string[] = [];
      for (let k = chunkAt(starts, from); k < log.chunks.length && starts[k]! < end; k++) {
        const lines = splitLines(log.chunks[k]!.text);
        const a = Math.max(0, from - starts[k]!);
        const b = Math.min(lines.length, end - starts[k]!);
        for (let i = a; i < b; i++) out.push(lines[i]!);
      }
      return out;
    },
    async all() {
      return log.chunks.map((c) => c.text).join('');
    },
  };
}

async function diskSource(base: string): Promise<LogSource | null> {
  let index: LogIndex;
  try {
    index = JSON.parse(await readFile(`${base}.json`, 'utf8')) as LogIndex;
    if (index.version !== INDEX_VERSION || !Array.isArray(index.chunks)) return null;
  } catch {
    return null;
  }
  const starts = index.chunks.map((c) => c[0]);
  return {
    total: index.lines,
    dropped: index.dropped,
    async read(from, count) {
      const end = Math.min(index.lines, from + count);
      if (from >= end || index.chunks.length === 0) return [];
      const k0 = chunkAt(starts, from);
      let k1 = chunkAt(starts, end - 1);
      const byteStart = index.chunks[k0]![1];
      const byteEnd = k1 + 1 < index.chunks.length ? index.chunks[++k1]![1] : undefined;
      const fh = await open(`${base}.log`, 'r');
      try {
        const size = byteEnd ?? (await fh.stat()).size;
        const buf = Buffer.alloc(size - byteStart);
        await fh.read(buf, 0, buf.length, byteStart);
        const lines = splitLines(buf.toString('utf8'));
        const skip = from - starts[k0]!;
        return lines.slice(skip, skip + (end - from));
      } finally {
        await fh.close();
      }
    },
    async all() {
      return readFile(`${base}.log`, 'utf8').catch(() => '');
    },
  };
}
