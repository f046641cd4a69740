// The one-line progress bar of the job commands (job-output.ts) and verify. A module of its own:
// verify imports it without job-output's runJob, which would load every engine job (clone's
// http/tls, apply, checkout) into the verify process (~10 MB of RSS on Node 20, ~18 MB on 24).
import { formatHgBytes, type SluiceEvent } from '../shared/events';

/** `[=======>        ]  45%  25.3 MB/56.3 MB  120 MB/s  ETA 0:02` on one rewritten line. */
export class ProgressBar {
  private shown = false;

  constructor(private readonly out: NodeJS.WriteStream) {}

  render(p: Extract<SluiceEvent, { type: 'progress' }>): void {
    const width = Math.max(40, Math.min(this.out.columns || 80, 120));
    const frac = p.totalBytes > 0 ? Math.min(1, p.bytes / p.totalBytes) : 0;
    const pct = `${Math.floor(frac * 100)}%`.padStart(4);
    const amounts = `${formatHgBytes(p.bytes)}/${formatHgBytes(p.totalBytes)}`;
    const rate = `${formatHgBytes(p.bytesPerSec)}/s`;
    const eta = p.etaMs === undefined ? '' : `ETA ${formatDuration(p.etaMs)}`;
    const tail = ` ${pct}  ${amounts}  ${rate}  ${eta}`;
    const barWidth = Math.max(10, width - tail.length - 3);
    const filled = Math.round(frac * barWidth);
    const bar =
      '='.repeat(Math.max(0, filled - 1)) +
      (filled > 0 ? (filled === barWidth ? '=' : '>') : '') +
      ' '.repeat(barWidth - filled);
    this.out.write(`\r[${bar}]${tail}`.slice(0, width) + '\x1b[K');
    this.shown = true;
  }

  clear(): void {
    if (!this.shown) return;
    this.out.write('\r\x1b[K');
    this.shown = false;
  }
}

export function formatDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${sec}` : `${m}:${sec}`;
}
