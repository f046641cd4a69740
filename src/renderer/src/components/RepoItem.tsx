// One repository of the library: what it is (tip, working copy, source, store), the state of its
// last pull, update and verify, and its actions. In the compact list only the head, path and
// actions show.

import { memo, useState, type FormEvent } from 'react';
import { errorNotice, explainFailure } from '../lib/errors';
import type { RepoRow } from '../../../shared/library';
import { Icon } from './Icon';
import { RepoState } from './RepoState';
import { formatBytes, formatCount, formatTimestamp } from '../lib/format';
import { baseName } from '../lib/paths';
import { useSluice, useSluiceShallow } from '../store/react';
import type { TransferJob } from '../store/types';

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

/** Why the repository's jobs cannot run, or null when they can. */
function unavailableReason(r: RepoRow): string | null {
  if (r.status === 'missing') return `The folder is missing: ${r.path}`;
  if (r.status === 'unreadable') return `The repository cannot be read${r.problem ? `: ${r.problem}` : ''}`;
  if (r.status === 'loading') return 'Still reading the repository';
  return null;
}

export const RepoItem = memo(function RepoItem({ row: r }: { row: RepoRow }) {
  const verify = useSluice((s) => latestJob(s.jobs, s.jobOrder, 'verify', r.path));
  const update = useSluice((s) => latestJob(s.jobs, s.jobOrder, 'update', r.path));
  const pull = useSluice((s) => latestJob(s.jobs, s.jobOrder, 'pull', r.path));
  const [updating, setUpdating] = useState(false);
  return (
    <li className={`repo-row repo-${r.status}`} data-testid="repo-row" data-path={r.path} aria-label={r.name}>
      <RepoHead row={r} />
      <p className="repo-path mono" title={r.path}>
        {r.path}
      </p>
      <RepoState row={r} />
      {r.problem ? (
        <p className="repo-problem" role="status" id={`repo-problem-${r.path}`}>
          <Icon name="warning" /> {r.problem}
        </p>
      ) : null}
      <RepoFacts row={r} verify={verify} update={update} />
      {pull ? <RepoPullState row={r} pull={pull} /> : null}
      {updating ? <RepoUpdateForm row={r} onClose={() => setUpdating(false)} /> : null}
      <RepoActions
        row={r}
        busy={{ pull: busy(pull), update: busy(update), verify: busy(verify) }}
        updating={updating}
        onToggleUpdate={() => setUpdating((v) => !v)}
      />
    </li>
  );
});

function RepoHead({ row: r }: { row: RepoRow }) {
  const tip = r.tip;
  return (
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
  );
}

function RepoFacts({ row: r, verify, update }: { row: RepoRow; verify?: TransferJob; update?: TransferJob }) {
  return (
    <dl className="repo-facts">
      <div>
        <dt>Tip</dt>
        <dd data-testid="repo-tip">
          <TipText row={r} />
        </dd>
      </div>
      <div>
        <dt>Working copy</dt>
        <dd data-testid="repo-parent">
          <ParentText row={r} />
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
        <dd>{r.lastPullAt ? formatTimestamp(r.lastPullAt) : <span className="muted">not by Sluice</span>}</dd>
      </div>
      {verify ? (
        <div>
          <dt>Verify</dt>
          <dd>
            <JobStateBadge job={verify} testId="repo-verify-state" doneText="passed" />
          </dd>
        </div>
      ) : null}
      {update ? (
        <div className="repo-fact-wide">
          <dt>Update</dt>
          <dd>
            <JobStateBadge job={update} testId="repo-update-state" />
          </dd>
        </div>
      ) : null}
    </dl>
  );
}

function TipText({ row: r }: { row: RepoRow }) {
  const tip = r.tip;
  if (tip === undefined) return <>–</>;
  if (tip === null) return <>empty repository</>;
  return (
    <>
      <span className="mono">
        {tip.rev}:{tip.node}
      </span>{' '}
      <span className="repo-summary">{tip.summary}</span>{' '}
      <span className="muted">
        {tip.user.replace(/\s*<[^>]*>$/, '')}, {formatTimestamp(tip.date)}
      </span>
    </>
  );
}

function ParentText({ row: r }: { row: RepoRow }) {
  const p = r.parent;
  if (p === undefined) return <>–</>;
  if (p === null) return <>no working copy</>;
  return (
    <>
      <span className="mono">
        {p.rev !== undefined ? `${p.rev}:` : ''}
        {p.node}
      </span>
      {r.tip && p.rev === r.tip.rev ? <span className="muted"> (tip)</span> : null}
      {p.merging ? <span className="chip chip-bad">merge in progress</span> : null}
    </>
  );
}

