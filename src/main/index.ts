// Electron main: the window, the menu, OS integration (taskbar progress, notifications, power-save
// blocking, file association, single instance) and the IPC adapter around EngineHost. The only
// file besides the preload that imports electron; everything it delegates to (src/main/host/) is
// plain Node and is what the web host runs too.
import {
  app,
  BrowserWindow,
  clipboard,
  dialog,
  ipcMain,
  Menu,
  nativeTheme,
  net,
  Notification,
  powerMonitor,
  powerSaveBlocker,
  safeStorage,
  session,
  shell,
  type IpcMainInvokeEvent,
  type MenuItemConstructorOptions,
} from 'electron';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { CloseGuard } from './host/close-guard';
import { contentSecurityPolicy } from './host/csp';
import { defaultCloneDir } from './host/data-dir';
import { DEEP_LINK_SCHEME, deepLinkFromArgv, parseBundleFile, parseDeepLink } from './host/deep-link';
import { EngineHost, toInvokeFailure, type HostPlatform } from './host/engine-host';
import type { PowerState } from './host/fetch-scheduler';
import type { IncomingNotice } from '../shared/library';
import { JobIndicators, type EndedJob } from './host/job-indicators';
import { RENDERER_CRASH_POLICY, RendererCrashPolicy, rendererGaveUpPage } from './host/renderer-crashes';
import { openTerminal } from './host/terminal';
import { isTrustedSender, type TrustedRenderer } from './host/validate';
import { INVOKE_CHANNELS, type DeepLinkResult, type PushChannel, type PushMap } from '../shared/ipc';

// Bundled to out/main/index.js, beside engine-worker.js; the preload and renderer are siblings of out/main.
const here = dirname(fileURLToPath(import.meta.url));
const devRendererUrl = !app.isPackaged ? process.env.ELECTRON_RENDERER_URL : undefined;
const rendererFile = join(here, '..', 'renderer', 'index.html');
const trustedRenderer: Omit<TrustedRenderer, 'webContentsId'> = devRendererUrl
  ? { origin: new URL(devRendererUrl).origin }
  : {
      origin: 'file://',
      fileRoot: pathToFileURL(join(here, '..', 'renderer')).href + '/',
      caseInsensitivePaths: process.platform !== 'linux',
    };

/** Jobs shorter than this end silently even when the window is in the background. */
const NOTIFY_AFTER_MS = 10_000;

type ThemeSource = 'system' | 'light' | 'dark';

let mainWindow: BrowserWindow | null = null;
let host: EngineHost | null = null;
/** what the OS shows about running jobs; the close guard asks it whether a transfer runs */
let indicators: JobIndicators | null = null;
let rendererReady = false;
const pendingPushes: { channel: PushChannel; payload: unknown }[] = [];
const MAX_PENDING_PUSHES = 200;

if (!app.requestSingleInstanceLock()) {
  // Another Sluice runs: it received our argv through 'second-instance' and opens the link or bundle.
  app.quit();
} else {
  registerProtocolClient();
  // macOS delivers opened files and sluice:// links as events, possibly before ready; every link
  // is checked by deep-link.ts here and reaches the renderer checked, or as a refusal to show.
  app.on('open-file', (event, path) => {
    event.preventDefault();
    openLink(parseBundleFile(path));
  });
  app.on('open-url', (event, url) => {
    event.preventDefault();
    openLink(parseDeepLink(url));
  });
  app.on('second-instance', (_event, argv, workingDirectory) => {
    const link = deepLinkFromArgv(argv, process.platform, workingDirectory);
    if (link) openLink(link);
    else focusMainWindow();
  });
  app.on('web-contents-created', (_event, contents) => lockDownContents(contents));
  app.on('window-all-closed', () => {
    if (process.platform !== 'darwin') app.quit();
  });
  app.on('activate', () => {
    if (app.isReady() && BrowserWindow.getAllWindows().length === 0) createWindow();
  });
  app.on('before-quit', (event) => {
    if (!host) return;
    // Cancel running jobs (their temporary directories are removed) before the process ends.
    event.preventDefault();
    const h = host;
    host = null;
    void h.dispose().finally(() => app.quit());
  });
  app.whenReady().then(start, (e: unknown) => {
    console.error('Sluice failed to start:', e);
    app.exit(1);
  });
}

