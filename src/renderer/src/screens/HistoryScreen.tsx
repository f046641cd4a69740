// History: every finished job with its timings, as the host recorded it (persists across restarts).

import { useEffect, useMemo, useState } from 'react';
import type { HistoryRecord } from '../../../shared/ipc';
import { SearchField } from '../components/fields';
import { Icon } from '../components/Icon';
import { EmptyState } from '../components/EmptyState';
import { ScreenFrame } from '../components/ScreenFrame';
import { ErrorDetails } from '../components/ErrorDetails';
import { KIND_LABEL } from '../components/labels';
import { sparklinePoints } from '../components/Live';
import { explainFailure } from '../lib/errors';
import { formatBytes, formatDuration, formatRate, formatTimestamp } from '../lib/format';
import { useSluice, useSluiceShallow } from '../store/react';
import { describeRequest } from '../store/transfers';
import { baseName } from '../lib/paths';

export function HistoryScreen() {
  const { history, status, error, stale } = useSluiceShallow((s) => ({
    history: s.history,
    status: s.historyStatus,
    error: s.historyError,
    stale: s.historyStale,
  }));
  const { loadHistory, clearHistory } = useSluiceShallow((s) => ({
    loadHistory: s.loadHistory,
    clearHistory: s.clearHistory,
  }));
  const [query, setQuery] = useState('');
  const [confirming, setConfirming] = useState(false);

  useEffect(() => {
    if (stale) void loadHistory();
  }, [stale, loadHistory]);

  const shown = useMemo(() => {
    const q = query.trim().toLowerCase();
    if (!q) return history;
    return history.filter((r) => {
      const d = describeRequest(r.request);
      return `${r.label ?? ''} ${d.source} ${d.dest ?? ''} ${r.state} ${r.request.kind} ${r.error?.code ?? ''}`
        .toLowerCase()
        .includes(q);
    });
  }, [history, query]);

  return (
    <ScreenFrame
      id="history"
      title="History"
      subtitle={
        history.length
          ? `${history.length} finished job${history.length === 1 ? '' : 's'}`
          : 'Finished jobs appear here, with their timings.'
      }
      tools={
        <div className="header-tools">
          <SearchField
            id="history-filter"
            label="Filter history"
            placeholder="Filter"
            value={query}
            onChange={setQuery}
          />
          <button
            type="button"
            className="button ghost"
            onClick={() => void loadHistory()}
            aria-label="Reload history"
          >
            <Icon name="retry" />
          </button>
          {history.length ? (
            confirming ? (
              <span className="confirm" role="group" aria-label="Confirm clearing the history">
                <span>Clear all?</span>
                <button
                  type="button"
                  className="button small danger"
                  onClick={() => {
                    setConfirming(false);
                    void clearHistory();
                  }}
                >
                  Clear
                </button>
                <button type="button" className="button small" onClick={() => setConfirming(false)} autoFocus>
                  Keep
                </button>
              </span>
            ) : (
              <button type="button" className="button ghost" onClick={() => setConfirming(true)}>
                <Icon name="trash" /> Clear history
              </button>
            )
          ) : null}
        </div>
      }
    >
      {status === 'error' && error ? (
        <ErrorDetails
          error={error}
          actions={
            <button type="button" className="button" onClick={() => void loadHistory()}>
              Try again
            </button>
          }
        />
      ) : status === 'loading' && history.length === 0 ? (
        <p className="muted" aria-busy="true">
          Loading…
        </p>
      ) : history.length === 0 ? (
        <EmptyState icon="history" title="No history yet" testId="empty-history">
          <p>
            When a clone, apply, bundle or verify job ends, its timings are kept here, also after a restart.
          </p>
        </EmptyState>
      ) : (
        <div className="table-scroll">
          <table className="data-table history-table" data-testid="history-table">
            <caption className="visually-hidden">Finished jobs, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Finished</th>
                <th scope="col">Job</th>
                <th scope="col">Result</th>
                <th scope="col">Wall</th>
                <th scope="col">CPU (user + sys)</th>
                <th scope="col">Data</th>
                <th scope="col">Speed</th>
                <th scope="col">Throughput</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {shown.map((r) => (
                <HistoryRow key={r.jobId} record={r} />
              ))}
            </tbody>
          </table>
          {shown.length === 0 ? <p className="muted center">No job matches “{query}”.</p> : null}
        </div>
      )}
    </ScreenFrame>
  );
}