/** A job's state, and for a failed one its reason (wrapped, whole in the tooltip). */
function JobStateBadge({
  job,
  testId,
  doneText,
  prefix,
}: {
  job: TransferJob;
  testId: string;
  doneText?: string;
  /** what the job is, before its state ("incoming check done") */
  prefix?: string;
}) {
  const reason = job.state === 'failed' && job.error ? explainFailure(job.error).title : null;
  return (
    <>
      <span className={`state-badge state-${job.state}`} data-testid={testId}>
        {prefix ? `${prefix} ` : ''}
        {job.state === 'done' && doneText ? doneText : job.state}
      </span>{' '}
      {reason && job.error ? (
        <span className="job-reason muted" title={job.error.message} data-testid={`${testId}-reason`}>
          {reason}
        </span>
      ) : null}
    </>
  );
}

function RepoPullState({ row: r, pull }: { row: RepoRow; pull: TransferJob }) {
  const { startJob, notify, dismissed, dismiss } = useSluiceShallow((s) => ({
    startJob: s.startJob,
    notify: s.notify,
    dismissed: s.incomingDismissed[pull.jobId] === true,
    dismiss: s.dismissIncoming,
  }));
  const isCheck = pull.request?.kind === 'pull' && pull.request.incoming === true;
  const incoming = pull.done?.incoming;
  const pullNow = () =>
    startJob({ kind: 'pull', repo: r.path }, `Pull ${r.name}`).catch((err: unknown) =>
      notify(errorNotice(`Could not pull into ${r.name}`, err)),
    );
  return (
    <p className="repo-pull" data-testid="repo-pull">
      <JobStateBadge job={pull} testId="repo-pull-state" prefix={isCheck ? 'incoming check' : 'pull'} />
      {isCheck && pull.state === 'done' && incoming !== undefined ? (
        <span data-testid="repo-incoming">
          {incoming === 0
            ? 'No incoming changesets: up to date.'
            : `${formatCount(incoming)} incoming changeset${incoming === 1 ? '' : 's'}.`}
        </span>
      ) : null}{' '}
      {isCheck && pull.state === 'done' && (incoming ?? 0) > 0 && !dismissed ? (
        <>
          <button
            type="button"
            className="button small primary"
            onClick={() => {
              dismiss(pull.jobId);
              void pullNow();
            }}
          >
            Pull now
          </button>
          <button type="button" className="button small" onClick={() => dismiss(pull.jobId)}>
            Not now
          </button>
        </>
      ) : null}
    </p>
  );
}

function RepoUpdateForm({ row: r, onClose }: { row: RepoRow; onClose: () => void }) {
  const { startJob, notify } = useSluiceShallow((s) => ({ startJob: s.startJob, notify: s.notify }));
  const [rev, setRev] = useState('');
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const target = rev.trim();
    onClose();
    startJob(
      { kind: 'update', repo: r.path, ...(target ? { rev: target } : {}) },
      `Update ${r.name}${target ? ` to ${target}` : ''}`,
    ).catch((err: unknown) => notify(errorNotice(`Could not update ${r.name}`, err)));
  };
  return (
    <form className="repo-update" onSubmit={submit} aria-label={`Update ${r.name}`}>
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
      <button type="button" className="button small" onClick={onClose}>
        Cancel
      </button>
      <span className="muted">Like hg update: refused when the working copy has local changes.</span>
    </form>
  );
}

