// Repositories: every repository Sluice cloned or applied, plus the ones added by hand. The host
// keeps each row true while the user works in a terminal (a commit there changes the row within a
// second); the actions start jobs that show in Transfers like a clone.

import { memo, useMemo, useState, type FormEvent } from 'react';
import { errorNotice } from '../lib/errors';
import type { RepoRow } from '../../../shared/library';
import { SearchField } from '../components/fields';
import { Icon } from '../components/Icon';
import { EmptyState } from '../components/EmptyState';
import { ScreenFrame } from '../components/ScreenFrame';
import { formatBytes, formatCount, formatTimestamp } from '../lib/format';
import { filterRepos, sortRepos } from '../store/library';
import { useSluice, useSluiceShallow } from '../store/react';
import type { LibrarySort, TransferJob } from '../store/types';

const SORTS: { value: LibrarySort; label: string }[] = [
  { value: 'name', label: 'Name' },
  { value: 'changed', label: 'Last change' },
  { value: 'pulled', label: 'Last pull' },
  { value: 'size', label: 'Store size' },
  { value: 'added', label: 'Recently added' },
];

/**
 * Pull and Update run as jobs of the engine's `pull` and `update` kinds; until those exist in this
 * build the buttons stay visible, disabled, with the reason.
 */
export const ENGINE_ACTIONS: Record<'pull' | 'update', { available: boolean; reason: string }> = {
  pull: { available: true, reason: '' },
  update: { available: true, reason: '' },
};

export function RepositoriesScreen() {
  const { repos, status, openDialog } = useSluiceShallow((s) => ({
    repos: s.repos,
    status: s.libraryStatus,
    openDialog: s.openDialog,
  }));
  const [query, setQuery] = useState('');
  const [sort, setSort] = useState<LibrarySort>('name');
  const all = useMemo(() => Object.values(repos), [repos]);
  const shown = useMemo(() => sortRepos(filterRepos(all, query), sort), [all, query, sort]);
  const missing = all.filter((r) => r.status === 'missing' || r.status === 'unreadable').length;

  return (
    <ScreenFrame
      id="repositories"
      title="Repositories"
      subtitle={
        all.length
          ? `${all.length} repositor${all.length === 1 ? 'y' : 'ies'}${missing ? `, ${missing} not reachable` : ''}, kept current`
          : 'Repositories you clone or apply appear here.'
      }
      tools={
        <div className="header-tools">
          <SearchField
            id="repo-filter"
            label="Filter repositories"
            placeholder="Filter"
            value={query}
            onChange={setQuery}
          />
          <label className="sort-field">
            <span className="visually-hidden">Sort by</span>
            <select
              value={sort}
              onChange={(e) => setSort(e.target.value as LibrarySort)}
              aria-label="Sort by"
            >
              {SORTS.map((s) => (
                <option key={s.value} value={s.value}>
                  {s.label}
                </option>
              ))}
            </select>
          </label>
          <button type="button" className="button" onClick={() => openDialog({ type: 'add-repository' })}>
            <Icon name="folder" /> Add existing…
          </button>
        </div>
      }
    >
      {status === 'loading' && all.length === 0 ? (
        <p className="muted" aria-busy="true">
          Loading…
        </p>
      ) : all.length === 0 ? (
        <EmptyState icon="bundle" title="No repositories yet" testId="empty-library">
          <p>
            Clone from a URL or apply a bundle, or add a repository you already have: use “Add existing…” or
            drop its folder here.
          </p>
        </EmptyState>
      ) : (
        <>
          {!ENGINE_ACTIONS.pull.available || !ENGINE_ACTIONS.update.available ? (
            <p className="muted library-note" id="library-unavailable">
              {[ENGINE_ACTIONS.pull, ENGINE_ACTIONS.update]
                .filter((a) => !a.available)
                .map((a) => a.reason)
                .join(' ')}
            </p>
          ) : null}
          <ul className="repo-list" data-testid="repo-list" aria-label="Repositories">
            {shown.map((r) => (
              <RepoItem key={r.path} row={r} />
            ))}
          </ul>
          {shown.length === 0 ? <p className="muted center">No repository matches “{query}”.</p> : null}
        </>
      )}
    </ScreenFrame>
  );
}

/** The newest job of `kind` on the repository at `path` (its state shows in the row). */
function latestJob(
  jobs: Record<string, TransferJob>,
  order: string[],
  kind: 'verify' | 'update' | 'pull',
  path: string,
): TransferJob | undefined {
  for (const id of order) {
    const r = jobs[id]!.request;
    if (r?.kind === kind && r.repo === path) return jobs[id];
  }
  return undefined;
}

const busy = (j: TransferJob | undefined) => j?.state === 'running' || j?.state === 'queued';

const JOB_STATE_TEXT: Record<TransferJob['state'], string> = {
  queued: 'queued',
  running: 'running',
  done: 'done',
  failed: 'failed',
  cancelled: 'cancelled',
};

