// A job's events as the lines of its debug log, in hg's words where hg has them (streamclone.py:
// "N files to transfer, X of data", "adding [s] data/foo.i (66 bytes)", "transferred X in S
// seconds (R/sec)"). Runs in the app's engine worker, next to the engine: per-file lines are made
// there and leave as one text chunk per batch (the host's JobLogStore keeps them).

import {
  debugLine,
  formatHgBytes,
  transferredLine,
  type JobKind,
  type JobPhase,
  type SluiceEvent,
} from './events';

export class JobLogLines {
  private lines: string[] = [];
  private announced = false;
  private kind: JobKind | undefined;
  private phase: JobPhase | undefined;

  /** Adds the lines `event` stands for. */
  add(event: SluiceEvent): void {
    switch (event.type) {
      case 'start':
        this.kind = event.kind;
        if (event.kind === 'clone') this.lines.push('streaming all changes');
        if (event.files > 0) this.announce(event.files, event.bytes);
        break;
      case 'phase':
        if (event.phase !== this.phase) {
          this.phase = event.phase;
          this.lines.push(`phase: ${event.phase}`);
        }
        break;
      case 'progress':
        if (event.totalFiles > 0) this.announce(event.totalFiles, event.totalBytes);
        break;
      case 'files':
        for (const entry of event.entries) this.lines.push(debugLine(entry));
        break;
      case 'log':
        this.lines.push(event.level === 'warn' ? `warning: ${event.message}` : event.message);
        break;
      case 'done':
        if (this.kind === 'clone' || this.kind === 'apply') {
          this.lines.push(transferredLine(event.bytes, event.wallMs));
        }
        break;
      case 'error':
        this.lines.push(`abort: ${event.message}`);
        break;
    }
  }

  get pending(): number {
    return this.lines.length;
  }

  /** The lines added since the last take. */
  takeLines(): string[] {
    const lines = this.lines;
    this.lines = [];
    return lines;
  }

  /** The lines added since the last take, as one '\n'-terminated text. */
  take(): { text: string; lines: number } | undefined {
    if (this.lines.length === 0) return undefined;
    const lines = this.takeLines();
    return { text: lines.join('\n') + '\n', lines: lines.length };
  }

  private announce(files: number, bytes: number): void {
    if (this.announced) return;
    this.announced = true;
    this.lines.push(`${files} files to transfer, ${formatHgBytes(bytes)} of data`);
  }
}
