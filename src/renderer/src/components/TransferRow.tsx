// One job in the Transfers list. The row re-renders only when its coarse state changes (state,
// phase, stalled, error); bytes, rates, ETA, the bar and the sparkline update transiently.

import { memo, type ReactNode } from 'react';
import { useSluice, useSluiceShallow } from '../store/react';
import { explainError } from '../lib/errors';
import {
  formatBytes,
  formatClock,
  formatCount,
  formatFilesRate,
  formatRate,
  formatDuration,
} from '../lib/format';
import { baseName } from '../lib/paths';
import { isTerminal } from '../store/transfers';
import type { TransferJob } from '../store/types';
import { QueueControls } from './QueueControls';
import { Icon, type IconName } from './Icon';
import { KIND_LABEL, stateLabel } from './labels';
import { LiveJobText, LiveProgressBar, LiveSparkline } from './Live';
import { ErrorDetails } from './ErrorDetails';
import { RetryBanner } from './RetryBanner';
import { canResume } from '../store/downloads';

const KIND_ICON: Record<TransferJob['kind'], IconName> = {
  clone: 'clone',
  pull: 'download',
  apply: 'apply',
  bundle: 'bundle',
  verify: 'verify',
  serve: 'external',
  update: 'apply',
};

// A job that ended before its first progress (or whose progress was never recorded) moved nothing
// that can be counted: '–', not "0 of 8".
const nothingCounted = (j: TransferJob) =>
  (j.state === 'failed' || j.state === 'cancelled') && j.bytes === 0 && j.files === 0;
const fmtBytes = (j: TransferJob) =>
  nothingCounted(j)
    ? '–'
    : j.totalBytes > 0
      ? `${formatBytes(j.bytes)} of ${formatBytes(j.totalBytes)}`
      : formatBytes(j.bytes);
const fmtFiles = (j: TransferJob) =>
  nothingCounted(j)
    ? '–'
    : j.totalFiles > 0
      ? `${formatCount(j.files)} of ${formatCount(j.totalFiles)}`
      : formatCount(j.files);
// The rate a row shows: a finished job's average over its whole run, a running job's live rate,
// none otherwise (formatRate/formatFilesRate show undefined as '–').
function jobRate(j: TransferJob, amount: 'bytes' | 'files'): number | undefined {
  if (j.state === 'done' && j.done)
    return j.done.wallMs > 0 ? (j.done[amount] * 1000) / j.done.wallMs : undefined;
  if (j.state === 'running') return amount === 'bytes' ? j.bytesPerSec : j.filesPerSec;
  return undefined;
}
const fmtRate = (j: TransferJob) => formatRate(jobRate(j, 'bytes'));
const fmtFilesRate = (j: TransferJob) => formatFilesRate(jobRate(j, 'files'));
const fmtEta = (j: TransferJob) =>
  j.state === 'running' && j.etaMs !== undefined ? formatClock(j.etaMs) : j.state === 'done' ? '0:00' : '–';
const fmtElapsed = (j: TransferJob, now: number) => {
  if (j.done) return formatDuration(j.done.wallMs);
  if (isTerminal(j.state)) return j.endedAt ? formatClock(j.endedAt - j.startedAt) : formatClock(j.elapsedMs);
  if (j.state === 'queued') return '–';
  return formatClock(Math.max(j.elapsedMs, now - j.startedAt));
};
// the compact list's one line: data and speed
const fmtCompact = (j: TransferJob) => `${fmtBytes(j)} · ${fmtRate(j)}`;

type RowJob = ReturnType<typeof selectRow>;

function selectRow(j: TransferJob) {
  return {
    kind: j.kind,
    state: j.state,
    phase: j.phase,
    stalled: j.stalled,
    cancelRequested: j.cancelRequested,
    label: j.label,
    source: j.source,
    dest: j.dest,
    error: j.error,
    hasRequest: j.request !== undefined,
    request: j.request,
    origin: j.origin,
    format: j.format,
    result: j.done?.result,
  };
}