function HistoryRow({ record: r }: { record: HistoryRecord }) {
  const { startJob, openPath, setScreen, openDialog } = useSluiceShallow((s) => ({
    startJob: s.startJob,
    openPath: s.openPath,
    setScreen: s.setScreen,
    openDialog: s.openDialog,
  }));
  const notify = useSluice((s) => s.notify);
  const d = describeRequest(r.request);
  const done = r.done;
  const wall = done?.wallMs ?? r.endedAt - r.startedAt;
  const points = r.samples && r.samples.length >= 3 ? sparklinePoints(r.samples) : '';
  return (
    <tr className={`history-${r.state}`}>
      <td className="nowrap">{formatTimestamp(r.endedAt)}</td>
      <td>
        <div className="history-job">
          <span className="kind-tag">{KIND_LABEL[d.kind]}</span>
          <span className="history-label">{r.label ?? baseName(d.dest ?? d.source)}</span>
          <span className="history-route" title={`${d.source}${d.dest ? ` → ${d.dest}` : ''}`}>
            {d.source}
            {d.dest ? ` → ${d.dest}` : ''}
          </span>
        </div>
      </td>
      <td>
        <span className={`state-badge state-${r.state}`}>{r.state}</span>
        {r.error && r.error.code !== 'CANCELLED' ? (
          <span className="history-error" title={r.error.message}>
            {explainFailure(r.error).title}
          </span>
        ) : null}
      </td>
      <td className="num">{formatDuration(wall)}</td>
      <td className="num">
        {done ? `${formatDuration(done.userCpuMs)} + ${formatDuration(done.systemCpuMs)}` : '–'}
      </td>
      <td className="num">{done ? formatBytes(done.bytes) : '–'}</td>
      <td className="num">{done && done.wallMs > 0 ? formatRate((done.bytes * 1000) / done.wallMs) : '–'}</td>
      <td>
        {points ? (
          <svg className="sparkline small" viewBox="0 0 100 30" preserveAspectRatio="none" aria-hidden="true">
            <polygon className="sparkline-area" points={`0,30 ${points} 100,30`} />
            <polyline className="sparkline-line" points={points} vectorEffect="non-scaling-stroke" />
          </svg>
        ) : null}
      </td>
      <td className="row-actions">
        <button
          type="button"
          className="icon-button"
          onClick={() => openDialog({ type: 'log', jobId: r.jobId })}
          aria-label={`Show log of ${r.label ?? d.dest ?? d.source}`}
          title="Debug log (kept by the host, also from earlier sessions)"
        >
          <Icon name="log" />
        </button>
        {r.state === 'done' && (done?.result ?? d.dest) ? (
          <button
            type="button"
            className="icon-button"
            onClick={() => void openPath((done?.result ?? d.dest)!)}
            aria-label={`Open folder of ${r.label ?? d.dest}`}
            title="Open folder"
          >
            <Icon name="folder" />
          </button>
        ) : null}
        {r.state !== 'done' ? (
          <button
            type="button"
            className="icon-button"
            title="Run again"
            aria-label={`Run ${r.label ?? d.dest ?? d.source} again`}
            onClick={() =>
              void startJob(r.request, r.label)
                .then(() => setScreen('transfers'))
                .catch((e: unknown) =>
                  notify({ tone: 'error', text: 'Could not start the job again', detail: String(e) }),
                )
            }
          >
            <Icon name="retry" />
          </button>
        ) : null}
      </td>
    </tr>
  );
}
