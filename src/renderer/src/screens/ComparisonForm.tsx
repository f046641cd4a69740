// The Comparisons screen's form: what to measure (a bundle, a URL, a local repository), the
// configurations to run it under, and where the runs write.

import { useEffect, useState, type FormEvent, type ReactNode } from 'react';
import { ChooseButton, FolderField, TextField } from '../components/fields';
import { Icon } from '../components/Icon';
import { joinPath } from '../lib/paths';
import { useSluice, useSluiceShallow } from '../store/react';
import { validateCloneUrl, validateDestination } from '../store/requests';
import {
  CHUNK_SIZE_CHOICES,
  CLOSER_THREAD_CHOICES,
  emulatedLatencyOf,
  latencyLabel,
} from '../store/comparison-plan';
import type { CloserChoice, ComparisonSource } from '../store/types';

type SourceKind = ComparisonSource['kind'];

/** A run's folder and export names: local date and time, sortable. */
export function stamp(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}

/** The form's choices, what is wrong with them, and the number of runs they make. */
function useComparisonChoices() {
  const appInfo = useSluice((s) => s.appInfo);
  const latencyOffer = emulatedLatencyOf(appInfo);
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
  const [addToLibrary, setAddToLibrary] = useState(false);
  const [keepFolders, setKeepFolders] = useState(false);

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
  const variants = kind === 'repo' ? chunks.length : kind === 'url' ? streams.length : 1;
  const runs =
    closer.length *
    Math.max(1, variants) *
    (latencyOffer && withLatency ? 2 : 1) *
    (simulate ? 2 : 1) *
    repeat;
  const source: ComparisonSource =
    kind === 'bundle'
      ? { kind, bundlePath: bundlePath.trim() }
      : kind === 'url'
        ? { kind, url: url.trim() }
        : { kind, repo: repo.trim() };
  const choices = {
    closer,
    chunkSizes: [...chunks].sort((a, b) => a - b),
    streams: [...streams].sort(),
    latenciesUs: latencyOffer && withLatency ? [0, latencyOffer.closeUs] : [],
    ...(simulate ? { simulateCloseMs: [simulateMs, 0] } : {}),
    repeat,
    addToLibrary,
    keepFolders,
  };
  return {
    ...{ kind, setKind, bundlePath, setBundlePath, url, setUrl, repo, setRepo },
    ...{ closerOff, setCloserOff, threads, setThreads, chunks, setChunks, streams, setStreams },
    ...{ withLatency, setWithLatency, simulate, setSimulate, simulateMs, setSimulateMs },
    ...{ repeat, setRepeat, parent, setParent, latencyOffer },
    ...{ addToLibrary, setAddToLibrary, keepFolders, setKeepFolders },
    ...{ sourceError, configError, parentError: validateDestination(parent), runs, source, choices },
  };
}

type Choices = ReturnType<typeof useComparisonChoices>;

export function ComparisonForm({ onStarted }: { onStarted: (id: string) => void }) {
  const { runComparison, notify } = useSluiceShallow((s) => ({
    runComparison: s.runComparison,
    notify: s.notify,
  }));
  const platform = useSluice((s) => s.appInfo?.platform);
  const running = useSluice((s) => s.comparisons.some((c) => c.state === 'running'));
  const c = useComparisonChoices();
  const [showErrors, setShowErrors] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (c.sourceError || c.configError || c.parentError) {
      setShowErrors(true);
      return;
    }
    const outDir = joinPath(c.parent.trim(), stamp(Date.now()), platform);
    try {
      onStarted(await runComparison(c.source, c.choices, outDir));
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
      <SourceKindField kind={c.kind} onChange={c.setKind} />
      <SourceField c={c} showErrors={showErrors} />
      <ConfigurationFields c={c} />
      <SimulateCloseField c={c} />
      <CloseLatencyField c={c} />
      <div className="form-row">
        <div className="field inline">
          <label htmlFor="cmp-repeat">Repeat each</label>
          <input
            id="cmp-repeat"
            type="number"
            min={1}
            max={5}
            value={c.repeat}
            onChange={(e) => c.setRepeat(Math.max(1, Math.min(5, Number(e.target.value) || 1)))}
          />
        </div>
      </div>
      <FolderField
        id="cmp-out"
        label="Results folder"
        value={c.parent}
        onChange={c.setParent}
        error={showErrors ? c.parentError : null}
        hint="Each comparison writes its repositories into a new dated subfolder here."
      />
      <KeepFields c={c} />
      {showErrors && c.configError ? (
        <p className="field-error" role="alert">
          {c.configError}
        </p>
      ) : null}
      <div className="form-actions">
        <span className="muted" aria-live="polite">
          {c.runs} run{c.runs === 1 ? '' : 's'}, one after another
        </span>
        <button type="submit" className="button primary" disabled={running}>
          <Icon name="play" /> {running ? 'A comparison is running' : 'Run comparison'}
        </button>
      </div>
    </form>
  );
}

/** What the runs leave behind: by default nothing in the library and nothing on disk. */
function KeepFields({ c }: { c: Choices }) {
  return (
    <fieldset className="field">
      <legend>When the comparison ends</legend>
      <label className="check">
        <input type="checkbox" checked={c.keepFolders} onChange={(e) => c.setKeepFolders(e.target.checked)} />{' '}
        Keep the repositories on disk
      </label>
      <label className="check">
        <input
          type="checkbox"
          checked={c.addToLibrary}
          onChange={(e) => c.setAddToLibrary(e.target.checked)}
        />{' '}
        Add the repositories to the library
      </label>
    </fieldset>
  );
}

