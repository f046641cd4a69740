// The renderer's window on a job's debug log. The lines stay in the host (a 200k-file clone has
// 200k of them; the host keeps them in a bounded ring and on disk, see main/host/job-log-store.ts):
// the renderer knows only their count (pushed with the job's events) and fetches the pages the log
// view shows (`job:log`), for a running job, a finished one, and one from an earlier session alike.

import type { JobLogPage } from '../../../shared/ipc';

/** Lines fetched at once: a screenful or two of 20 px rows. */
export const LOG_PAGE_LINES = 200;

export type FetchLogPage = (from: number, count: number) => Promise<JobLogPage>;

/**
 * Pages of one job's log (or of its lines matching one query), fetched on demand and cached. A
 * live log grows: `grow()` drops the cached page that was still filling up. `onChange` is called
 * when fetched lines or the counts arrive.
 */
export class LogPages {
  private readonly pages = new Map<number, string[]>();
  /** a filtered view's line numbers in the whole log, per page */
  private readonly numbers = new Map<number, number[]>();
  private readonly pending = new Set<number>();
  /** lines in the view: the log's lines, or the matches with a query */
  length = 0;
  /** the whole log's lines (without a query, equal to length) */
  total = 0;
  dropped = 0;
  /** whether the host answered at least once (before that, the counts are the pushed ones) */
  loaded = false;
  private disposed = false;

  constructor(
    private readonly fetch: FetchLogPage,
    private readonly onChange: () => void,
    private readonly filtered = false,
  ) {}

  /** Line i of the view if its page is here; otherwise undefined (ensure() fetches it). */
  line(i: number): string | undefined {
    return this.pages.get(Math.floor(i / LOG_PAGE_LINES))?.[i % LOG_PAGE_LINES];
  }

  /** Line i's number in the whole log: i-based without a filter, the host's number with one. */
  lineNumber(i: number): number | undefined {
    if (!this.filtered) return this.dropped + i + 1;
    return this.numbers.get(Math.floor(i / LOG_PAGE_LINES))?.[i % LOG_PAGE_LINES];
  }

  /** Fetches the pages covering [first, last) that are not here or on their way. */
  ensure(first: number, last: number): void {
    const end = Math.max(last, first + 1);
    for (let p = Math.floor(first / LOG_PAGE_LINES); p * LOG_PAGE_LINES < end; p++) {
      if (this.pages.has(p) || this.pending.has(p)) continue;
      this.pending.add(p);
      this.fetch(p * LOG_PAGE_LINES, LOG_PAGE_LINES).then(
        (page) => {
          this.pending.delete(p);
          if (this.disposed) return;
          this.pages.set(p, page.lines);
          if (page.lineNumbers) this.numbers.set(p, page.lineNumbers);
          this.counts(page);
          this.onChange();
        },
        () => this.pending.delete(p),
      );
    }
  }

  /**
   * The host's log now has `total` lines (`dropped` dropped): the page that was filling up is
   * fetched again when shown; dropped lines shift every index, so then everything is.
   */
  grow(total: number, dropped: number): void {
    if (dropped !== this.dropped && this.loaded) this.pages.clear();
    else if (!this.filtered) {
      const last = Math.floor(Math.max(0, this.length - 1) / LOG_PAGE_LINES);
      if ((this.pages.get(last)?.length ?? 0) < LOG_PAGE_LINES) this.pages.delete(last);
    } else {
      // a filter's matches can grow anywhere after the last full page of matches: refetch its tail
      const last = Math.floor(Math.max(0, this.length - 1) / LOG_PAGE_LINES);
      this.pages.delete(last);
    }
    if (!this.filtered && total > this.length) this.length = total;
    if (total > this.total) this.total = total;
    this.dropped = dropped;
  }

  dispose(): void {
    this.disposed = true;
  }

  private counts(page: JobLogPage): void {
    this.loaded = true;
    this.total = page.total;
    this.dropped = page.dropped;
    this.length = this.filtered ? (page.matches ?? 0) : page.total;
  }
}
