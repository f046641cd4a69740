// Settings' library part, kept by the host with the library (library.json): the background fetch
// interval, fetches at once, and transfers at once (more wait in the queue). Each change is saved
// at once through library:setSettings.

import { useEffect, useState } from 'react';
import { invoke } from '../api';
import { errorNotice } from '../lib/errors';
import { useSluice } from '../store/react';
import { FETCH_INTERVALS, type FetchInterval, type LibrarySettings } from '../../../shared/library';

const COUNTS = [1, 2, 3, 4, 6, 8];

export function LibrarySettingsFields() {
  const notify = useSluice((s) => s.notify);
  const [settings, setSettings] = useState<LibrarySettings | null>(null);
  useEffect(() => {
    invoke('library:settings').then(setSettings, (err: unknown) =>
      notify(errorNotice('Could not read the library settings', err)),
    );
  }, [notify]);
  if (!settings) return null;
  const change = (patch: Partial<LibrarySettings>) =>
    void invoke('library:setSettings', patch).then(setSettings, (err: unknown) =>
      notify(errorNotice('Could not save the library settings', err)),
    );
  return (
    <fieldset className="field library-settings" data-testid="library-settings">
      <legend>Repositories and transfers</legend>
      <label>
        Fetch in the background{' '}
        <select
          value={settings.fetchInterval}
          onChange={(e) => change({ fetchInterval: Number(e.target.value) as FetchInterval })}
        >
          {FETCH_INTERVALS.map((m) => (
            <option key={m} value={m}>
              {m === 0 ? 'off' : `every ${m} min`}
            </option>
          ))}
        </select>
      </label>
      <label>
        Fetches at once{' '}
        <select
          value={settings.fetchConcurrency}
          onChange={(e) => change({ fetchConcurrency: Number(e.target.value) })}
        >
          {COUNTS.map((n) => (
            <option key={n}>{n}</option>
          ))}
        </select>
      </label>
      <label>
        Transfers at once{' '}
        <select
          value={settings.maxTransfers}
          onChange={(e) => change({ maxTransfers: Number(e.target.value) })}
        >
          {COUNTS.map((n) => (
            <option key={n}>{n}</option>
          ))}
        </select>
      </label>
      <p className="field-hint">
        A fetch counts incoming and outgoing changesets without pulling; background fetches pause on battery
        and offline. More transfers than this wait in the queue.
      </p>
    </fieldset>
  );
}
