// Transient widgets: they subscribe to the store and write to their DOM node directly, so a
// transfer's numbers can change every frame without re-rendering its row.

import { memo } from 'react';
import { setText, useTransient } from '../store/react';
import type { SluiceState, TransferJob } from '../store/types';

/** Text derived from one job, rewritten on every store change (and every tickMs for clocks). */
export const LiveJobText = memo(function LiveJobText({
  jobId,
  format,
  tickMs,
  className,
  testId,
}: {
  jobId: string;
  format: (job: TransferJob, now: number) => string;
  tickMs?: number;
  className?: string;
  testId?: string;
}) {
  const ref = useTransient<HTMLSpanElement>(
    (el, s: SluiceState) => {
      const job = s.jobs[jobId];
      if (job) setText(el, format(job, Date.now()));
    },
    [jobId, format],
    tickMs,
  );
  return <span ref={ref} className={className} data-testid={testId} />;
});

export function progressFraction(job: TransferJob): number | null {
  if (job.state === 'done') return 1;
  if (job.totalBytes > 0) return Math.min(1, job.bytes / job.totalBytes);
  if (job.totalFiles > 0) return Math.min(1, job.files / job.totalFiles);
  return null;
}

/** role=progressbar whose fill and aria-valuenow follow the job without React renders. */
export const LiveProgressBar = memo(function LiveProgressBar({
  jobId,
  label,
}: {
  jobId: string;
  label: string;
}) {
  const ref = useTransient<HTMLDivElement>(
    (el, s) => {
      const job = s.jobs[jobId];
      if (!job) return;
      const f = progressFraction(job);
      const fill = el.firstElementChild as HTMLElement;
      if (f === null) {
        if (!el.classList.contains('indeterminate')) el.classList.add('indeterminate');
        el.removeAttribute('aria-valuenow');
        fill.style.transform = '';
      } else {
        el.classList.remove('indeterminate');
        const pct = Math.round(f * 1000) / 10;
        const now = String(Math.floor(pct));
        if (el.getAttribute('aria-valuenow') !== now) el.setAttribute('aria-valuenow', now);
        fill.style.transform = `scaleX(${f})`;
      }
      el.dataset.state = job.stalled && job.state === 'running' ? 'stalled' : job.state;
    },
    [jobId],
  );
  return (
    <div
      ref={ref}
      className="progress"
      role="progressbar"
      aria-label={label}
      aria-valuemin={0}
      aria-valuemax={100}
    >
      <div className="progress-fill" />
    </div>
  );
});

/**
 * Points of a sparkline in a width×height box: x by time over the samples' whole range, y by rate
 * relative to the peak. Every point lies inside the box, whatever the samples hold (a history
 * record from before samples were timed from the job's start restarts its clock per phase).
 */
export function sparklinePoints(samples: readonly [number, number][], width = 100, height = 30): string {
  if (samples.length === 0) return '';
  let t0 = Infinity;
  let t1 = -Infinity;
  let peak = 0;
  for (const [t, v] of samples) {
    if (t < t0) t0 = t;
    if (t > t1) t1 = t;
    if (v > peak) peak = v;
  }
  const span = Math.max(1, t1 - t0);
  const scale = peak > 0 ? (height - 2) / peak : 0;
  const clamp = (n: number, max: number) => Math.min(max, Math.max(0, Number.isFinite(n) ? n : 0));
  const y = (v: number) => clamp(height - 1 - v * scale, height).toFixed(1);
  let out = samples.length === 1 ? `0,${y(samples[0]![1])} ` : '';
  for (const [t, v] of samples) out += `${clamp(((t - t0) / span) * width, width).toFixed(1)},${y(v)} `;
  return out.trim();
}

/** Throughput sparkline (SVG); the polyline's points follow the job's samples transiently. */
export const LiveSparkline = memo(function LiveSparkline({ jobId }: { jobId: string }) {
  let last: unknown = null;
  const ref = useTransient<SVGSVGElement>(
    (el, s) => {
      const samples = s.jobs[jobId]?.samples;
      if (!samples || samples === last) return;
      last = samples;
      // fewer than three samples (a job of a few milliseconds) draw no meaningful shape
      const pts = samples.length >= 3 ? sparklinePoints(samples) : '';
      el.querySelector('polyline')!.setAttribute('points', pts);
      el.querySelector('polygon')!.setAttribute('points', pts ? `0,30 ${pts} 100,30` : '');
    },
    [jobId],
  );
  return (
    <svg
      ref={ref}
      className="sparkline"
      viewBox="0 0 100 30"
      preserveAspectRatio="none"
      role="img"
      aria-label="Throughput over time"
    >
      <polygon className="sparkline-area" points="" />
      <polyline className="sparkline-line" points="" vectorEffect="non-scaling-stroke" />
    </svg>
  );
});
