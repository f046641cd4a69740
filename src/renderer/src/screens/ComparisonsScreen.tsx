// Comparisons: the same apply or clone under several configurations, one after another, with the
// measured wall/CPU times and throughput of each (from the jobs' done events) as charts and a table.

import { useMemo, useState } from 'react';
import { BarChart, type Bar } from '../charts/BarChart';
import { LineChart } from '../charts/LineChart';
import { Icon } from '../components/Icon';
import { EmptyState } from '../components/EmptyState';
import { ScreenFrame } from '../components/ScreenFrame';
import { ComparisonForm, stamp } from './ComparisonForm';
import { ErrorDetails } from '../components/ErrorDetails';
import { formatDuration, formatTimestamp, formatCount } from '../lib/format';
import { useSluice, useSluiceShallow } from '../store/react';
import { comparisonToCsv, comparisonToJson, sourcePath } from '../store/comparison-plan';
import type { ComparisonRun } from '../store/types';

export function ComparisonsScreen() {
  const comparisons = useSluice((s) => s.comparisons);
  const [selected, setSelected] = useState<string | null>(null);
  const current = comparisons.find((c) => c.id === selected) ?? comparisons[0];
  return (
    <ScreenFrame
      id="comparisons"
      title="Comparisons"
      subtitle="Run one transfer under several configurations, one after another, and compare the measured numbers."
    >
      <div className="comparisons-layout">
        <ComparisonForm onStarted={setSelected} />
        <div className="comparison-results-column">
          {comparisons.length > 1 ? (
            <div className="field inline run-picker">
              <label htmlFor="comparison-pick">Run</label>
              <select id="comparison-pick" value={current?.id} onChange={(e) => setSelected(e.target.value)}>
                {comparisons.map((c) => (
                  <option key={c.id} value={c.id}>
                    {formatTimestamp(c.createdAt)} — {c.title} ({c.state})
                  </option>
                ))}
              </select>
            </div>
          ) : null}
          <RemoveFoldersButton />
          {current ? (
            <ComparisonResults run={current} />
          ) : (
            <EmptyState icon="compare" title="No comparison yet" testId="empty-comparisons">
              <p>
                Pick a bundle, a server or a local repository, choose the configurations, and run them. Each
                run is a real transfer; the numbers come from the engine&rsquo;s own measurements.
              </p>
            </EmptyState>
          )}
        </div>
      </div>
    </ScreenFrame>
  );
}

/** Deletes what comparison runs left on disk (runs that kept their repositories), as the host recorded it. */
function RemoveFoldersButton() {
  const { removeComparisonFolders, notify, idle } = useSluiceShallow((s) => ({
    removeComparisonFolders: s.removeComparisonFolders,
    notify: s.notify,
    idle: !s.comparisons.some((c) => c.state === 'running'),
  }));
  const remove = async () => {
    try {
      const removed = await removeComparisonFolders();
      notify({
        tone: 'info',
        text:
          removed === 0
            ? 'No comparison folders were left'
            : `Removed ${removed} comparison folder${removed === 1 ? '' : 's'}`,
      });
    } catch (e) {
      notify({ tone: 'error', text: 'The comparison folders were not removed', detail: String(e) });
    }
  };
  return (
    <button type="button" className="button ghost" disabled={!idle} onClick={() => void remove()}>
      <Icon name="trash" /> Remove comparison folders
    </button>
  );
}

const mbFixed = (v: number) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));
const mb = (v: number) => `${mbFixed(v)} MiB/s`;
const secs = (v: number) => formatDuration(v);

/** The formats a finished comparison exports to, in the order of their buttons. */
const EXPORTS = [
  ['JSON', 'json', comparisonToJson],
  ['CSV', 'csv', comparisonToCsv],
] as const;

function ComparisonResults({ run }: { run: ComparisonRun }) {
  const done = run.results.filter((r) => r.state === 'done').length;
  return (
    <article
      className="card comparison-results"
      aria-labelledby={`run-${run.id}`}
      data-testid="comparison-results"
      data-state={run.state}
    >
      <ResultsHeader run={run} done={done} />
      <RunSteps run={run} />
      {done > 0 ? (
        <>
          <ResultsCharts run={run} />
          <ResultsTable run={run} />
        </>
      ) : null}
      {run.state !== 'running' && done === 0 && run.results[0]?.error ? (
        <ErrorDetails error={run.results[0].error} />
      ) : null}
    </article>
  );
}

