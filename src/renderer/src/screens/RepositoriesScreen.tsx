// Repositories: every repository Sluice cloned or applied, plus the ones added by hand. The host
// keeps each row true while the user works in a terminal (a commit there changes the row within a
// second); the actions start jobs that show in Transfers like a clone.

import { useMemo, useState } from 'react';
import { SearchField } from '../components/fields';
import { RepoItem } from '../components/RepoItem';
import { Icon } from '../components/Icon';
import { EmptyState } from '../components/EmptyState';
import { DensityToggle, ScreenFrame } from '../components/ScreenFrame';
import { invoke } from '../api';
import { errorNotice } from '../lib/errors';
import { filterRepos, sortRepos } from '../store/library';
import { useSluiceShallow } from '../store/react';
import type { LibrarySort } from '../store/types';

const SORTS: { value: LibrarySort; label: string }[] = [
  { value: 'name', label: 'Name' },
  { value: 'changed', label: 'Last change' },
  { value: 'pulled', label: 'Last pull' },
  { value: 'size', label: 'Store size' },
  { value: 'added', label: 'Recently added' },
];

export function RepositoriesScreen() {
  const { repos, status, openDialog, density, notify } = useSluiceShallow((s) => ({
    repos: s.repos,
    status: s.libraryStatus,
    openDialog: s.openDialog,
    density: s.density,
    notify: s.notify,
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
          <DensityToggle />
          <button
            type="button"
            className="button"
            disabled={all.length === 0}
            title="Count what every repository's source has that it lacks, and the reverse (nothing is pulled)"
            onClick={() =>
              void invoke('library:fetchAll').catch((err: unknown) =>
                notify(errorNotice('Could not fetch the repositories', err)),
              )
            }
          >
            Fetch all
          </button>
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
          <ul
            className={`repo-list${density === 'compact' ? ' compact' : ''}`}
            data-testid="repo-list"
            aria-label="Repositories"
          >
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
