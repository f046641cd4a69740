// The real Electron app, through Playwright's _electron, where an Electron binary exists (CI on
// desktop runners, developer machines). Elsewhere every test here is skipped with the reason in
// its title, and e2e/fixtures/global-setup.ts prints that the Electron specs did not run; with
// SLUICE_REQUIRE_ELECTRON=1 (the workflows) a missing binary fails this file instead.
import { _electron as electron, type ElectronApplication } from '@playwright/test';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { test, expect, makeTempDir, PROJECT_ROOT, type TempDir } from './fixtures';
import { missing, skipNote, toolPath } from '../test/support/env';

const notRun = missing('electron');
const binary = toolPath('electron');

test.describe(`Electron app${skipNote('electron')}`, () => {
  test.skip(notRun, `Electron specs NOT RUN: no Electron binary on this machine`);

  let app: ElectronApplication;
  let home: TempDir;

  test.beforeAll(async () => {
    home = await makeTempDir('sluice-e2e-electron-');
    app = await electron.launch({
      executablePath: binary!,
      args: [PROJECT_ROOT, ...(process.platform === 'linux' ? ['--no-sandbox'] : [])],
      cwd: PROJECT_ROOT,
      env: { ...process.env, SLUICE_CLONE_DIR: join(home.path, 'clones'), ELECTRON_ENABLE_LOGGING: '1' },
    });
  });

  test.afterAll(async () => {
    await app?.close();
    await home?.remove();
  });

  test('opens one secure window with window.sluice', async () => {
    const win = await app.firstWindow();
    await win.waitForFunction(() => typeof (window as { sluice?: unknown }).sluice === 'object');
    expect(await win.title()).toMatch(/Sluice/);
    expect(await app.evaluate(({ BrowserWindow }) => BrowserWindow.getAllWindows().length)).toBe(1);
    // Sandboxed, context-isolated, no node integration: the page has no Node and no ipcRenderer, only the contract.
    const globals = await win.evaluate(() => ({
      require: typeof (window as { require?: unknown }).require,
      process: typeof (window as { process?: unknown }).process,
      keys: Object.keys(window.sluice).sort(),
    }));
    expect(globals).toEqual({
      require: 'undefined',
      process: 'undefined',
      keys: ['invoke', 'on', 'pathForFile'],
    });
  });

  test('invoke reaches the host and invalid calls are refused with a code', async () => {
    const win = await app.firstWindow();
    const info = await win.evaluate(() => window.sluice.invoke('app:info'));
    expect(info).toMatchObject({ host: 'electron', defaultCloneDir: join(home.path, 'clones') });
    const refused = await win.evaluate(async () => {
      try {
        await (window.sluice as unknown as { invoke(c: string, ...a: unknown[]): Promise<unknown> }).invoke(
          'bundle:inspect',
          'relative.hg',
        );
        return null;
      } catch (e) {
        return (e as Error).message;
      }
    });
    expect(refused).toMatch(/USAGE/);
  });

  test('navigation away from the renderer is blocked', async () => {
    const win = await app.firstWindow();
    const before = win.url();
    await win.evaluate(() => {
      location.href = 'https://example.org/';
    });
    await win.waitForTimeout(500);
    expect(win.url()).toBe(before);
  });

  // Never run on the development machine (no Electron binary): the workflows run it.
  test('a second launch with a sluice:// link hands it to the running app', async () => {
    const win = await app.firstWindow();
    await win.locator('.app').waitFor();
    const link = 'sluice://clone?url=https%3A%2F%2Fhg.example.org%2Frepo&rev=stable';
    const second = spawn(
      binary!,
      [PROJECT_ROOT, ...(process.platform === 'linux' ? ['--no-sandbox'] : []), link],
      { cwd: PROJECT_ROOT, env: process.env, stdio: 'ignore' },
    );
    // the single-instance lock is taken: the second process forwards its argv and quits
    await new Promise((resolve) => second.once('exit', resolve));
    const dialog = win.getByRole('dialog', { name: 'Clone from URL' });
    await expect(dialog).toBeVisible();
    await expect(dialog.getByTestId('from-link')).toBeVisible();
    await expect(dialog.getByLabel('Repository URL')).toHaveValue('https://hg.example.org/repo');
    await expect(dialog.getByLabel('Revision to check out')).toHaveValue('stable');
    await win.keyboard.press('Escape');
    await expect(dialog).toBeHidden();
  });
});