/** The run's title, source, progress and its actions (cancel while running; export, open, remove after). */
function ResultsHeader({ run, done }: { run: ComparisonRun; done: number }) {
  const { cancelComparison, removeComparison, exportText, openPath } = useSluiceShallow((s) => ({
    cancelComparison: s.cancelComparison,
    removeComparison: s.removeComparison,
    exportText: s.exportText,
    openPath: s.openPath,
  }));
  const base = `sluice-comparison-${stamp(run.createdAt)}`;
  return (
    <header className="results-header">
      <div>
        <h2 id={`run-${run.id}`}>{run.title}</h2>
        {run.source.kind !== 'url' ? (
          <p className="results-source" title={sourcePath(run.source)}>
            <bdi>{sourcePath(run.source)}</bdi>
          </p>
        ) : null}
        <p className="muted">
          {formatTimestamp(run.createdAt)} · {done} of {run.results.length} measured ·{' '}
          <span className={`state-badge state-${run.state === 'running' ? 'running' : run.state}`}>
            {run.state}
          </span>
        </p>
      </div>
      <div className="results-actions">
        {run.state === 'running' ? (
          <button type="button" className="button" onClick={() => void cancelComparison(run.id)}>
            <Icon name="cancel" /> Cancel
          </button>
        ) : (
          <>
            {EXPORTS.map(([label, ext, render]) => (
              <button
                key={ext}
                type="button"
                className="button"
                onClick={() => void exportText(`${base}.${ext}`, render(run))}
              >
                <Icon name="download" /> {label}
              </button>
            ))}
            <button
              type="button"
              className="button ghost"
              onClick={() => void openPath(run.outDir)}
              aria-label="Open the results folder"
            >
              <Icon name="folder" />
            </button>
            <button
              type="button"
              className="button ghost"
              onClick={() => removeComparison(run.id)}
              aria-label="Remove this comparison"
            >
              <Icon name="trash" />
            </button>
          </>
        )}
      </div>
    </header>
  );
}

function stepState(r: ComparisonRun['results'][number]): string {
  if (r.state === 'done') return formatDuration(r.wallMs);
  if (r.state === 'running') return 'running…';
  if (r.state === 'preparing') return 'generating bundle…';
  return r.state;
}

function RunSteps({ run }: { run: ComparisonRun }) {
  return (
    <ol className="run-steps">
      {run.results.map((r, i) => (
        <li key={r.configId} className={`run-step step-${r.state}`}>
          <span className={`swatch series-${(i % 8) + 1}`} aria-hidden="true" />
          <span className="run-step-label">{r.label}</span>
          <span className="run-step-state">{stepState(r)}</span>
        </li>
      ))}
    </ol>
  );
}

function ResultsCharts({ run }: { run: ComparisonRun }) {
  const bars = useMemo(() => {
    const make = (pick: (r: ComparisonRun['results'][number]) => number | undefined): Bar[] =>
      run.results.map((r, i) => ({
        label: r.label,
        value: r.state === 'done' ? pick(r) : undefined,
        series: i,
      }));
    return {
      wall: make((r) => r.wallMs),
      user: make((r) => r.userCpuMs),
      system: make((r) => r.systemCpuMs),
      mbps: make((r) => r.mibPerSec),
    };
  }, [run.results]);
  const series = useMemo(
    () =>
      run.results.map((r, i) => ({
        label: r.label,
        series: i,
        points: (r.samples ?? []).map(([t, v]) => [t, v / 1e6] as [number, number]),
      })),
    [run.results],
  );
  return (
    <>
      <div className="chart-grid">
        <BarChart title="Wall time" bars={bars.wall} format={secs} better="lower" />
        <BarChart title="Throughput" bars={bars.mbps} format={mb} better="higher" />
        <BarChart title="User CPU" bars={bars.user} format={secs} better="lower" />
        <BarChart title="System CPU" bars={bars.system} format={secs} better="lower" />
      </div>
      <LineChart
        title="Throughput over time"
        series={series}
        yUnit="MiB/s"
        yFormat={(v) => (v === 0 || v >= 10 ? v.toFixed(0) : v.toFixed(1))}
      />
    </>
  );
}

function closedInBackground(r: ComparisonRun['results'][number]): string {
  if (!r.close) return '–';
  if (!r.close.background) return 'no';
  const { backgroundClosed, threads } = r.close;
  return `${formatCount(backgroundClosed)} on ${threads} thread${threads === 1 ? '' : 's'}`;
}

function ResultsTable({ run }: { run: ComparisonRun }) {
  return (
    <div className="table-scroll">
      <table className="data-table" data-testid="comparison-table">
        <caption className="visually-hidden">Measured numbers per configuration</caption>
        <thead>
          <tr>
            <th scope="col">Configuration</th>
            <th scope="col">Wall</th>
            <th scope="col">User CPU</th>
            <th scope="col">System CPU</th>
            <th scope="col">MiB/s</th>
            <th scope="col">Files</th>
            <th scope="col">Closed in background</th>
            <th scope="col">Writer waited</th>
          </tr>
        </thead>
        <tbody>
          {run.results.map((r) => (
            <tr key={r.configId}>
              <th scope="row">{r.label}</th>
              {r.state === 'done' ? (
                <>
                  <td>{formatDuration(r.wallMs)}</td>
                  <td>{formatDuration(r.userCpuMs)}</td>
                  <td>{formatDuration(r.systemCpuMs)}</td>
                  <td data-testid="mbps">{r.mibPerSec !== undefined ? mbFixed(r.mibPerSec) : '–'}</td>
                  <td>{r.files !== undefined ? formatCount(r.files) : '–'}</td>
                  <td>{closedInBackground(r)}</td>
                  <td>{r.close ? formatDuration(r.close.writerWaitMs) : '–'}</td>
                </>
              ) : (
                <td colSpan={7} className="muted">
                  {r.error ? `${r.error.code}: ${r.error.message}` : r.state}
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