export const TransferRow = memo(function TransferRow({ jobId }: { jobId: string }) {
  const job = useSluiceShallow((s) => selectRow(s.jobs[jobId]!));
  const title = job.label ?? (job.dest ? baseName(job.dest) : baseName(job.source));
  const titleId = `job-title-${jobId}`;
  const active = !isTerminal(job.state);
  const stalled = job.stalled && active && !job.cancelRequested;
  return (
    <li
      className={`transfer transfer-${job.state}${stalled ? ' transfer-stalled' : ''}`}
      aria-labelledby={titleId}
      data-testid="transfer"
      data-job-id={jobId}
      data-state={job.state}
    >
      <div className="transfer-icon" aria-hidden="true">
        <Icon name={KIND_ICON[job.kind]} size={20} />
      </div>
      <div className="transfer-main">
        <div className="transfer-head">
          <TransferTitles job={job} title={title} titleId={titleId} />
          <LiveJobText jobId={jobId} format={fmtCompact} className="transfer-compact-data" />
          <span
            className={`state-badge state-${stalled ? 'stalled' : job.state}`}
            data-testid="transfer-state"
          >
            {stateLabel(job)}
            {job.format && active ? <span className="format-tag"> · {job.format}</span> : null}
          </span>
          <TransferActions jobId={jobId} job={job} title={title} />
        </div>
        <LiveProgressBar jobId={jobId} label={`Progress of ${title}`} />
        <TransferStats jobId={jobId} active={active} />
        {active ? <RetryBanner jobId={jobId} /> : null}
        {stalled ? <StallBanner jobId={jobId} canRestart={job.hasRequest} /> : null}
        {job.error && job.state === 'failed' ? <ErrorDetails error={job.error} compact /> : null}
      </div>
    </li>
  );
});

function TransferTitles({ job, title, titleId }: { job: RowJob; title: string; titleId: string }) {
  return (
    <div className="transfer-titles">
      <h3 id={titleId} className="transfer-title">
        <span className="kind-tag">{KIND_LABEL[job.kind]}</span>
        {title}
      </h3>
      <p className="transfer-route" title={`${job.source} → ${job.dest ?? ''}`}>
        <span className="route-source">
          <bdi>{job.source || '…'}</bdi>
        </span>
        {job.dest ? (
          <>
            <span className="route-arrow" aria-label="to">
              →
            </span>
            <span className="route-dest">
              <bdi>{job.dest}</bdi>
            </span>
          </>
        ) : null}
      </p>
    </div>
  );
}

function TransferActions({ jobId, job, title }: { jobId: string; job: RowJob; title: string }) {
  const { cancelJob, retryJob, resumeJob, dismissJob, openDialog, openBundle, verifyRepository } =
    useSluiceShallow((s) => ({
      verifyRepository: s.verifyRepository,
      cancelJob: s.cancelJob,
      retryJob: s.retryJob,
      resumeJob: s.resumeJob,
      dismissJob: s.dismissJob,
      openDialog: s.openDialog,
      openBundle: s.openBundle,
    }));
  const resumable = useSluice((s) => canResume(job, s.partials));
  const active = !isTerminal(job.state);
  const canRetry = !resumable && job.hasRequest && (job.state === 'failed' || job.state === 'cancelled');
  // errors a re-run cannot fix (DEST_EXISTS…) reopen the form where one exists (clone, apply)
  const editable = job.request?.kind === 'clone' || job.request?.kind === 'apply';
  const retryable = !editable || (job.error ? explainError(job.error.code).retryable : true);
  const output = job.result ?? job.dest;
  const editAndRetry = () => {
    const r = job.request;
    if (r?.kind === 'clone') openDialog({ type: 'clone', initial: r });
    // the dialog opens with what the user typed, not the defaults
    else if (r?.kind === 'apply') void openBundle(r.bundlePath, r);
  };
  return (
    <div className="transfer-actions">
      <QueueControls jobId={jobId} title={title} />
      {active ? (
        <button
          type="button"
          className="button small"
          onClick={() => void cancelJob(jobId)}
          disabled={job.cancelRequested}
          aria-label={`Cancel ${title}`}
        >
          <Icon name="cancel" /> Cancel
        </button>
      ) : null}
      {resumable ? (
        <button
          type="button"
          className="button small primary"
          onClick={() => void resumeJob(jobId)}
          aria-label={`Resume ${title}`}
          title="Continue from what was downloaded"
        >
          <Icon name="retry" /> Resume
        </button>
      ) : null}
      {canRetry ? (
        <button
          type="button"
          className="button small"
          onClick={() => void (retryable ? retryJob(jobId) : editAndRetry())}
          aria-label={`Retry ${title}`}
        >
          <Icon name="retry" /> {retryable ? 'Retry' : 'Edit & retry'}
        </button>
      ) : null}
      {job.state === 'done' && output ? <OpenFolderButton path={output} title={title} /> : null}
      {job.state === 'done' && (job.kind === 'clone' || job.kind === 'apply') && output ? (
        <button
          type="button"
          className="button small ghost"
          onClick={() => void verifyRepository(output)}
          aria-label={`Verify ${title}`}
          title="Check the repository's integrity, like hg verify"
        >
          <Icon name="verify" /> Verify
        </button>
      ) : null}
      <button
        type="button"
        className="button small ghost"
        onClick={() => openDialog({ type: 'log', jobId })}
        aria-label={`Show log of ${title}`}
      >
        <Icon name="log" /> Log
      </button>
      {!active ? (
        <button
          type="button"
          className="icon-button"
          onClick={() => dismissJob(jobId)}
          aria-label={`Remove ${title} from the list`}
          title="Remove from the list"
        >
          <Icon name="close" />
        </button>
      ) : null}
    </div>
  );
}