async function start(): Promise<void> {
  const userData = app.getPath('userData');
  await applySavedTheme(userData);
  installContentSecurityPolicy();
  host = new EngineHost({
    platform: electronPlatform(),
    dataDir: userData,
    sampleBundle: app.isPackaged
      ? join(process.resourcesPath, 'sample', 'sample.hg')
      : join(app.getAppPath(), 'build', 'sample', 'sample.hg'),
    worker: { script: join(here, 'engine-worker.js') },
    power: electronPower(),
    notifyIncoming: (notice) => notifyIncoming(notice),
  });
  indicators = new JobIndicators(
    (state) => {
      const win = mainWindow;
      if (win && !win.isDestroyed()) {
        if (state.progress === null) win.setProgressBar(-1);
        else if (state.progress === 'indeterminate') win.setProgressBar(2, { mode: 'indeterminate' });
        else win.setProgressBar(state.progress);
      }
      setPowerSaveBlock(state.transferring);
    },
    (job) => notifyEnded(job),
  );
  host.onPush((message) => {
    indicators?.observe(message);
    pushToRenderer(message.channel, message.payload);
  });
  registerInvokeHandlers();
  Menu.setApplicationMenu(buildMenu(userData));
  createWindow();
  const launchLink = deepLinkFromArgv(process.argv, process.platform, process.cwd());
  if (launchLink) openLink(launchLink);
  host.warmUp();
}

function createWindow(): void {
  rendererReady = false;
  const win = new BrowserWindow({
    width: 1200,
    height: 800,
    minWidth: 820,
    minHeight: 560,
    show: false,
    title: 'Sluice',
    backgroundColor: nativeTheme.shouldUseDarkColors ? '#1b1d21' : '#f7f7f8',
    ...(process.platform === 'linux' && { icon: join(app.getAppPath(), 'build', 'icon.png') }),
    webPreferences: {
      preload: join(here, '..', 'preload', 'index.cjs'),
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      webviewTag: false,
      spellcheck: false,
      navigateOnDragDrop: false,
    },
  });
  mainWindow = win;
  win.once('ready-to-show', () => win.show());
  win.webContents.on('did-finish-load', () => {
    rendererReady = true;
    for (const { channel, payload } of pendingPushes.splice(0)) win.webContents.send(channel, payload);
  });
  win.webContents.on('did-start-loading', () => (rendererReady = false));
  // A crashed renderer reloads after a growing delay; crash-looping ends on an error page.
  const crashes = new RendererCrashPolicy();
  let reloadTimer: NodeJS.Timeout | undefined;
  win.webContents.on('render-process-gone', (_event, details) => {
    if (details.reason === 'clean-exit' || win.isDestroyed()) return;
    clearTimeout(reloadTimer);
    const delay = crashes.crashed();
    if (delay === null) {
      console.error(`renderer gone (${details.reason}) again: not reloading`);
      const { maxCrashes, windowMs } = RENDERER_CRASH_POLICY;
      void win.loadURL(rendererGaveUpPage(details.reason, maxCrashes + 1, windowMs));
      return;
    }
    console.error(`renderer gone (${details.reason}); reloading in ${delay} ms`);
    reloadTimer = setTimeout(() => {
      if (!win.isDestroyed()) win.reload();
    }, delay);
  });
  const closeGuard = new CloseGuard({
    transferring: () => indicators?.state.transferring === true,
    confirm: async () => {
      const r = await dialog.showMessageBox(win, {
        type: 'warning',
        buttons: ['Keep Sluice open', 'Close and stop'],
        defaultId: 0,
        cancelId: 0,
        message: 'A transfer is running',
        detail:
          'Closing stops it. A clone keeps what it downloaded: Resume offers to continue when Sluice starts again.',
      });
      return r.response === 1;
    },
    close: () => {
      if (!win.isDestroyed()) win.close();
    },
  });
  win.on('close', (event) => {
    if (!closeGuard.onClose()) event.preventDefault();
  });
  win.on('closed', () => {
    if (mainWindow === win) mainWindow = null;
  });
  if (devRendererUrl) void win.loadURL(devRendererUrl);
  else void win.loadFile(rendererFile);
}

