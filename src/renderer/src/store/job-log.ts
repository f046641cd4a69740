// The per-job debug log: hg-style lines (`adding [s] data/foo.i (66 bytes)`). A 200k-file clone
// produces 200k lines; copying such an array on every frame would cost more than the transfer, so
// the lines live in this append-only buffer and the store only publishes its line count (through
// `set`), which is what components re-render on.

export const LOG_LINE_CAP = 300_000;

export class JobLog {
  private lines: string[] = [];
  /** lines dropped from the head once the cap was reached */
  dropped = 0;

  constructor(readonly cap: number = LOG_LINE_CAP) {}

  get length(): number {
    return this.lines.length;
  }

  /** total lines ever appended, dropped ones included */
  get total(): number {
    return this.dropped + this.lines.length;
  }

  append(line: string): void {
    this.lines.push(line);
    if (this.lines.length > this.cap) this.trim();
  }

  appendMany(lines: readonly string[]): void {
    for (const line of lines) this.lines.push(line);
    if (this.lines.length > this.cap) this.trim();
  }

  line(i: number): string {
    return this.lines[i] ?? '';
  }

  /** Drops a tenth of the cap at once so a long transfer does not shift the array on every line. */
  private trim(): void {
    const excess = this.lines.length - this.cap + Math.floor(this.cap / 10);
    this.lines.splice(0, excess);
    this.dropped += excess;
  }

  /** The whole retained log as text, for file:writeText. */
  toText(header?: string): string {
    const head: string[] = [];
    if (header) head.push(header);
    if (this.dropped > 0)
      head.push(`# ${this.dropped} earlier lines were dropped (the log keeps the last ${this.cap})`);
    const body = this.lines.join('\n');
    return (head.length ? head.join('\n') + '\n' : '') + body + (this.lines.length ? '\n' : '');
  }
}

/**
 * Case-insensitive substring filter over a growing log, incremental: a live transfer appends lines
 * every frame and the filter only scans what is new. Indexes are into the log's retained lines.
 */
export class LogFilter {
  private matches: number[] = [];
  private scanned = 0;
  private droppedAtScan = 0;
  private needle = '';

  constructor(private readonly log: JobLog) {}

  /** Indexes of matching lines for `query` (empty query: null, meaning every line). */
  update(query: string): readonly number[] | null {
    const needle = query.trim().toLowerCase();
    if (needle === '') return null;
    if (needle !== this.needle || this.log.dropped !== this.droppedAtScan) {
      this.needle = needle;
      this.matches = [];
      this.scanned = 0;
      this.droppedAtScan = this.log.dropped;
    }
    const n = this.log.length;
    for (let i = this.scanned; i < n; i++) {
      if (this.log.line(i).toLowerCase().includes(needle)) this.matches.push(i);
    }
    this.scanned = n;
    return this.matches;
  }
}
