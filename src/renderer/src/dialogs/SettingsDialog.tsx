// Preferences: theme, when a transfer counts as stalled, defaults of the transfer dialogs.

import { Dialog } from '../components/Dialog';
import { useEffect, useState } from 'react';
import { formatTimestamp } from '../lib/format';
import { FolderField, StreamChoice, TransferOptions } from '../components/fields';
import { validateDestination } from '../store/requests';
import { useSluice, useSluiceShallow } from '../store/react';
import { LibrarySettingsFields } from './LibrarySettingsFields';
import type { ThemeChoice } from '../store/types';
import { PartialDownloads } from './PartialDownloads';

export function SettingsDialog() {
  const { closeDialog, setTheme, setStallSeconds, setDefaults } = useSluiceShallow((s) => ({
    closeDialog: s.closeDialog,
    setTheme: s.setTheme,
    setStallSeconds: s.setStallSeconds,
    setDefaults: s.setDefaults,
  }));
  const theme = useSluice((s) => s.theme);
  const stallSeconds = useSluice((s) => s.stallSeconds);
  const defaults = useSluice((s) => s.defaults);
  const appInfo = useSluice((s) => s.appInfo);
  const { cloneDir, hostCloneDir, setCloneDir } = useSluiceShallow((s) => ({
    cloneDir: s.cloneDir,
    hostCloneDir: s.hostCloneDir,
    setCloneDir: s.setCloneDir,
  }));
  const { saved, loadSaved, forget } = useSluiceShallow((s) => ({
    saved: s.savedCredentials,
    loadSaved: s.loadSavedCredentials,
    forget: s.forgetCredentials,
  }));
  useEffect(() => {
    void loadSaved();
  }, [loadSaved]);
  const [folder, setFolder] = useState(cloneDir ?? hostCloneDir ?? appInfo?.defaultCloneDir ?? '');
  const folderError = folder.trim() ? validateDestination(folder) : null;
  return (
    <Dialog
      title="Settings"
      onClose={closeDialog}
      testId="settings-dialog"
      footer={
        <button type="button" className="button primary" onClick={closeDialog}>
          Done
        </button>
      }
    >
      <div className="field inline">
        <label htmlFor="settings-theme">Theme</label>
        <select id="settings-theme" value={theme} onChange={(e) => setTheme(e.target.value as ThemeChoice)}>
          <option value="system">Same as the system</option>
          <option value="light">Light</option>
          <option value="dark">Dark</option>
        </select>
      </div>
      <div className="field inline">
        <label htmlFor="settings-stall">Stalled after</label>
        <span className="field-row">
          <input
            id="settings-stall"
            type="number"
            min={3}
            max={600}
            value={stallSeconds}
            onChange={(e) => setStallSeconds(Number(e.target.value) || 15)}
            aria-describedby="settings-stall-hint"
          />
          <span className="muted">seconds without progress</span>
        </span>
        <p id="settings-stall-hint" className="field-hint">
          A transfer that moves no data for this long is flagged, with Cancel and Retry at hand.
        </p>
      </div>
      <FolderField
        id="settings-clone-dir"
        label="Clone folder"
        value={folder}
        onChange={(v) => {
          setFolder(v);
          // an empty field is the host's default again; a relative path is not saved
          if (!v.trim() || !validateDestination(v)) setCloneDir(v.trim() || undefined);
        }}
        error={folderError}
        hint={`New clones and applied bundles go here unless you choose another folder.${hostCloneDir ? ` Leave empty for ${hostCloneDir}.` : ''}`}
      />
      <fieldset className="field settings-defaults">
        <legend>Defaults for new transfers</legend>
        <StreamChoice value={defaults.stream} onChange={(stream) => setDefaults({ stream })} />
        <TransferOptions
          value={defaults}
          onChange={(v) =>
            setDefaults({
              backgroundClose: v.backgroundClose,
              closeThreads: v.closeThreads,
              verify: v.verify,
            })
          }
          verifyLabel="Verify repositories after cloning or applying"
        />
      </fieldset>
      <LibrarySettingsFields />
      <fieldset className="field saved-credentials" data-testid="saved-credentials">
        <legend>Saved sign-ins</legend>
        {!saved ? null : !saved.available ? (
          <p className="field-hint">Nothing is stored: {saved.reason}.</p>
        ) : saved.entries.length === 0 ? (
          <p className="field-hint">None. Tick “Remember” when a server asks you to sign in.</p>
        ) : (
          <ul className="credential-list">
            {saved.entries.map((c) => (
              <li key={c.origin}>
                <span className="mono">{c.origin}</span>{' '}
                <span className="muted">
                  as {c.user}, saved {formatTimestamp(c.savedAt)}
                </span>{' '}
                <button
                  type="button"
                  className="button small"
                  onClick={() => void forget(c.origin)}
                  aria-label={`Forget the sign-in for ${c.origin}`}
                >
                  Forget
                </button>
              </li>
            ))}
          </ul>
        )}
      </fieldset>
      <PartialDownloads />
      {appInfo ? (
        <p className="muted about">
          Sluice {appInfo.version} · {appInfo.host === 'web' ? 'web host' : 'Electron'} on {appInfo.platform}{' '}
          · clones go to {appInfo.defaultCloneDir}
        </p>
      ) : null}
    </Dialog>
  );
}