const RepoItem = memo(function RepoItem({ row: r }: { row: RepoRow }) {
  const actions = useSluiceShallow((s) => ({
    verify: s.verifyRepository,
    openFolder: s.openRepositoryFolder,
    openTerminal: s.openRepositoryTerminal,
    copySource: s.copyRepositorySource,
    remove: s.removeRepository,
    trash: s.trashRepository,
  }));
  const verify = useSluice((s) => latestJob(s.jobs, s.jobOrder, 'verify', r.path));
  const update = useSluice((s) => latestJob(s.jobs, s.jobOrder, 'update', r.path));
  const pull = useSluice((s) => latestJob(s.jobs, s.jobOrder, 'pull', r.path));
  const pullIsCheck = pull?.request?.kind === 'pull' && pull.request.incoming === true;
  const [pullOffered, setPullOffered] = useState(false);
  const startPull = (incoming: boolean) => {
    setPullOffered(incoming);
    startJob(
      { kind: 'pull', repo: r.path, ...(incoming ? { incoming: true } : {}) },
      `${incoming ? 'Incoming for' : 'Pull'} ${r.name}`,
    ).catch((err: unknown) => notify(errorNotice(`Could not pull into ${r.name}`, err)));
  };
  const startJob = useSluice((s) => s.startJob);
  const notify = useSluice((s) => s.notify);
  const [confirm, setConfirm] = useState<'remove' | 'delete' | null>(null);
  const [updating, setUpdating] = useState(false);
  const [rev, setRev] = useState('');
  const submitUpdate = (e: FormEvent) => {
    e.preventDefault();
    const target = rev.trim();
    setUpdating(false);
    startJob(
      { kind: 'update', repo: r.path, ...(target ? { rev: target } : {}) },
      `Update ${r.name}${target ? ` to ${target}` : ''}`,
    ).catch((err: unknown) => notify(errorNotice(`Could not update ${r.name}`, err)));
  };
  const reachable = r.status === 'ok';
  const tip = r.tip;
  return (
    <li className={`repo-row repo-${r.status}`} data-testid="repo-row" data-path={r.path} aria-label={r.name}>
      <div className="repo-head">
        <h2 className="repo-name">{r.name}</h2>
        {r.status !== 'ok' ? (
          <span
            className={`state-badge state-${r.status === 'loading' ? 'queued' : 'failed'}`}
            data-testid="repo-status"
          >
            {r.status === 'loading' ? 'reading…' : r.status === 'missing' ? 'missing' : 'unreadable'}
          </span>
        ) : null}
        {tip ? <span className="chip">{tip.branch}</span> : null}
        {tip?.bookmarks.map((b) => (
          <span key={b} className="chip chip-bookmark">
            {b}
          </span>
        ))}
      </div>
      <p className="repo-path mono" title={r.path}>
        {r.path}
      </p>
      {r.problem ? (
        <p className="repo-problem" role="status">
          <Icon name="warning" /> {r.problem}
        </p>
      ) : null}
      <dl className="repo-facts">
        <div>
          <dt>Tip</dt>
          <dd data-testid="repo-tip">
            {tip === undefined ? (
              '–'
            ) : tip === null ? (
              'empty repository'
            ) : (
              <>
                <span className="mono">
                  {tip.rev}:{tip.node}
                </span>{' '}
                <span className="repo-summary">{tip.summary}</span>{' '}
                <span className="muted">
                  {tip.user.replace(/\s*<[^>]*>$/, '')}, {formatTimestamp(tip.date)}
                </span>
              </>
            )}
          </dd>
        </div>
        <div>
          <dt>Working copy</dt>
          <dd data-testid="repo-parent">
            {r.parent === undefined ? (
              '–'
            ) : r.parent === null ? (
              'no working copy'
            ) : (
              <>
                <span className="mono">
                  {r.parent.rev !== undefined ? `${r.parent.rev}:` : ''}
                  {r.parent.node}
                </span>
                {tip && r.parent.rev === tip.rev ? <span className="muted"> (tip)</span> : null}
                {r.parent.merging ? <span className="chip chip-bad">merge in progress</span> : null}
              </>
            )}
          </dd>
        </div>
        <div>
          <dt>Source</dt>
          <dd className="repo-source" title={r.source}>
            {r.source ?? <span className="muted">none (no paths.default)</span>}
          </dd>
        </div>
        <div>
          <dt>Store</dt>
          <dd>
            {r.storeBytes !== undefined
              ? `${formatBytes(r.storeBytes)} in ${formatCount(r.storeFiles ?? 0)} files`
              : '–'}
          </dd>
        </div>
        <div>
          <dt>Last pull</dt>
          <dd>
            {r.lastPullAt ? formatTimestamp(r.lastPullAt) : <span className="muted">not by Sluice</span>}
          </dd>
        </div>
        {verify ? (
          <div>
            <dt>Verify</dt>
            <dd>
              <span className={`state-badge state-${verify.state}`} data-testid="repo-verify-state">
                {verify.state === 'done' ? 'passed' : verify.state}
              </span>
            </dd>
          </div>
        ) : null}
        {update ? (
          <div>
            <dt>Update</dt>
            <dd>
              <span className={`state-badge state-${update.state}`} data-testid="repo-update-state">
                {JOB_STATE_TEXT[update.state]}
              </span>{' '}
              {update.state === 'failed' && update.error ? (
                <span className="muted">{update.error.message}</span>
              ) : null}
            </dd>
          </div>
        ) : null}
      </dl>
      {pull ? (
        <p className="repo-pull" data-testid="repo-pull">
          <span className={`state-badge state-${pull.state}`} data-testid="repo-pull-state">
            {pullIsCheck ? 'incoming check' : 'pull'} {JOB_STATE_TEXT[pull.state]}
          </span>{' '}
          {pull.state === 'failed' && pull.error ? <span className="muted">{pull.error.message}</span> : null}
          {pullIsCheck && pull.state === 'done' && pullOffered ? (
            <>
              <span className="muted">Checked {r.source}; the count is in the job’s log (Transfers).</span>{' '}
              <button type="button" className="button small primary" onClick={() => startPull(false)}>
                Pull now
              </button>
              <button type="button" className="button small" onClick={() => setPullOffered(false)}>
                Not now
              </button>
            </>
          ) : null}
        </p>
      ) : null}
      {updating ? (
        <form className="repo-update" onSubmit={submitUpdate} aria-label={`Update ${r.name}`}>
          <label htmlFor={`update-rev-${r.path}`}>Revision</label>
          <input
            id={`update-rev-${r.path}`}
            value={rev}
            onChange={(e) => setRev(e.target.value)}
            placeholder="empty: @, else the tip of default"
            spellCheck={false}
            autoComplete="off"
            autoFocus
          />
          <button type="submit" className="button small primary">
            Update
          </button>
          <button type="button" className="button small" onClick={() => setUpdating(false)}>
            Cancel
          </button>
          <span className="muted">Like hg update: refused when the working copy has local changes.</span>
        </form>
      ) : null}
      <div className="repo-actions" role="group" aria-label={`Actions for ${r.name}`}>
        <button
          type="button"
          className="button small"
          disabled={!ENGINE_ACTIONS.pull.available || !reachable || !r.source || busy(pull)}
          title={
            ENGINE_ACTIONS.pull.available
              ? 'Check for incoming changesets, then pull them'
              : ENGINE_ACTIONS.pull.reason
          }
          aria-describedby={ENGINE_ACTIONS.pull.available ? undefined : 'library-unavailable'}
          onClick={() => startPull(true)}
        >
          <Icon name="download" /> Pull…
        </button>
        <button
          type="button"
          className="button small"
          disabled={!ENGINE_ACTIONS.update.available || !reachable || busy(update)}
          title={
            ENGINE_ACTIONS.update.available
              ? 'Update the working copy to a revision'
              : ENGINE_ACTIONS.update.reason
          }
          aria-describedby={ENGINE_ACTIONS.update.available ? undefined : 'library-unavailable'}
          aria-expanded={updating}
          onClick={() => setUpdating((v) => !v)}
        >
          <Icon name="apply" /> Update…
        </button>
        <button
          type="button"
          className="button small"
          disabled={!reachable || busy(verify)}
          onClick={() => void actions.verify(r.path)}
        >
          <Icon name="verify" /> Verify
        </button>
        <button
          type="button"
          className="button small"
          disabled={!reachable}
          onClick={() => void actions.openFolder(r.path)}
        >
          <Icon name="folder" /> Open folder
        </button>
        <button
          type="button"
          className="button small"
          disabled={!reachable}
          onClick={() => void actions.openTerminal(r.path)}
        >
          <Icon name="log" /> Terminal
        </button>
        <button
          type="button"
          className="button small"
          disabled={!r.source}
          onClick={() => void actions.copySource(r.path)}
        >
          <Icon name="external" /> Copy source
        </button>
        {confirm ? (
          <span
            className="confirm"
            role="group"
            aria-label={
              confirm === 'delete' ? 'Confirm moving to the trash' : 'Confirm removing from the list'
            }
          >
            <span>
              {confirm === 'delete'
                ? `Move ${r.name} to the trash?`
                : `Remove ${r.name} from the list? The folder stays.`}
            </span>
            <button
              type="button"
              className="button small danger"
              onClick={() => {
                setConfirm(null);
                void (confirm === 'delete' ? actions.trash(r.path) : actions.remove(r.path));
              }}
            >
              {confirm === 'delete' ? 'Move to trash' : 'Remove'}
            </button>
            <button type="button" className="button small" onClick={() => setConfirm(null)} autoFocus>
              Keep
            </button>
          </span>
        ) : (
          <>
            <button type="button" className="button small ghost" onClick={() => setConfirm('remove')}>
              <Icon name="close" /> Remove from list
            </button>
            <button
              type="button"
              className="button small ghost danger-text"
              disabled={r.status === 'missing'}
              onClick={() => setConfirm('delete')}
            >
              <Icon name="trash" /> Delete…
            </button>
          </>
        )}
      </div>
    </li>
  );
});
