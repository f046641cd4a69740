// What the OS shows about running jobs, computed from the same pushes the renderer gets: the
// taskbar/dock progress (one bar for all running jobs: bytes done / bytes announced), whether a
// transfer runs (Electron main holds a powerSaveBlocker meanwhile) and which jobs just ended (for
// a notification when the window is not focused). Pure, so it is tested without Electron.

import type { PushMessage } from './job-registry';
import type { JobSummary } from '../../shared/ipc';

export interface IndicatorState {
  /** null: no bar; 'indeterminate': running but no totals yet; else 0..1 */
  progress: number | 'indeterminate' | null;
  /** a clone/apply/bundle is running (verify only reads) */
  transferring: boolean;
}

export interface EndedJob {
  summary: JobSummary;
  durationMs: number;
  error?: { code: string; message: string };
  result?: string;
}

interface Tracked {
  summary: JobSummary;
  bytes: number;
  totalBytes: number;
  error?: { code: string; message: string };
  result?: string;
}

export class JobIndicators {
  private readonly running = new Map<string, Tracked>();
  private last: IndicatorState = { progress: null, transferring: false };

  constructor(
    private readonly onChange: (state: IndicatorState) => void,
    private readonly onEnded: (job: EndedJob) => void,
  ) {}

  get state(): IndicatorState {
    return this.last;
  }

  observe(message: PushMessage): void {
    if (message.channel === 'job:state') {
      const s = message.payload;
      if (s.state === 'running') this.running.set(s.jobId, { summary: s, bytes: 0, totalBytes: 0 });
      else if (s.state !== 'queued') {
        const tracked = this.running.get(s.jobId);
        this.running.delete(s.jobId);
        if (tracked) {
          this.onEnded({
            summary: s,
            durationMs: (s.endedAt ?? Date.now()) - s.startedAt,
            ...(tracked.error && { error: tracked.error }),
            ...(tracked.result && { result: tracked.result }),
          });
        }
      }
    } else if (message.channel === 'job:events') {
      const tracked = this.running.get(message.payload.jobId);
      if (!tracked) return;
      for (const e of message.payload.events) {
        if (e.type === 'start') tracked.totalBytes = e.bytes;
        else if (e.type === 'progress') {
          tracked.bytes = e.bytes;
          tracked.totalBytes = e.totalBytes;
        } else if (e.type === 'error') tracked.error = { code: e.code, message: e.message };
        else if (e.type === 'done' && e.result) tracked.result = e.result;
      }
    } else return;
    this.update();
  }

  private update(): void {
    let bytes = 0;
    let total = 0;
    let unknown = false;
    let transferring = false;
    for (const t of this.running.values()) {
      if (t.summary.request.kind !== 'verify') transferring = true;
      if (t.totalBytes > 0) {
        bytes += Math.min(t.bytes, t.totalBytes);
        total += t.totalBytes;
      } else unknown = true;
    }
    const progress: IndicatorState['progress'] =
      this.running.size === 0 ? null : total > 0 ? Math.min(1, bytes / total) : unknown ? 'indeterminate' : 0;
    const next = { progress, transferring };
    if (sameIndication(next, this.last)) return;
    this.last = next;
    this.onChange(next);
  }
}

/** Electron's setProgressBar is cheap but not free: changes under 0.5 % are not worth a call. */
function sameIndication(a: IndicatorState, b: IndicatorState): boolean {
  if (a.transferring !== b.transferring) return false;
  if (a.progress === b.progress) return true;
  if (typeof a.progress !== 'number' || typeof b.progress !== 'number') return false;
  return Math.abs(a.progress - b.progress) < 0.005 && a.progress !== 1;
}
