// The window: toolbar, sidebar navigation, the current screen, dialogs, the drop overlay and the
// notices. Window-level concerns (theme, drag and drop) live here too.

import { useEffect, useState } from 'react';
import { useSluice, useSluiceShallow, setText, useTransient } from './store/react';
import { Icon, type IconName } from './components/Icon';
import { TransfersScreen } from './screens/TransfersScreen';
import { ComparisonsScreen } from './screens/ComparisonsScreen';
import { HistoryScreen } from './screens/HistoryScreen';
import { RepositoriesScreen } from './screens/RepositoriesScreen';
import { AddRepositoryDialog, RevealDialog } from './dialogs/LibraryDialogs';
import { CloneDialog } from './dialogs/CloneDialog';
import { ApplyDialog } from './dialogs/ApplyDialog';
import { RefusedDialog } from './dialogs/RefusedDialog';
import { CredentialsDialog } from './dialogs/CredentialsDialog';
import { LogDialog } from './dialogs/LogDialog';
import { OpenBundleDialog } from './dialogs/OpenBundleDialog';
import { SettingsDialog } from './dialogs/SettingsDialog';
import { formatRate } from './lib/format';
import { baseName } from './lib/paths';
import type { Screen, ThemeChoice } from './store/types';

export function App() {
  useTheme();
  useWindowDrop();
  const screen = useSluice((s) => s.screen);
  return (
    <div className="app">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <Toolbar />
      <div className="app-body">
        <Sidebar />
        <main id="main" className="app-main" tabIndex={-1}>
          {screen === 'transfers' ? (
            <TransfersScreen />
          ) : screen === 'repositories' ? (
            <RepositoriesScreen />
          ) : screen === 'comparisons' ? (
            <ComparisonsScreen />
          ) : (
            <HistoryScreen />
          )}
        </main>
      </div>
      <Dialogs />
      <DropOverlay />
      <Notices />
    </div>
  );
}

// ---------- theme ----------

const THEME_NEXT: Record<ThemeChoice, ThemeChoice> = { system: 'light', light: 'dark', dark: 'system' };
const THEME_ICON: Record<ThemeChoice, IconName> = { system: 'system', light: 'sun', dark: 'moon' };
const THEME_NAME: Record<ThemeChoice, string> = { system: 'System', light: 'Light', dark: 'Dark' };

function useTheme() {
  const theme = useSluice((s) => s.theme);
  useEffect(() => {
    const mq = window.matchMedia('(prefers-color-scheme: dark)');
    const apply = () => {
      document.documentElement.dataset.theme = theme === 'system' ? (mq.matches ? 'dark' : 'light') : theme;
    };
    apply();
    mq.addEventListener('change', apply);
    return () => mq.removeEventListener('change', apply);
  }, [theme]);
}

function ThemeToggle() {
  const { theme, setTheme } = useSluiceShallow((s) => ({ theme: s.theme, setTheme: s.setTheme }));
  const next = THEME_NEXT[theme];
  return (
    <button
      type="button"
      className="button ghost theme-toggle"
      onClick={() => setTheme(next)}
      aria-label={`Theme: ${THEME_NAME[theme]}. Switch to ${THEME_NAME[next]}`}
      title={`Theme: ${THEME_NAME[theme]} (click for ${THEME_NAME[next]})`}
      data-testid="theme-toggle"
    >
      <Icon name={THEME_ICON[theme]} /> <span className="theme-name">{THEME_NAME[theme]}</span>
    </button>
  );
}

// ---------- chrome ----------

function Toolbar() {
  const { openDialog, pickBundle } = useSluiceShallow((s) => ({
    openDialog: s.openDialog,
    pickBundle: s.pickBundle,
  }));
  return (
    <header className="toolbar">
      <div className="brand">
        <svg className="brand-mark" viewBox="0 0 24 24" aria-hidden="true">
          <path d="M3 6h18M3 12h12M3 18h7" />
          <path d="M17 14l4 4-4 4" />
        </svg>
        <span className="brand-name">Sluice</span>
      </div>
      <div className="toolbar-actions">
        <button type="button" className="button primary" onClick={() => openDialog({ type: 'clone' })}>
          <Icon name="clone" /> Clone from URL…
        </button>
        <button type="button" className="button" onClick={() => void pickBundle()}>
          <Icon name="bundle" /> Apply bundle…
        </button>
      </div>
      <div className="toolbar-end">
        <ThemeToggle />
        <button
          type="button"
          className="button ghost"
          onClick={() => openDialog({ type: 'settings' })}
          aria-label="Settings"
          title="Settings"
        >
          <Icon name="settings" />
        </button>
      </div>
    </header>
  );
}

