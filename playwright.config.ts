// End-to-end tests: the built app in Debian's Chromium through the web host (e2e/fixtures start
// it on a random port), plus e2e/electron.spec.ts where an Electron binary exists. Never downloads
// browsers: Chromium comes from the system (SLUICE_CHROMIUM overrides the path).
import { defineConfig } from '@playwright/test';
import { toolPath } from './test/support/env';

/** test/support/env.ts's chromium probe: SLUICE_CHROMIUM, else /usr/bin/chromium. */
export const CHROMIUM_PATH = toolPath('chromium') ?? process.env.SLUICE_CHROMIUM ?? '/usr/bin/chromium';

export default defineConfig({
  testDir: 'e2e',
  globalSetup: './e2e/fixtures/global-setup.ts',
  timeout: 60_000,
  expect: { timeout: 10_000 },
  // Two cores, shared: one worker keeps timings meaningful; specs share a web host per worker.
  workers: 1,
  fullyParallel: false,
  forbidOnly: !!process.env.CI,
  retries: 0,
  reporter: process.env.CI ? [['list'], ['html', { open: 'never' }]] : [['list']],
  use: {
    browserName: 'chromium',
    headless: true,
    launchOptions: {
      executablePath: CHROMIUM_PATH,
      args: [
        '--no-sandbox',
        '--headless',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    },
    trace: 'retain-on-failure',
    screenshot: 'only-on-failure',
  },
});
