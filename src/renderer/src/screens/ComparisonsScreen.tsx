// Comparisons: the same apply or clone under several configurations, one after another, with the
// measured wall/CPU times and throughput of each (from the jobs' done events) as charts and a table.

import { useEffect, useMemo, useState, type FormEvent, type ReactNode } from 'react';
import { BarChart, type Bar } from '../charts/BarChart';
import { LineChart } from '../charts/LineChart';
import { ChooseButton, FolderField, TextField } from '../components/fields';
import { Icon } from '../components/Icon';
import { EmptyState } from '../components/EmptyState';
import { ScreenFrame } from '../components/ScreenFrame';
import { ErrorDetails } from '../components/ErrorDetails';
import { formatDuration, formatTimestamp, formatCount } from '../lib/format';
import { joinPath } from '../lib/paths';
import { useSluice, useSluiceShallow } from '../store/react';
import { validateCloneUrl, validateDestination } from '../store/requests';
import {
  CHUNK_SIZE_CHOICES,
  CLOSER_THREAD_CHOICES,
  comparisonToCsv,
  comparisonToJson,
  emulatedLatencyOf,
  latencyLabel,
  sourcePath,
} from '../store/comparison-plan';
import type { CloserChoice, ComparisonRun, ComparisonSource } from '../store/types';

type SourceKind = ComparisonSource['kind'];

function stamp(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}

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