const NAV: { screen: Screen; label: string; icon: IconName }[] = [
  { screen: 'transfers', label: 'Transfers', icon: 'transfers' },
  { screen: 'repositories', label: 'Repositories', icon: 'bundle' },
  { screen: 'comparisons', label: 'Comparisons', icon: 'compare' },
  { screen: 'history', label: 'History', icon: 'history' },
];

function Sidebar() {
  const { screen, setScreen } = useSluiceShallow((s) => ({ screen: s.screen, setScreen: s.setScreen }));
  const active = useSluice((s) =>
    s.jobOrder.reduce(
      (n, id) => n + (s.jobs[id]!.state === 'running' || s.jobs[id]!.state === 'queued' ? 1 : 0),
      0,
    ),
  );
  const comparing = useSluice((s) => s.comparisons.some((c) => c.state === 'running'));
  const appInfo = useSluice((s) => s.appInfo);
  const rateRef = useTransient<HTMLSpanElement>((el, s) => {
    let rate = 0;
    let running = 0;
    for (const id of s.jobOrder) {
      const j = s.jobs[id]!;
      if (j.state === 'running') {
        running++;
        rate += j.bytesPerSec ?? 0;
      }
    }
    setText(el, running ? formatRate(rate) : 'idle');
  }, []);
  return (
    <nav className="sidebar" aria-label="Sections">
      <ul>
        {NAV.map((n) => (
          <li key={n.screen}>
            <button
              type="button"
              className={`nav-item${screen === n.screen ? ' current' : ''}`}
              aria-current={screen === n.screen ? 'page' : undefined}
              onClick={() => setScreen(n.screen)}
            >
              <Icon name={n.icon} />
              <span>{n.label}</span>
              {n.screen === 'transfers' && active > 0 ? (
                <span className="nav-badge" aria-label={`${active} active`}>
                  {active}
                </span>
              ) : null}
              {n.screen === 'comparisons' && comparing ? (
                <span className="nav-dot" aria-label="running" />
              ) : null}
            </button>
          </li>
        ))}
      </ul>
      <div className="sidebar-footer">
        <div className="throughput">
          <span className="muted">Throughput</span>
          <span ref={rateRef} className="throughput-value" aria-live="off" />
        </div>
        {appInfo ? (
          <p className="host-info">
            Sluice {appInfo.version} · {appInfo.host === 'web' ? 'web host' : 'desktop'}
          </p>
        ) : null}
      </div>
    </nav>
  );
}

// ---------- dialogs, drop, notices ----------

function Dialogs() {
  const dialog = useSluice((s) => s.dialog);
  const credentials = useSluice((s) => s.credentials[0]);
  return (
    <>
      {dialog?.type === 'clone' ? (
        // a link arriving while the dialog is open fills a fresh form
        <CloneDialog
          key={JSON.stringify(dialog.initial ?? null)}
          initial={dialog.initial}
          fromLink={dialog.fromLink === true}
        />
      ) : null}
      {dialog?.type === 'apply' ? (
        <ApplyDialog
          key={dialog.info.path}
          info={dialog.info}
          initialDest={dialog.initial?.dest ?? dialog.initialDest}
          {...(dialog.initial ? { initial: dialog.initial } : {})}
        />
      ) : null}
      {dialog?.type === 'refused' ? (
        <RefusedDialog path={dialog.path} error={dialog.error} info={dialog.info} />
      ) : null}
      {dialog?.type === 'log' ? <LogDialog jobId={dialog.jobId} /> : null}
      {dialog?.type === 'open-bundle' ? <OpenBundleDialog /> : null}
      {dialog?.type === 'settings' ? <SettingsDialog /> : null}
      {dialog?.type === 'add-repository' ? <AddRepositoryDialog /> : null}
      {dialog?.type === 'reveal' ? (
        <RevealDialog
          path={dialog.path}
          what={dialog.what}
          {...(dialog.command ? { command: dialog.command } : {})}
        />
      ) : null}
      {credentials ? <CredentialsDialog key={credentials.requestId} prompt={credentials} /> : null}
    </>
  );
}