function TransferStats({ jobId, active }: { jobId: string; active: boolean }) {
  return (
    <div className="transfer-stats">
      <dl className="stats">
        <Stat term="Data">
          <LiveJobText jobId={jobId} format={fmtBytes} testId="stat-bytes" />
        </Stat>
        <Stat term="Speed">
          <LiveJobText jobId={jobId} format={fmtRate} testId="stat-rate" />
        </Stat>
        <Stat term="Files">
          <LiveJobText jobId={jobId} format={fmtFiles} testId="stat-files" />
        </Stat>
        <Stat term="Files/s">
          <LiveJobText jobId={jobId} format={fmtFilesRate} />
        </Stat>
        <Stat term="ETA">
          <LiveJobText jobId={jobId} format={fmtEta} testId="stat-eta" />
        </Stat>
        <Stat term="Elapsed">
          <LiveJobText
            jobId={jobId}
            format={fmtElapsed}
            tickMs={active ? 1000 : undefined}
            testId="stat-elapsed"
          />
        </Stat>
      </dl>
      <LiveSparkline jobId={jobId} />
    </div>
  );
}

function StallBanner({ jobId, canRestart }: { jobId: string; canRestart: boolean }) {
  const { stallSeconds, cancelJob, restartJob } = useSluiceShallow((s) => ({
    stallSeconds: s.stallSeconds,
    cancelJob: s.cancelJob,
    restartJob: s.restartJob,
  }));
  return (
    <div className="stall-banner" role="alert" data-testid="stall-banner">
      <Icon name="warning" />
      <span>No progress for {stallSeconds} seconds or more. The server or the disk may be stuck.</span>
      <button type="button" className="button small" onClick={() => void cancelJob(jobId)}>
        Cancel
      </button>
      {canRestart ? (
        <button type="button" className="button small primary" onClick={() => void restartJob(jobId)}>
          Cancel and retry
        </button>
      ) : null}
    </div>
  );
}

function Stat({ term, children }: { term: string; children: ReactNode }) {
  return (
    <div className="stat">
      <dt>{term}</dt>
      <dd>{children}</dd>
    </div>
  );
}

function OpenFolderButton({ path, title }: { path: string; title: string }) {
  const open = useSluice((s) => s.openPath);
  return (
    <button
      type="button"
      className="button small"
      onClick={() => void open(path)}
      aria-label={`Open folder of ${title}`}
    >
      <Icon name="folder" /> Open folder
    </button>
  );
}