/**
 * Registers Sluice for sluice:// links. A development run (`electron .`) registers the Electron
 * binary with the app's folder, as Electron's deep-link guide does, so the link reaches this app.
 */
function registerProtocolClient(): void {
  const ok =
    process.defaultApp && process.argv[1] !== undefined
      ? app.setAsDefaultProtocolClient(DEEP_LINK_SCHEME, process.execPath, [resolve(process.argv[1])])
      : app.setAsDefaultProtocolClient(DEEP_LINK_SCHEME);
  if (!ok) console.warn(`could not register Sluice as the ${DEEP_LINK_SCHEME}:// handler`);
}

/** A checked link (or its refusal) for the renderer, which shows the pre-filled dialog or the reason. */
function openLink(link: DeepLinkResult): void {
  if (!link.ok) console.warn(`link refused: ${link.reason}`);
  pushToRenderer('link:opened', link);
  focusMainWindow();
}

function focusMainWindow(): void {
  if (mainWindow && !mainWindow.isDestroyed()) {
    if (mainWindow.isMinimized()) mainWindow.restore();
    mainWindow.focus();
  }
}

/** Pushes to the renderer once it has loaded (earlier ones wait, e.g. a bundle opened at launch). */
function pushToRenderer<C extends PushChannel>(channel: C, payload: PushMap[C]): void {
  const win = mainWindow;
  if (win && !win.isDestroyed() && rendererReady) win.webContents.send(channel, payload);
  else if (channel !== 'job:events') {
    // links come from web pages, which can fire many: the queue keeps the latest
    if (pendingPushes.length >= MAX_PENDING_PUSHES) pendingPushes.shift();
    pendingPushes.push({ channel, payload });
  }
}

/** Every invoke channel: only our window's top frame may call, payloads are validated in EngineHost. */
function registerInvokeHandlers(): void {
  for (const channel of INVOKE_CHANNELS) {
    ipcMain.handle(channel, async (event: IpcMainInvokeEvent, ...args: unknown[]) => {
      const win = mainWindow;
      const frame = event.senderFrame;
      const trusted =
        win !== null &&
        !win.isDestroyed() &&
        isTrustedSender(
          frame
            ? { url: frame.url, isTopFrame: frame.parent === null, webContentsId: event.sender.id }
            : null,
          {
            ...trustedRenderer,
            webContentsId: win.webContents.id,
          },
        );
      if (!trusted)
        throw new Error(`[USAGE] ${channel}: refused, the call did not come from Sluice's window`);
      if (!host) throw new Error('[CANCELLED] Sluice is quitting');
      try {
        return await host.invoke(channel, args);
      } catch (e) {
        // ipcMain keeps only the message across the boundary: carry the code in it (toUiError parses it).
        const failure = toInvokeFailure(e);
        throw new Error(`[${failure.code}] ${failure.message}`);
      }
    });
  }
}

function electronPlatform(): HostPlatform {
  const parent = () => (mainWindow && !mainWindow.isDestroyed() ? mainWindow : undefined);
  return {
    host: 'electron',
    version: app.getVersion(),
    platform: process.platform,
    defaultCloneDir: defaultCloneDir(),
    async pickDirectory(defaultPath) {
      const options = {
        properties: ['openDirectory', 'createDirectory'] as ('openDirectory' | 'createDirectory')[],
        ...(defaultPath && { defaultPath }),
      };
      const win = parent();
      const r = win ? await dialog.showOpenDialog(win, options) : await dialog.showOpenDialog(options);
      return r.canceled ? null : (r.filePaths[0] ?? null);
    },
    async pickBundle() {
      return pickBundleFile();
    },
    async openPath(path) {
      const error = await shell.openPath(path);
      if (error) throw new Error(`[IO] ${error}`);
    },
    async showItemInFolder(path) {
      shell.showItemInFolder(path);
    },
    async openExternal(url) {
      await shell.openExternal(url);
    },
    async trashItem(path) {
      await shell.trashItem(path);
    },
    openTerminal: (dir) => openTerminal(dir),
    async writeClipboard(text) {
      await clipboard.writeText(text);
    },
    ...credentialCipher(),
    async writeText(suggestedName, text) {
      const options = { defaultPath: join(app.getPath('documents'), suggestedName) };
      const win = parent();
      const r = win ? await dialog.showSaveDialog(win, options) : await dialog.showSaveDialog(options);
      if (r.canceled || !r.filePath) return null;
      await writeFile(r.filePath, text);
      return r.filePath;
    },
  };
}

