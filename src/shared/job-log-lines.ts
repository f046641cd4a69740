// A job's events as the lines of its debug log, in hg's words where hg has them (streamclone.py:
// "N files to transfer, X of data", "adding [s] data/foo.i (66 bytes)", "transferred X in S
// seconds (R/sec)"). Runs in the app's engine worker, next to the engine. A file's line is kept as
// its vfs, name and size (LogChunk) and written out as text only when the log is read (a page on
// screen, a filter, an export): a job with tens of thousands of files would otherwise build, join
// and collect as many strings that nobody may ever look at. The host's JobLogStore keeps the chunks.

import {
  debugLine,
  formatHgBytes,
  transferredLine,
  type JobKind,
  type JobPhase,
  type SluiceEvent,
  type VfsKey,
} from './events';

/** A run of consecutive lines of a job's debug log, compact. */
export interface LogChunk {
  lines: number;
  /** per line: 0 for a text line, else the char code of a file line's vfs key */
  kinds: Uint8Array<ArrayBuffer>;
  /** per line: a file line's size in bytes (0 for a text line) */
  sizes: Float64Array<ArrayBuffer>;
  /** per line: where its text (a text line) or its file's name (a file line) ends in `strings` */
  ends: Uint32Array<ArrayBuffer>;
  strings: string;
}

const TEXT_LINE = 0;

/** Line `i` of `chunk` as the log shows it. */
export function chunkLine(chunk: LogChunk, i: number): string {
  const text = chunk.strings.slice(i === 0 ? 0 : chunk.ends[i - 1], chunk.ends[i]);
  const kind = chunk.kinds[i]!;
  if (kind === TEXT_LINE) return text;
  return debugLine({ vfs: String.fromCharCode(kind) as VfsKey, name: text, size: chunk.sizes[i]! });
}

/** Lines [from, to) of `chunk` as the log shows them. */
export function chunkLines(chunk: LogChunk, from = 0, to = chunk.lines): string[] {
  const out: string[] = [];
  for (let i = Math.max(0, from); i < Math.min(to, chunk.lines); i++) out.push(chunkLine(chunk, i));
  return out;
}

/** A chunk of text lines (the host's own lines, an old log's text). */
export function textChunk(lines: readonly string[]): LogChunk {
  const builder = new JobLogLines();
  for (const line of lines) builder.text(line);
  return builder.take() ?? emptyChunk();
}

function emptyChunk(): LogChunk {
  return {
    lines: 0,
    kinds: new Uint8Array(0),
    sizes: new Float64Array(0),
    ends: new Uint32Array(0),
    strings: '',
  };
}

export class JobLogLines {
  // plain arrays while the job adds lines (a push each), typed arrays once taken
  private kinds: number[] = [];
  private sizes: number[] = [];
  private strings: string[] = [];
  private announced = false;
  private kind: JobKind | undefined;
  private phase: JobPhase | undefined;

  /** Adds the lines `event` stands for. */
  add(event: SluiceEvent): void {
    switch (event.type) {
      case 'start':
        this.kind = event.kind;
        if (event.kind === 'clone') this.text('streaming all changes');
        if (event.files > 0) this.announce(event.files, event.bytes);
        break;
      case 'phase':
        if (event.phase !== this.phase) {
          this.phase = event.phase;
          this.text(`phase: ${event.phase}`);
        }
        break;
      case 'progress':
        if (event.totalFiles > 0) this.announce(event.totalFiles, event.totalBytes);
        break;
      case 'files':
        for (const entry of event.entries) {
          this.kinds.push(entry.vfs.charCodeAt(0));
          this.sizes.push(entry.size);
          this.strings.push(entry.name);
        }
        break;
      case 'log':
        this.text(event.level === 'warn' ? `warning: ${event.message}` : event.message);
        break;
      case 'done':
        if (this.kind === 'clone' || this.kind === 'apply')
          this.text(transferredLine(event.bytes, event.wallMs));
        break;
      case 'error':
        this.text(`abort: ${event.message}`);
        break;
    }
  }

  /** Adds one text line. */
  text(line: string): void {
    this.kinds.push(TEXT_LINE);
    this.sizes.push(0);
    this.strings.push(line);
  }

  get pending(): number {
    return this.kinds.length;
  }

  /** The lines added since the last take, compact. */
  take(): LogChunk | undefined {
    const n = this.kinds.length;
    if (n === 0) return undefined;
    const ends = new Uint32Array(n);
    let end = 0;
    for (let i = 0; i < n; i++) ends[i] = end += this.strings[i]!.length;
    const chunk: LogChunk = {
      lines: n,
      kinds: Uint8Array.from(this.kinds),
      sizes: Float64Array.from(this.sizes),
      ends,
      strings: this.strings.join(''),
    };
    this.kinds = [];
    this.sizes = [];
    this.strings = [];
    return chunk;
  }

  /** The lines added since the last take, as the log shows them. */
  takeLines(): string[] {
    const chunk = this.take();
    return chunk ? chunkLines(chunk) : [];
  }

  private announce(files: number, bytes: number): void {
    if (this.announced) return;
    this.announced = true;
    this.text(`${files} files to transfer, ${formatHgBytes(bytes)} of data`);
  }
}