function RepoActions({
  row: r,
  busy: running,
  updating,
  onToggleUpdate,
}: {
  row: RepoRow;
  busy: { pull: boolean; update: boolean; verify: boolean };
  updating: boolean;
  onToggleUpdate: () => void;
}) {
  const actions = useSluiceShallow((s) => ({
    verify: s.verifyRepository,
    openFolder: s.openRepositoryFolder,
    openTerminal: s.openRepositoryTerminal,
    copySource: s.copyRepositorySource,
    startJob: s.startJob,
    notify: s.notify,
  }));
  const unavailable = unavailableReason(r);
  const checkIncoming = () =>
    actions
      .startJob({ kind: 'pull', repo: r.path, incoming: true }, `Incoming for ${r.name}`)
      .catch((err: unknown) => actions.notify(errorNotice(`Could not pull into ${r.name}`, err)));
  const why = (ok: string) => unavailable ?? ok;
  return (
    <div className="repo-actions" role="group" aria-label={`Actions for ${r.name}`}>
      <button
        type="button"
        className="button small"
        disabled={unavailable !== null || !r.source || running.pull}
        title={r.source ? why('Check for incoming changesets, then pull them') : 'No source to pull from'}
        onClick={() => void checkIncoming()}
      >
        <Icon name="download" /> Pull…
      </button>
      <button
        type="button"
        className="button small"
        disabled={unavailable !== null || running.update}
        title={why('Update the working copy to a revision')}
        aria-expanded={updating}
        onClick={onToggleUpdate}
      >
        <Icon name="apply" /> Update…
      </button>
      <button
        type="button"
        className="button small"
        disabled={unavailable !== null || running.verify}
        title={why("Check the repository's integrity, like hg verify")}
        onClick={() => void actions.verify(r.path)}
      >
        <Icon name="verify" /> Verify
      </button>
      <button
        type="button"
        className="button small"
        disabled={unavailable !== null}
        title={why('Open the folder')}
        onClick={() => void actions.openFolder(r.path)}
      >
        <Icon name="folder" /> Open folder
      </button>
      <button
        type="button"
        className="button small"
        disabled={unavailable !== null}
        title={why('Open a terminal in the repository')}
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
      <RepoRemoval row={r} />
    </div>
  );
}

/**
 * Remove from list, and Delete… as the host can (AppInfo.deleteRepository): to the trash
 * (Electron), or for good after typing the folder's name (the web host has no trash).
 */
function RepoRemoval({ row: r }: { row: RepoRow }) {
  const { remove, trash, deleteFolder, deleteHow } = useSluiceShallow((s) => ({
    remove: s.removeRepository,
    trash: s.trashRepository,
    deleteFolder: s.deleteRepositoryFolder,
    deleteHow: s.appInfo?.deleteRepository,
  }));
  const [confirm, setConfirm] = useState<'remove' | 'delete' | null>(null);
  if (!confirm)
    return (
      <>
        <button type="button" className="button small ghost" onClick={() => setConfirm('remove')}>
          <Icon name="close" /> Remove from list
        </button>
        {deleteHow ? (
          <button
            type="button"
            className="button small ghost danger-text"
            disabled={r.status === 'missing'}
            onClick={() => setConfirm('delete')}
          >
            <Icon name="trash" /> {deleteHow === 'trash' ? 'Delete…' : 'Delete folder permanently…'}
          </button>
        ) : null}
      </>
    );
  if (confirm === 'delete' && deleteHow === 'permanent')
    return <PermanentDelete row={r} onDone={() => setConfirm(null)} deleteFolder={deleteFolder} />;
  return (
    <span
      className="confirm"
      role="group"
      aria-label={confirm === 'delete' ? 'Confirm moving to the trash' : 'Confirm removing from the list'}
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
          void (confirm === 'delete' ? trash(r.path) : remove(r.path));
        }}
      >
        {confirm === 'delete' ? 'Move to trash' : 'Remove'}
      </button>
      <button type="button" className="button small" onClick={() => setConfirm(null)} autoFocus>
        Keep
      </button>
    </span>
  );
}

/** Deleting for good: the folder's name typed first, as nothing can bring it back. */
function PermanentDelete({
  row: r,
  onDone,
  deleteFolder,
}: {
  row: RepoRow;
  onDone: () => void;
  deleteFolder: (path: string, typedName: string) => Promise<void>;
}) {
  const [typed, setTyped] = useState('');
  const folderName = baseName(r.path);
  return (
    <span className="confirm" role="group" aria-label="Confirm deleting the folder permanently">
      <label htmlFor={`delete-${r.path}`}>
        Delete {r.path} and everything in it? This cannot be undone. Type {folderName} to confirm.
      </label>
      <input
        id={`delete-${r.path}`}
        value={typed}
        onChange={(e) => setTyped(e.target.value)}
        autoFocus
        autoComplete="off"
        spellCheck={false}
      />
      <button
        type="button"
        className="button small danger"
        disabled={typed !== folderName}
        onClick={() => {
          onDone();
          void deleteFolder(r.path, typed);
        }}
      >
        Delete permanently
      </button>
      <button type="button" className="button small" onClick={onDone}>
        Keep
      </button>
    </span>
  );
}
