// A library row's state at a glance: the working copy's hg status counts (a dot when it has
// changes), its branch and active bookmark, the last fetch's incoming and outgoing counts, and
// the row's Fetch with its own background interval. A source that wants credentials shows "needs
// sign-in" and a "Sign in…" that runs the fetch again, asking (the clone's sign-in dialog).

import { memo } from 'react';
import {
  FETCH_INTERVALS,
  type FetchInterval,
  type RepoRow,
  type WorkingCopyState,
} from '../../../shared/library';
import { invoke } from '../api';
import { errorNotice } from '../lib/errors';
import { formatTimestamp } from '../lib/format';
import { useSluice } from '../store/react';

const KINDS = [
  ['modified', 'M', 'modified'],
  ['added', 'A', 'added'],
  ['removed', 'R', 'removed'],
  ['deleted', '!', 'missing'],
  ['unknown', '?', 'not tracked'],
] as const;

function DirtyIndicator({ wc }: { wc: WorkingCopyState }) {
  if ('problem' in wc)
    return (
      <span className="repo-dirty muted" data-testid="repo-dirty" title={wc.problem}>
        status unknown
      </span>
    );
  const parts = KINDS.filter(([k]) => wc[k] > 0);
  if (parts.length === 0)
    return (
      <span className="repo-dirty repo-clean" data-testid="repo-dirty" data-dirty="0">
        clean
      </span>
    );
  const total = parts.reduce((n, [k]) => n + wc[k], 0);
  const title = parts.map(([k, , words]) => `${wc[k]} ${words}`).join(', ');
  return (
    <span className="repo-dirty" data-testid="repo-dirty" data-dirty={total} title={title}>
      <span className="dirty-dot" aria-hidden="true">
        ●
      </span>{' '}
      {parts.map(([k, letter]) => `${letter}${wc[k]}`).join(' ')}
    </span>
  );
}

function FetchCounts({ row }: { row: RepoRow }) {
  const f = row.fetch;
  if (row.fetching) return <span className="repo-fetch muted">fetching…</span>;
  if (!f) return null;
  if ('error' in f)
    return (
      <span className="repo-fetch repo-fetch-failed" data-testid="repo-fetch" title={f.error.message}>
        fetch failed ({f.error.code})
      </span>
    );
  if ('needsSignIn' in f) return <SignInNeeded row={row} message={f.needsSignIn.message} />;
  return (
    <span className="repo-fetch" data-testid="repo-fetch" title={`fetched ${formatTimestamp(f.at)}`}>
      <span data-testid="repo-incoming" data-count={f.incoming}>
        ↓{f.incoming} incoming
      </span>{' '}
      <span data-testid="repo-outgoing" data-count={f.outgoing}>
        ↑{f.outgoing} outgoing
      </span>
    </span>
  );
}

/** The source wants credentials: background fetches wait for a "Sign in…" that gets through. */
function SignInNeeded({ row, message }: { row: RepoRow; message: string }) {
  const notify = useSluice((s) => s.notify);
  return (
    <span className="repo-fetch repo-fetch-failed" data-testid="repo-fetch" data-state="needs-sign-in">
      <span title={`${message} (background fetches of this repository wait until you sign in)`}>
        needs sign-in
      </span>{' '}
      <button
        type="button"
        className="button small"
        onClick={() =>
          void invoke('library:signIn', row.path).catch((err: unknown) =>
            notify(errorNotice(`Could not sign in to ${row.name}'s source`, err)),
          )
        }
        aria-label={`Sign in to fetch ${row.name}`}
      >
        Sign in…
      </button>
    </span>
  );
}

/** Fetch now, and this repository's own background interval (or the library's). */
function FetchControls({ row }: { row: RepoRow }) {
  const notify = useSluice((s) => s.notify);
  const fail = (what: string) => (err: unknown) => notify(errorNotice(`Could not ${what} ${row.name}`, err));
  return (
    <>
      <button
        type="button"
        className="button small ghost"
        disabled={row.fetching === true}
        onClick={() => void invoke('library:fetch', row.path).catch(fail('fetch'))}
        aria-label={`Fetch ${row.name}`}
        title="Count incoming and outgoing changesets now (nothing is pulled)"
      >
        Fetch
      </button>
      <select
        className="repo-fetch-interval"
        aria-label={`Background fetch for ${row.name}`}
        value={row.fetchInterval ?? 'library'}
        onChange={(e) =>
          void invoke(
            'library:setFetchInterval',
            row.path,
            e.target.value === 'library' ? null : (Number(e.target.value) as FetchInterval),
          ).catch(fail('set the fetch interval of'))
        }
      >
        <option value="library">fetch: as Settings</option>
        {FETCH_INTERVALS.map((m) => (
          <option key={m} value={m}>
            {m === 0 ? 'fetch: off' : `fetch: every ${m} min`}
          </option>
        ))}
      </select>
    </>
  );
}

export const RepoState = memo(function RepoState({ row }: { row: RepoRow }) {
  const wc = row.workingCopy;
  if (row.status !== 'ok' && !wc && !row.fetch) return null;
  return (
    <p className="repo-state" data-testid="repo-state">
      {wc ? <DirtyIndicator wc={wc} /> : null}
      {wc && !('problem' in wc) ? (
        <span className="chip" data-testid="repo-branch" title="working copy branch (hg branch)">
          {wc.branch}
          {wc.bookmark ? <span data-testid="repo-bookmark"> ★ {wc.bookmark}</span> : null}
        </span>
      ) : null}
      <FetchCounts row={row} />
      {row.source !== undefined && row.status === 'ok' ? <FetchControls row={row} /> : null}
    </p>
  );
});
