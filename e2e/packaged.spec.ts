// The packaged app, launched once through Playwright's _electron: the workflow's packaged-launch job
// builds it with electron-builder (`--dir`, SLUICE_FUSES_FOR_PLAYWRIGHT=1: Playwright needs the
// --inspect fuse, every other fuse as released) and points SLUICE_PACKAGED_APP at its executable.
// Without that variable (every `npm test`, this machine: no Electron binary can be downloaded here)
// the test is skipped and its title says why; a variable naming no file fails.
import { _electron as electron, expect, test } from '@playwright/test';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const packaged = process.env.SLUICE_PACKAGED_APP;
const why = packaged
  ? ''
  : ' (skipped: SLUICE_PACKAGED_APP not set; the packaged-launch workflow job sets it)';

test.describe(`packaged app${why}`, () => {
  test.skip(!packaged, 'Packaged-app spec NOT RUN: SLUICE_PACKAGED_APP is not set');

  test('starts from its asar, opens one sandboxed window and answers the contract', async () => {
    expect(existsSync(packaged!), `SLUICE_PACKAGED_APP=${packaged} does not exist`).toBe(true);
    const home = mkdtempSync(join(tmpdir(), 'sluice-packaged-'));
    const app = await electron.launch({
      executablePath: packaged!,
      args: process.platform === 'linux' ? ['--no-sandbox'] : [],
      env: { ...process.env, SLUICE_CLONE_DIR: join(home, 'clones'), ELECTRON_ENABLE_LOGGING: '1' },
    });
    try {
      const win = await app.firstWindow();
      await win.locator('.app').waitFor();
      expect(await app.evaluate(({ app: a }) => a.isPackaged)).toBe(true);
      // the code runs from the asar the integrity fuse checks, not from a folder beside it
      expect(await app.evaluate(({ app: a }) => a.getAppPath())).toMatch(/app\.asar$/);
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
      const info = await win.evaluate(() => window.sluice.invoke('app:info'));
      expect(info).toMatchObject({ host: 'electron', defaultCloneDir: join(home, 'clones') });
    } finally {
      await app.close();
      rmSync(home, { recursive: true, force: true });
    }
  });
});