function ComparisonForm({ onStarted }: { onStarted: (id: string) => void }) {
  const { runComparison, pickBundlePath, pickDirectory, notify } = useSluiceShallow((s) => ({
    runComparison: s.runComparison,
    pickBundlePath: s.pickBundlePath,
    pickDirectory: s.pickDirectory,
    notify: s.notify,
  }));
  const appInfo = useSluice((s) => s.appInfo);
  const running = useSluice((s) => s.comparisons.some((c) => c.state === 'running'));
  const latencyOffer = emulatedLatencyOf(appInfo);
  const canPick = appInfo?.host === 'electron';

  const [kind, setKind] = useState<SourceKind>('bundle');
  const [bundlePath, setBundlePath] = useState('');
  const [url, setUrl] = useState('');
  const [repo, setRepo] = useState('');
  const [closerOff, setCloserOff] = useState(true);
  const [threads, setThreads] = useState<number[]>([4]);
  const [chunks, setChunks] = useState<number[]>([4096, 32768]);
  const [streams, setStreams] = useState<('v1' | 'v2')[]>(['v1', 'v2']);
  const [withLatency, setWithLatency] = useState(false);
  const [simulate, setSimulate] = useState(false);
  const [simulateMs, setSimulateMs] = useState(1);
  const [repeat, setRepeat] = useState(1);
  const [parent, setParent] = useState('');
  const [showErrors, setShowErrors] = useState(false);

  useEffect(() => {
    if (appInfo && parent === '')
      setParent(joinPath(appInfo.defaultCloneDir, 'sluice-comparisons', appInfo.platform));
  }, [appInfo, parent]);

  const closer: CloserChoice[] = [
    ...(closerOff ? [{ background: 'off' as const }] : []),
    ...threads.map((t) => ({ background: 'on' as const, threads: t })),
  ];
  const sourceError =
    kind === 'bundle'
      ? validateDestination(bundlePath) && 'Choose the bundle file to apply.'
      : kind === 'url'
        ? validateCloneUrl(url)
        : validateDestination(repo) && 'Choose the repository folder (the one containing .hg).';
  const configError =
    closer.length === 0
      ? 'Choose at least one closer setting.'
      : kind === 'repo' && chunks.length === 0
        ? 'Choose at least one chunk size.'
        : kind === 'url' && streams.length === 0
          ? 'Choose at least one stream format.'
          : null;
  const parentError = validateDestination(parent);
  const variants = kind === 'repo' ? chunks.length : kind === 'url' ? streams.length : 1;
  const runs =
    closer.length *
    Math.max(1, variants) *
    (latencyOffer && withLatency ? 2 : 1) *
    (simulate ? 2 : 1) *
    repeat;

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (sourceError || configError || parentError) {
      setShowErrors(true);
      return;
    }
    const source: ComparisonSource =
      kind === 'bundle'
        ? { kind, bundlePath: bundlePath.trim() }
        : kind === 'url'
          ? { kind, url: url.trim() }
          : { kind, repo: repo.trim() };
    const outDir = joinPath(parent.trim(), stamp(Date.now()), appInfo?.platform);
    try {
      const id = await runComparison(
        source,
        {
          closer,
          chunkSizes: [...chunks].sort((a, b) => a - b),
          streams: [...streams].sort(),
          latenciesUs: latencyOffer && withLatency ? [0, latencyOffer.closeUs] : [],
          ...(simulate ? { simulateCloseMs: [simulateMs, 0] } : {}),
          repeat,
        },
        outDir,
      );
      onStarted(id);
    } catch (err) {
      notify({ tone: 'error', text: 'The comparison did not start', detail: String(err) });
    }
  };

  return (
    <form
      className="card comparison-form"
      onSubmit={(e) => void submit(e)}
      noValidate
      aria-labelledby="comparison-form-title"
      data-testid="comparison-form"
    >
      <h2 id="comparison-form-title">New comparison</h2>
      <fieldset className="field">
        <legend>What to measure</legend>
        <div className="segmented" role="radiogroup" aria-label="Source">
          {(
            [
              ['bundle', 'Apply a bundle'],
              ['url', 'Clone a URL'],
              ['repo', 'Bundle + apply a repository'],
            ] as const
          ).map(([k, label]) => (
            <label key={k} className={`segment${kind === k ? ' selected' : ''}`}>
              <input
                type="radio"
                name="comparison-source"
                value={k}
                checked={kind === k}
                onChange={() => setKind(k)}
              />
              <span>{label}</span>
            </label>
          ))}
        </div>
      </fieldset>
      {kind === 'bundle' ? (
        <TextField
          id="cmp-bundle"
          label="Bundle file"
          value={bundlePath}
          onChange={setBundlePath}
          error={showErrors ? sourceError : null}
          placeholder="/path/to/stream-v2.hg"
          after={
            canPick ? (
              <ChooseButton
                icon="bundle"
                onClick={() => void pickBundlePath().then((p) => setBundlePath(p ?? bundlePath))}
              />
            ) : undefined
          }
        />
      ) : kind === 'url' ? (
        <TextField
          id="cmp-url"
          label="Repository URL"
          type="url"
          value={url}
          onChange={setUrl}
          error={showErrors ? sourceError : null}
          placeholder="http://127.0.0.1:8000/"
          hint="Clone bundles are turned off so every run streams from the server."
        />
      ) : (
        <TextField
          id="cmp-repo"
          label="Local repository"
          value={repo}
          onChange={setRepo}
          error={showErrors ? sourceError : null}
          placeholder="/path/to/repo"
          hint="Sluice first writes an uncompressed stream-v2 bundle per chunk size, then applies it."
          after={
            canPick ? (
              <ChooseButton
                icon="folder"
                onClick={() => void pickDirectory(repo || undefined).then((p) => setRepo(p ?? repo))}
              />
            ) : undefined
          }
        />
      )}

      <CheckChoices
        legend="Background closing"
        choices={CLOSER_THREAD_CHOICES}
        chosen={threads}
        onChange={(next) => setThreads(next.sort((a, b) => a - b))}
        label={(t) => `On, ${t} thread${t === 1 ? '' : 's'}`}
      >
        <label className="check">
          <input type="checkbox" checked={closerOff} onChange={(e) => setCloserOff(e.target.checked)} /> Off
        </label>
      </CheckChoices>
      {kind === 'repo' ? (
        <CheckChoices
          legend="Bundle chunk size"
          choices={CHUNK_SIZE_CHOICES}
          chosen={chunks}
          onChange={setChunks}
          label={(c) => `${c / 1024} KiB${c === 4096 ? ' (hg before 4.5)' : ' (hg default)'}`}
        />
      ) : null}
      {kind === 'url' ? (
        <CheckChoices
          legend="Stream format"
          choices={['v1', 'v2'] as const}
          chosen={streams}
          onChange={setStreams}
          label={(v) => `Stream ${v}`}
        />
      ) : null}
      <fieldset className="field emulated" data-testid="simulate-close">
        <legend>Simulated slow close()</legend>
        <label className="check">
          <input
            type="checkbox"
            checked={simulate}
            onChange={(e) => setSimulate(e.target.checked)}
            aria-describedby="cmp-simulate-hint"
          />{' '}
          Simulate slow <code>close()</code> (NTFS-like),{' '}
          <span className="number-with-unit">
            <input
              type="number"
              aria-label="Simulated close delay in ms"
              min={1}
              max={100}
              value={simulateMs}
              onChange={(e) =>
                setSimulateMs(Math.max(1, Math.min(100, Math.round(Number(e.target.value) || 1))))
              }
              className="inline-number"
            />
            ms
          </span>
        </label>
        <p className="field-hint" id="cmp-simulate-hint">
          A <strong>simulation</strong>: the engine waits this long before each close it makes, on the closing
          thread, as a Windows disk with an antivirus scanner does, so you can see what the background closer
          hides. Every closer setting runs with it and without it, side by side. Not a measurement of such a
          disk.
        </p>
      </fieldset>
      {latencyOffer ? (
        <fieldset className="field emulated">
          <legend>Close latency</legend>
          <label className="check">
            <input type="checkbox" checked={withLatency} onChange={(e) => setWithLatency(e.target.checked)} />{' '}
            Also run with <strong>emulated</strong> close latency (
            {latencyLabel(latencyOffer.closeUs).replace('emulated close latency ', '')} per file)
          </label>
          <p className="field-hint">
            Emulated by the host (a preloaded shim delays every <code>close()</code> under{' '}
            {latencyOffer.prefix}), to show what slow file systems such as NTFS do. Not a real measurement of
            such a disk.
          </p>
        </fieldset>
      ) : null}
      <div className="form-row">
        <div className="field inline">
          <label htmlFor="cmp-repeat">Repeat each</label>
          <input
            id="cmp-repeat"
            type="number"
            min={1}
            max={5}
            value={repeat}
            onChange={(e) => setRepeat(Math.max(1, Math.min(5, Number(e.target.value) || 1)))}
          />
        </div>
      </div>
      <FolderField
        id="cmp-out"
        label="Results folder"
        value={parent}
        onChange={setParent}
        error={showErrors ? parentError : null}
        hint="Each comparison writes its repositories into a new dated subfolder here."
      />
      {showErrors && configError ? (
        <p className="field-error" role="alert">
          {configError}
        </p>
      ) : null}
      <div className="form-actions">
        <span className="muted" aria-live="polite">
          {runs} run{runs === 1 ? '' : 's'}, one after another
        </span>
        <button type="submit" className="button primary" disabled={running}>
          <Icon name="play" /> {running ? 'A comparison is running' : 'Run comparison'}
        </button>
      </div>
    </form>
  );
}