/** safeStorage for remembered credentials, where it is backed by the OS keychain. */
function credentialCipher(): Pick<HostPlatform, 'credentialCipher' | 'credentialsUnavailableReason'> {
  if (!safeStorage.isEncryptionAvailable()) {
    return {
      credentialCipher: null,
      credentialsUnavailableReason:
        'the system keychain is not available, so Sluice does not store credentials',
    };
  }
  // Linux without a keyring: Chromium's fallback key is hard-coded, which is no protection
  if (process.platform === 'linux' && safeStorage.getSelectedStorageBackend() === 'basic_text') {
    return {
      credentialCipher: null,
      credentialsUnavailableReason:
        'no keyring (GNOME Keyring, KWallet) is running, so Sluice does not store credentials',
    };
  }
  return {
    credentialCipher: {
      encrypt: (plain) => safeStorage.encryptString(plain),
      decrypt: (data) => safeStorage.decryptString(data),
    },
  };
}

async function pickBundleFile(): Promise<string | null> {
  const options = {
    properties: ['openFile'] as 'openFile'[],
    filters: [
      { name: 'Mercurial bundle', extensions: ['hg'] },
      { name: 'All files', extensions: ['*'] },
    ],
  };
  const win = mainWindow && !mainWindow.isDestroyed() ? mainWindow : undefined;
  const r = win ? await dialog.showOpenDialog(win, options) : await dialog.showOpenDialog(options);
  return r.canceled ? null : (r.filePaths[0] ?? null);
}

/**
 * No navigation away from the renderer, no new windows, no webviews: links to http(s) pages open
 * in the OS browser instead. Permission requests (camera, notifications from the page...) are
 * denied; main posts notifications itself.
 */
