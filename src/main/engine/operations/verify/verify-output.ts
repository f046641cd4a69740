// What verify reports: hg verify's output lines, the problems among them, and the report a verify
// job resolves with. A Sink counts problems like verify.py's verifier._err/_warn.
import { isSluiceError } from '../../errors';
import { reasonOf } from './filelog-scan';

/** One line of `hg verify` output: `out` = ui.status (stdout), `err` = ui.warn (stderr). */
export interface VerifyLine {
  stream: 'out' | 'err';
  text: string;
}

export interface VerifyProblem {
  level: 'error' | 'warning';
  /** the line as hg prints it */
  text: string;
  /** changeset the problem belongs to (errors only; null = unknown, hg's `?`) */
  linkrev?: number | null;
  /** file path, `changelog` or `manifest` when the message names one */
  revlog?: string;
}

export interface VerifyReport {
  repo: string;
  changesets: number;
  /** filelog revisions checked (hg's "changes") */
  changes: number;
  files: number;
  errors: number;
  warnings: number;
  firstDamagedChangeset?: number;
  fncacheHint: boolean;
  problems: VerifyProblem[];
  lines: VerifyLine[];
  /** lines emitted but not kept in `lines`/`problems` (beyond MAX_REPORT_LINES) */
  linesDropped: number;
  /** filelogs read by worker threads (the rest were read on verify's own thread) */
  workerScans: number;
  /** store bytes of the revlogs checked, and how many revlog files (index + data) */
  bytes: number;
  revlogFiles: number;
  wallMs: number;
}

/** Output of one verify stage: counts problems like verifier._err/_warn and keeps the lines. */
export class Sink {
  errors = 0;
  warnings = 0;
  /** min of verifier.badrevs (all that hg's summary uses of it) */
  firstBadrev: number | undefined;
  readonly items: { line: VerifyLine; problem?: VerifyProblem }[] = [];

  constructor(private readonly live?: (line: VerifyLine, problem?: VerifyProblem) => void) {}

  private push(line: VerifyLine, problem?: VerifyProblem): void {
    if (this.live) this.live(line, problem);
    else this.items.push({ line, problem });
  }
  status(text: string): void {
    this.push({ stream: 'out', text });
  }
  /** ui.warn without counting (summary lines, hints) */
  note(text: string): void {
    this.push({ stream: 'err', text });
  }
  /** verifier._warn */
  warn(text: string): void {
    this.warnings++;
    this.push({ stream: 'err', text }, { level: 'warning', text });
  }
  /** verifier._err */
  err(linkrev: number | null, msg: string, filename?: string): void {
    if (linkrev !== null && (this.firstBadrev === undefined || linkrev < this.firstBadrev))
      this.firstBadrev = linkrev;
    let m = `${linkrev === null ? '?' : linkrev}: ${msg}`;
    if (filename) m = `${filename}@${m}`;
    this.errors++;
    const text = ' ' + m;
    this.push(
      { stream: 'err', text },
      { level: 'error', text, linkrev, ...(filename ? { revlog: filename } : {}) },
    );
  }
  /** verifier._exc */
  exc(linkrev: number | null, msg: string, e: unknown, filename?: string): void {
    if (isSluiceError(e) && e.code === 'CANCELLED') throw e;
    this.err(linkrev, `${msg}: ${reasonOf(e)}`, filename);
  }
  /** Replays a buffered sink into this one. */
  absorb(other: Sink): void {
    for (const { line, problem } of other.items) this.push(line, problem);
    this.errors += other.errors;
    this.warnings += other.warnings;
    const b = other.firstBadrev;
    if (b !== undefined && (this.firstBadrev === undefined || b < this.firstBadrev)) this.firstBadrev = b;
  }
}