function useWindowDrop() {
  const { setDropHint, openDroppedFile, openDroppedFolder, notify } = useSluiceShallow((s) => ({
    setDropHint: s.setDropHint,
    openDroppedFile: s.openDroppedFile,
    openDroppedFolder: s.openDroppedFolder,
    notify: s.notify,
  }));
  useEffect(() => {
    let depth = 0;
    const hasFiles = (e: DragEvent) => Array.from(e.dataTransfer?.types ?? []).includes('Files');
    const onEnter = (e: DragEvent) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      depth++;
      setDropHint(true);
    };
    const onOver = (e: DragEvent) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      if (e.dataTransfer) e.dataTransfer.dropEffect = 'copy';
    };
    const onLeave = (e: DragEvent) => {
      if (!hasFiles(e)) return;
      depth = Math.max(0, depth - 1);
      if (depth === 0) setDropHint(false);
    };
    const onDrop = (e: DragEvent) => {
      e.preventDefault();
      depth = 0;
      setDropHint(false);
      const files = e.dataTransfer?.files;
      const file = files?.[0];
      if (!file) {
        notify({ tone: 'info', text: 'Drop a bundle file (.hg) to apply it.' });
        return;
      }
      // a folder is a repository for the library, a file a bundle to apply
      const entry = e.dataTransfer?.items?.[0]?.webkitGetAsEntry?.();
      if (entry?.isDirectory) {
        void openDroppedFolder(file);
        return;
      }
      if (files.length > 1) notify({ tone: 'info', text: `One bundle at a time: opening ${file.name}.` });
      void openDroppedFile(file);
    };
    window.addEventListener('dragenter', onEnter);
    window.addEventListener('dragover', onOver);
    window.addEventListener('dragleave', onLeave);
    window.addEventListener('drop', onDrop);
    return () => {
      window.removeEventListener('dragenter', onEnter);
      window.removeEventListener('dragover', onOver);
      window.removeEventListener('dragleave', onLeave);
      window.removeEventListener('drop', onDrop);
    };
  }, [setDropHint, openDroppedFile, openDroppedFolder, notify]);
}

function DropOverlay() {
  const dropHint = useSluice((s) => s.dropHint);
  const inspecting = useSluice((s) => s.inspecting);
  if (!dropHint && !inspecting) return null;
  return (
    <div
      className={`drop-overlay${inspecting ? ' busy' : ''}`}
      data-testid="drop-overlay"
      aria-hidden={dropHint ? 'true' : undefined}
    >
      <div className="drop-card" role={inspecting ? 'status' : undefined}>
        {inspecting ? (
          <>
            <span className="spinner" aria-hidden="true" />
            <p>Reading {baseName(inspecting)}…</p>
          </>
        ) : (
          <>
            <Icon name="drop" size={40} />
            <p className="drop-title">Drop a bundle to apply it, or a repository folder to list it</p>
            <p className="muted">
              Stream bundles (packed1 HGS1, bundle2 stream v2) or changegroup bundles (hg bundle: HG10, HG20)
              — Sluice reads the header first, nothing is written yet.
            </p>
          </>
        )}
      </div>
    </div>
  );
}

function Notices() {
  const notices = useSluice((s) => s.notices);
  const dismiss = useSluice((s) => s.dismissNotice);
  return (
    <div className="notices" aria-live="polite">
      {notices.map((n) => (
        <NoticeItem key={n.id} id={n.id} tone={n.tone} text={n.text} detail={n.detail} onDismiss={dismiss} />
      ))}
    </div>
  );
}

function NoticeItem({
  id,
  tone,
  text,
  detail,
  onDismiss,
}: {
  id: number;
  tone: 'info' | 'error' | 'success';
  text: string;
  detail?: string;
  onDismiss: (id: number) => void;
}) {
  const [leaving, setLeaving] = useState(false);
  useEffect(() => {
    if (tone === 'error') return;
    const t = setTimeout(() => setLeaving(true), 6000);
    return () => clearTimeout(t);
  }, [tone]);
  useEffect(() => {
    if (!leaving) return;
    const t = setTimeout(() => onDismiss(id), 200);
    return () => clearTimeout(t);
  }, [leaving, id, onDismiss]);
  return (
    <div
      className={`notice notice-${tone}${leaving ? ' leaving' : ''}`}
      role={tone === 'error' ? 'alert' : 'status'}
      data-testid="notice"
    >
      <Icon name={tone === 'error' ? 'error' : tone === 'success' ? 'check' : 'warning'} />
      <div className="notice-text">
        <p>{text}</p>
        {detail ? <p className="notice-detail">{detail}</p> : null}
      </div>
      <button type="button" className="icon-button" onClick={() => onDismiss(id)} aria-label="Dismiss">
        <Icon name="close" />
      </button>
    </div>
  );
}