function lockDownContents(contents: Electron.WebContents): void {
  const openOutside = (url: string) => {
    if (/^https?:\/\//i.test(url)) void shell.openExternal(url);
  };
  contents.setWindowOpenHandler(({ url }) => {
    openOutside(url);
    return { action: 'deny' };
  });
  contents.on('will-navigate', (event, url) => {
    if (devRendererUrl && new URL(url).origin === trustedRenderer.origin) return; // dev server reloads
    event.preventDefault();
    openOutside(url);
  });
  contents.on('will-redirect', (event) => event.preventDefault());
  contents.on('will-attach-webview', (event) => event.preventDefault());
  contents.session.setPermissionRequestHandler((_wc, _permission, callback) => callback(false));
  contents.session.setPermissionCheckHandler(() => false);
}

function installContentSecurityPolicy(): void {
  const policy = contentSecurityPolicy({ dev: Boolean(devRendererUrl) });
  session.defaultSession.webRequest.onHeadersReceived((details, callback) => {
    callback({ responseHeaders: { ...details.responseHeaders, 'Content-Security-Policy': [policy] } });
  });
}

let powerSaveBlockerId: number | null = null;
function setPowerSaveBlock(on: boolean): void {
  if (on && powerSaveBlockerId === null)
    powerSaveBlockerId = powerSaveBlocker.start('prevent-app-suspension');
  else if (!on && powerSaveBlockerId !== null) {
    powerSaveBlocker.stop(powerSaveBlockerId);
    powerSaveBlockerId = null;
  }
}

/** The background fetch's pause: on battery (powerMonitor) or offline (net.isOnline, looked at per round). */
function electronPower(): PowerState {
  return {
    onBattery: () => powerMonitor.isOnBatteryPower(),
    online: () => net.isOnline(),
    onChange: (listener) => {
      powerMonitor.on('on-ac', listener);
      powerMonitor.on('on-battery', listener);
      return () => {
        powerMonitor.off('on-ac', listener);
        powerMonitor.off('on-battery', listener);
      };
    },
  };
}

function notifyIncoming(notice: IncomingNotice): void {
  if (!Notification.isSupported()) return;
  const n = new Notification({
    title: `${notice.name}: ${notice.incoming} incoming changeset${notice.incoming === 1 ? '' : 's'}`,
    body: notice.path,
  });
  n.on('click', () => {
    if (mainWindow && !mainWindow.isDestroyed()) {
      if (mainWindow.isMinimized()) mainWindow.restore();
      mainWindow.focus();
    }
  });
  n.show();
}

function notifyEnded(job: EndedJob): void {
  if (job.durationMs < NOTIFY_AFTER_MS || !Notification.isSupported()) return;
  if (mainWindow && !mainWindow.isDestroyed() && mainWindow.isFocused()) return;
  const what = {
    apply: 'Apply',
    clone: 'Clone',
    pull: 'Pull',
    bundle: 'Bundle',
    verify: 'Verify',
    update: 'Checkout',
  }[job.summary.request.kind];
  const seconds = Math.round(job.durationMs / 1000);
  const title =
    job.summary.state === 'done'
      ? `${what} finished`
      : job.summary.state === 'cancelled'
        ? `${what} cancelled`
        : `${what} failed`;
  const body =
    job.summary.state === 'failed' && job.error
      ? job.error.message
      : job.result
        ? `${job.result} (${seconds} s)`
        : `after ${seconds} s`;
  const n = new Notification({ title, body, silent: job.summary.state === 'cancelled' });
  n.on('click', focusMainWindow);
  n.show();
}

async function applySavedTheme(userData: string): Promise<void> {
  try {
    const saved = JSON.parse(await readFile(join(userData, 'settings.json'), 'utf8')) as {
      theme?: ThemeSource;
    };
    if (saved.theme === 'light' || saved.theme === 'dark' || saved.theme === 'system')
      nativeTheme.themeSource = saved.theme;
  } catch {
    // first start, or no saved theme
  }
}

function setTheme(userData: string, theme: ThemeSource): void {
  // The renderer follows prefers-color-scheme, which nativeTheme.themeSource drives.
  nativeTheme.themeSource = theme;
  void mkdir(userData, { recursive: true })
    .then(() => writeFile(join(userData, 'settings.json'), JSON.stringify({ theme })))
    .catch((e: unknown) => console.warn('cannot save the theme:', e));
}

function buildMenu(userData: string): Menu {
  const isMac = process.platform === 'darwin';
  const theme = (source: ThemeSource, label: string): MenuItemConstructorOptions => ({
    label,
    type: 'radio',
    checked: nativeTheme.themeSource === source,
    click: () => setTheme(userData, source),
  });
  const template: MenuItemConstructorOptions[] = [
    ...(isMac ? [{ role: 'appMenu' as const }] : []),
    {
      label: 'File',
      submenu: [
        {
          label: 'Clone from URL…',
          accelerator: 'CmdOrCtrl+L',
          click: () => pushToRenderer('app:command', { command: 'clone-from-url' }),
        },
        {
          label: 'Apply bundle…',
          accelerator: 'CmdOrCtrl+O',
          click: () => {
            void pickBundleFile().then((path) => path && pushToRenderer('bundle:opened', { path }));
          },
        },
        { type: 'separator' },
        isMac ? { role: 'close' } : { role: 'quit' },
      ],
    },
    { role: 'editMenu' },
    {
      label: 'View',
      submenu: [
        {
          label: 'Theme',
          submenu: [theme('system', 'Follow the system'), theme('light', 'Light'), theme('dark', 'Dark')],
        },
        { type: 'separator' },
        { role: 'resetZoom' },
        { role: 'zoomIn' },
        { role: 'zoomOut' },
        { type: 'separator' },
        { role: 'togglefullscreen' },
        ...(!app.isPackaged
          ? [{ type: 'separator' as const }, { role: 'reload' as const }, { role: 'toggleDevTools' as const }]
          : []),
      ],
    },
    { role: 'windowMenu' },
    {
      role: 'help',
      submenu: [
        { label: 'Open the data folder', click: () => void shell.openPath(userData) },
        {
          label: 'Mercurial stream clones',
          click: () => void shell.openExternal('https://wiki.mercurial-scm.org/StreamCloneBundle'),
        },
        ...(!isMac
          ? [{ type: 'separator' as const }, { label: 'About Sluice', click: () => app.showAboutPanel() }]
          : []),
      ],
    },
  ];
  return Menu.buildFromTemplate(template);
}