const SOURCE_KINDS = [
  ['bundle', 'Apply a bundle'],
  ['url', 'Clone a URL'],
  ['repo', 'Bundle + apply a repository'],
] as const;

function SourceKindField({ kind, onChange }: { kind: SourceKind; onChange: (kind: SourceKind) => void }) {
  return (
    <fieldset className="field">
      <legend>What to measure</legend>
      <div className="segmented" role="radiogroup" aria-label="Source">
        {SOURCE_KINDS.map(([k, label]) => (
          <label key={k} className={`segment${kind === k ? ' selected' : ''}`}>
            <input
              type="radio"
              name="comparison-source"
              value={k}
              checked={kind === k}
              onChange={() => onChange(k)}
            />
            <span>{label}</span>
          </label>
        ))}
      </div>
    </fieldset>
  );
}

function SourceField({ c, showErrors }: { c: Choices; showErrors: boolean }) {
  const { pickBundlePath, pickDirectory } = useSluiceShallow((s) => ({
    pickBundlePath: s.pickBundlePath,
    pickDirectory: s.pickDirectory,
  }));
  const canPick = useSluice((s) => s.appInfo?.host === 'electron');
  const error = showErrors ? c.sourceError : null;
  if (c.kind === 'bundle')
    return (
      <TextField
        id="cmp-bundle"
        label="Bundle file"
        value={c.bundlePath}
        onChange={c.setBundlePath}
        error={error}
        placeholder="/path/to/stream-v2.hg"
        after={
          canPick ? (
            <ChooseButton
              icon="bundle"
              onClick={() => void pickBundlePath().then((p) => c.setBundlePath(p ?? c.bundlePath))}
            />
          ) : undefined
        }
      />
    );
  if (c.kind === 'url')
    return (
      <TextField
        id="cmp-url"
        label="Repository URL"
        type="url"
        value={c.url}
        onChange={c.setUrl}
        error={error}
        placeholder="http://127.0.0.1:8000/"
        hint="Clone bundles are turned off so every run streams from the server."
      />
    );
  return (
    <TextField
      id="cmp-repo"
      label="Local repository"
      value={c.repo}
      onChange={c.setRepo}
      error={error}
      placeholder="/path/to/repo"
      hint="Sluice first writes an uncompressed stream-v2 bundle per chunk size, then applies it."
      after={
        canPick ? (
          <ChooseButton
            icon="folder"
            onClick={() => void pickDirectory(c.repo || undefined).then((p) => c.setRepo(p ?? c.repo))}
          />
        ) : undefined
      }
    />
  );
}

function ConfigurationFields({ c }: { c: Choices }) {
  return (
    <>
      <CheckChoices
        legend="Background closing"
        choices={CLOSER_THREAD_CHOICES}
        chosen={c.threads}
        onChange={(next) => c.setThreads(next.sort((a, b) => a - b))}
        label={(t) => `On, ${t} thread${t === 1 ? '' : 's'}`}
      >
        <label className="check">
          <input type="checkbox" checked={c.closerOff} onChange={(e) => c.setCloserOff(e.target.checked)} />{' '}
          Off
        </label>
      </CheckChoices>
      {c.kind === 'repo' ? (
        <CheckChoices
          legend="Bundle chunk size"
          choices={CHUNK_SIZE_CHOICES}
          chosen={c.chunks}
          onChange={c.setChunks}
          label={(v) => `${v / 1024} KiB${v === 4096 ? ' (hg before 4.5)' : ' (hg default)'}`}
        />
      ) : null}
      {c.kind === 'url' ? (
        <CheckChoices
          legend="Stream format"
          choices={['v1', 'v2'] as const}
          chosen={c.streams}
          onChange={c.setStreams}
          label={(v) => `Stream ${v}`}
        />
      ) : null}
    </>
  );
}

function SimulateCloseField({ c }: { c: Choices }) {
  return (
    <fieldset className="field emulated" data-testid="simulate-close">
      <legend>Simulated slow close()</legend>
      <label className="check">
        <input
          type="checkbox"
          checked={c.simulate}
          onChange={(e) => c.setSimulate(e.target.checked)}
          aria-describedby="cmp-simulate-hint"
        />{' '}
        Simulate slow <code>close()</code> (NTFS-like),{' '}
        <span className="number-with-unit">
          <input
            type="number"
            aria-label="Simulated close delay in ms"
            min={1}
            max={100}
            value={c.simulateMs}
            onChange={(e) =>
              c.setSimulateMs(Math.max(1, Math.min(100, Math.round(Number(e.target.value) || 1))))
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
  );
}

function CloseLatencyField({ c }: { c: Choices }) {
  const offer = c.latencyOffer;
  if (!offer) return null;
  return (
    <fieldset className="field emulated">
      <legend>Close latency</legend>
      <label className="check">
        <input type="checkbox" checked={c.withLatency} onChange={(e) => c.setWithLatency(e.target.checked)} />{' '}
        Also run with <strong>emulated</strong> close latency (
        {latencyLabel(offer.closeUs).replace('emulated close latency ', '')} per file)
      </label>
      <p className="field-hint">
        Emulated by the host (a preloaded shim delays every <code>close()</code> under {offer.prefix}), to
        show what slow file systems such as NTFS do. Not a real measurement of such a disk.
      </p>
    </fieldset>
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