const toggle = <T,>(list: T[], v: T, on: boolean): T[] =>
  on ? [...list.filter((x) => x !== v), v] : list.filter((x) => x !== v);

/**
 * A row of checkboxes choosing a subset of `choices`; every chosen value is one more configuration.
 * `children` go first in the row (the closer's "Off", which is not one of the thread counts).
 */
function CheckChoices<T extends number | string>({
  legend,
  choices,
  chosen,
  onChange,
  label,
  children,
}: {
  legend: string;
  choices: readonly T[];
  chosen: T[];
  onChange: (next: T[]) => void;
  label: (v: T) => string;
  children?: ReactNode;
}) {
  return (
    <fieldset className="field">
      <legend>{legend}</legend>
      <div className="check-row">
        {children}
        {choices.map((v) => (
          <label key={v} className="check">
            <input
              type="checkbox"
              checked={chosen.includes(v)}
              onChange={(e) => onChange(toggle(chosen, v, e.target.checked))}
            />{' '}
            {label(v)}
          </label>
        ))}
      </div>
    </fieldset>
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
  const { cancelComparison, removeComparison, exportText, openPath } = useSluiceShallow((s) => ({
    cancelComparison: s.cancelComparison,
    removeComparison: s.removeComparison,
    exportText: s.exportText,
    openPath: s.openPath,
  }));
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
  const done = run.results.filter((r) => r.state === 'done').length;
  const base = `sluice-comparison-${stamp(run.createdAt)}`;

  return (
    <article
      className="card comparison-results"
      aria-labelledby={`run-${run.id}`}
      data-testid="comparison-results"
      data-state={run.state}
    >
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

      <ol className="run-steps">
        {run.results.map((r, i) => (
          <li key={r.configId} className={`run-step step-${r.state}`}>
            <span className={`swatch series-${(i % 8) + 1}`} aria-hidden="true" />
            <span className="run-step-label">{r.label}</span>
            <span className="run-step-state">
              {r.state === 'done'
                ? formatDuration(r.wallMs)
                : r.state === 'running'
                  ? 'running…'
                  : r.state === 'preparing'
                    ? 'generating bundle…'
                    : r.state}
            </span>
          </li>
        ))}
      </ol>

      {done > 0 ? (
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
                        <td>
                          {r.close
                            ? r.close.background
                              ? `${formatCount(r.close.backgroundClosed)} on ${r.close.threads} thread${r.close.threads === 1 ? '' : 's'}`
                              : 'no'
                            : '–'}
                        </td>
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
        </>
      ) : null}
      {run.state !== 'running' && done === 0 && run.results[0]?.error ? (
        <ErrorDetails error={run.results[0].error} />
      ) : null}
    </article>
  );
}
