// Library slice: the repositories Sluice knows, kept current by the host's `library:update`
// pushes (the host watches each repository filecache-style), with the row actions. Sorting and
// filtering are pure functions so the screen and the tests share them.

import type { StateCreator } from 'zustand/vanilla';
import { errorNotice } from '../lib/errors';
import { baseName } from '../lib/paths';
import type { LibraryUpdate, RepoRow } from '../../../shared/library';
import type { LibrarySlice, LibrarySort, SluiceState, StoreDeps } from './types';

export function createLibrarySlice(deps: StoreDeps): StateCreator<SluiceState, [], [], LibrarySlice> {
  return (set, get) => ({
    repos: {},
    libraryStatus: 'idle',
    incomingDismissed: {},
    dismissIncoming: (jobId) => set({ incomingDismissed: { ...get().incomingDismissed, [jobId]: true } }),

    loadLibrary: async () => {
      set({ libraryStatus: Object.keys(get().repos).length ? 'ready' : 'loading' });
      try {
        const rows = await deps.api.invoke('library:list');
        set({ repos: Object.fromEntries(rows.map((r) => [r.path, r])), libraryStatus: 'ready' });
      } catch (e) {
        set({ libraryStatus: 'error' });
        get().notify(errorNotice('Could not load the repository library', e));
      }
    },

    ingestLibrary: (update: LibraryUpdate) => {
      const repos = { ...get().repos };
      for (const row of update.rows) repos[row.path] = row;
      for (const path of update.removed) delete repos[path];
      set({ repos });
    },

    addRepository: async (path) => {
      try {
        const row = await deps.api.invoke('library:add', path);
        set({ repos: { ...get().repos, [row.path]: row } });
        get().notify({ tone: 'success', text: `Added ${row.name} to the library` });
        return true;
      } catch (e) {
        get().notify(errorNotice(`Could not add ${path}`, e));
        return false;
      }
    },

    removeRepository: async (path) => {
      try {
        await deps.api.invoke('library:remove', path);
        get().ingestLibrary({ rows: [], removed: [path] });
      } catch (e) {
        get().notify(errorNotice(`Could not remove ${baseName(path)} from the list`, e));
      }
    },

    trashRepository: async (path) => {
      try {
        await deps.api.invoke('library:trash', path);
        get().ingestLibrary({ rows: [], removed: [path] });
        get().notify({ tone: 'success', text: `Moved ${baseName(path)} to the trash` });
      } catch (e) {
        get().notify(errorNotice(`Could not delete ${baseName(path)}`, e));
      }
    },

    deleteRepositoryFolder: async (path, typedName) => {
      try {
        await deps.api.invoke('library:deleteFolder', path, typedName);
        get().ingestLibrary({ rows: [], removed: [path] });
        get().notify({ tone: 'success', text: `Deleted ${baseName(path)}` });
      } catch (e) {
        get().notify(errorNotice(`Could not delete ${baseName(path)}`, e));
      }
    },

    openRepositoryFolder: (path) => get().openPath(path),

    openRepositoryTerminal: async (path) => {
      try {
        const { opened, command } = await deps.api.invoke('library:openTerminal', path);
        if (!opened) get().openDialog({ type: 'reveal', path, what: 'terminal', command });
      } catch (e) {
        get().notify(errorNotice('Could not open a terminal', e));
      }
    },

    openDroppedFolder: async (file) => {
      if (get().appInfo?.host === 'web') {
        get().notify({
          tone: 'info',
          text: 'A browser does not tell Sluice where a dropped folder is',
          detail: 'Use “Add existing…” on the Repositories screen and type its path.',
        });
        get().setScreen('repositories');
        return;
      }
      try {
        const path = await deps.api.pathForFile(file);
        get().setScreen('repositories');
        await get().addRepository(path);
      } catch (e) {
        get().notify(errorNotice(`Could not add ${file.name}`, e));
      }
    },

    copyRepositorySource: async (path) => {
      try {
        const { text, copied } = await deps.api.invoke('library:copySource', path);
        if (!copied) await copyText(text);
        get().notify({ tone: 'success', text: 'Copied the source URL', detail: text });
      } catch (e) {
        get().notify(errorNotice('Could not copy the source URL', e));
      }
    },
  });
}

/** The renderer's clipboard (the web host; 127.0.0.1 is a secure context). */
export async function copyText(text: string): Promise<void> {
  const clipboard = (globalThis as { navigator?: { clipboard?: Clipboard } }).navigator?.clipboard;
  if (!clipboard) throw new Error('this page has no clipboard access; select the text and copy it');
  await clipboard.writeText(text);
}

export function filterRepos(rows: readonly RepoRow[], query: string): RepoRow[] {
  const q = query.trim().toLowerCase();
  if (!q) return [...rows];
  return rows.filter((r) =>
    [
      r.name,
      r.path,
      r.source ?? '',
      r.tip?.branch ?? '',
      r.tip?.summary ?? '',
      r.tip?.node ?? '',
      ...(r.tip?.bookmarks ?? []),
      r.status,
    ]
      .join(' ')
      .toLowerCase()
      .includes(q),
  );
}

export function sortRepos(rows: readonly RepoRow[], sort: LibrarySort): RepoRow[] {
  const by: Record<LibrarySort, (a: RepoRow, b: RepoRow) => number> = {
    name: (a, b) => a.name.localeCompare(b.name) || a.path.localeCompare(b.path),
    changed: (a, b) => (b.tip?.date ?? -1) - (a.tip?.date ?? -1),
    pulled: (a, b) => (b.lastPullAt ?? -1) - (a.lastPullAt ?? -1),
    size: (a, b) => (b.storeBytes ?? -1) - (a.storeBytes ?? -1),
    added: (a, b) => b.addedAt - a.addedAt,
  };
  return [...rows].sort((a, b) => by[sort](a, b) || a.path.localeCompare(b.path));
}
