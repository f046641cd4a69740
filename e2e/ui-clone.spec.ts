// Clone through the UI from a live `hg serve` (a temp copy of the golden fixture repository):
// test the connection, clone, check the result with `hg verify`; and cancel a clone mid-transfer
// (served through a throttling proxy) and find nothing at the destination.
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Page } from '@playwright/test';
import { missing, skipNote } from '../test/support/env';
import { test, expect, repoFromFixture, startHgServe, startWebHost, type HgServe } from './fixtures';
import {
  expectTransferState,
  hgVerify,
  openCloneDialog,
  screenshot,
  startThrottleProxy,
  transferRow,
  type ThrottleProxy,
} from './ui-helpers';

test.describe(`clone from URL${skipNote('hg')}`, () => {
  test.skip(missing('hg'), 'hg is not installed: these tests clone from a live `hg serve`');

  let server: HgServe | undefined;
  let proxy: ThrottleProxy | undefined;
  test.afterEach(async () => {
    await proxy?.stop();
    await server?.stop();
    proxy = server = undefined;
  });

  test('clone from hg serve through the dialog; hg verify accepts the result', async ({
    sluicePage: page,
    tempDir,
  }) => {
    server = await startHgServe(await repoFromFixture(tempDir));
    const dest = join(tempDir, 'cloned');

    await page.getByRole('button', { name: 'Clone from URL…' }).first().click();
    const dialog = page.getByRole('dialog', { name: 'Clone from URL' });
    await expect(dialog).toBeVisible();
    await dialog.getByLabel('Repository URL').fill(server.url);
    await dialog.getByRole('button', { name: 'Test connection' }).click();
    const probe = dialog.getByTestId('probe-result');
    await expect(probe).toBeVisible();
    // hg 6.3.2 serves both stream formats of this repository
    await expect(probe.locator('dt', { hasText: 'Stream clone v2' }).locator('+ dd')).toContainText('yes');
    await expect(probe.locator('dt', { hasText: 'Stream clone v1' }).locator('+ dd')).toContainText('yes');
    await expect(probe).toContainText('revlogv1');
    // the destination defaulted to <clone dir>/<repository name>; choose our own
    await expect(dialog.getByLabel('Destination folder')).not.toHaveValue('');
    await dialog.getByLabel('Destination folder').fill(dest);
    await screenshot(page, 'clone-dialog');
    await dialog.getByRole('button', { name: 'Clone', exact: true }).click();
    await expect(dialog).toBeHidden();

    const row = transferRow(page, dest);
    await expectTransferState(row, 'done');
    await expect(row.getByTestId('stat-bytes')).toContainText(/of/);
    await screenshot(page, 'transfers-done');
    const verify = hgVerify(dest);
    expect(verify.output).toMatch(/checked \d+ changesets/);
    expect(verify.status).toBe(0);

    // the debug log has hg's lines for every streamed file
    await row.getByRole('button', { name: /Show log/ }).click();
    const log = page.getByRole('dialog', { name: /Debug log/ });
    await expect(log.getByTestId('logview')).toContainText('adding [s] ');
    await log.getByLabel('Filter lines').fill('transferred');
    await expect(log.getByTestId('logview')).toContainText(/transferred .* in .* seconds/);
    await log.getByLabel('Filter lines').fill('00changelog');
    await expect(log.getByTestId('log-count')).toContainText(/^\d+ of \d+ lines/);
    await screenshot(page, 'log-dialog');
    await page.keyboard.press('Escape'); // clears the search field
    await page.keyboard.press('Escape'); // closes the dialog
    await expect(log).toBeHidden();
  });

  test('clone a local repository by its absolute path (hg localpeer); hg verify accepts it', async ({
    sluicePage: page,
    tempDir,
  }) => {
    const source = await repoFromFixture(tempDir);
    const dest = join(tempDir, 'cloned-local');
    const dialog = await openCloneDialog(page, source);
    await dialog.getByRole('button', { name: 'Test connection' }).click();
    await expect(dialog.getByTestId('probe-result')).toContainText('revlogv1');
    await dialog.getByLabel('Destination folder').fill(dest);
    await dialog.getByRole('button', { name: 'Clone', exact: true }).click();
    await expect(dialog).toBeHidden();
    await expectTransferState(transferRow(page, dest), 'done');
    const verify = hgVerify(dest);
    expect(verify.output).toMatch(/checked \d+ changesets/);
    expect(verify.status).toBe(0);
  });

  test('cancel mid-transfer leaves nothing at the destination', async ({ sluicePage: page, tempDir }) => {
    server = await startHgServe(await repoFromFixture(tempDir));
    // ~145 KB of stream at 12 KB/s: a dozen seconds, plenty of time to cancel in the middle
    proxy = await startThrottleProxy(server.url, 12 * 1024);
    const parent = join(tempDir, 'out');
    const dest = join(parent, 'cancelled');

    const dialog = await openCloneDialog(page, proxy.url, dest);
    await dialog.getByRole('button', { name: 'Clone', exact: true }).click();

    const row = transferRow(page, dest);
    // wait until data is flowing, then cancel while it is incomplete
    await expect
      .poll(
        async () => {
          const state = await row.getAttribute('data-state');
          if (state !== 'running' && state !== 'queued')
            return `${state}: ${(await row.textContent())?.slice(0, 300)}`;
          const text = (await row.getByTestId('stat-bytes').textContent()) ?? '';
          const m = /^([\d.]+) (\w+) of ([\d.]+) (\w+)$/.exec(text);
          return m !== null && parseFloat(m[1]!) > 0 ? 'flowing' : 'waiting';
        },
        { timeout: 30_000 },
      )
      .toBe('flowing');
    await screenshot(page, 'transfers-running');
    const before = await row.getByTestId('stat-bytes').textContent();
    await row.getByRole('button', { name: /^Cancel / }).click();
    await expectTransferState(row, 'cancelled');
    expect(before).not.toMatch(/^(\S+ \S+) of \1$/);
    await expect(row.getByTestId('transfer-state')).toHaveText('Cancelled');
    await expect(row.getByRole('button', { name: /Retry/ })).toBeVisible();

    expect(existsSync(dest)).toBe(false);
    // nor the engine's temporary directory beside it
    const left = existsSync(parent) ? await readdir(parent) : [];
    expect(left.filter((n) => n.includes('cancelled'))).toEqual([]);
  });
});

/** First run on a host of its own (its sample prepared and served, nothing run yet): one click clones the sample. */
async function firstRunSampleClone(page: Page, check: (dest: string) => void): Promise<void> {
  const host = await startWebHost();
  try {
    await page.goto(host.url);
    await expect(page.getByTestId('empty-transfers')).toBeVisible();
    await page.getByRole('button', { name: 'Clone the sample repository' }).click();
    const row = page.getByTestId('transfer').filter({ hasText: 'Sample repository' });
    await expect(row).toBeVisible();
    await expectTransferState(row, 'done');
    const dest = join(host.cloneDir, 'sample');
    await expect(row).toContainText(dest);
    check(dest);
  } finally {
    await host.stop();
  }
}

test('first run: one click clones the sample repository into the default folder', async ({ page }) => {
  await firstRunSampleClone(page, (dest) => expect(existsSync(join(dest, '.hg', 'store'))).toBe(true));
});

test(`first run: the sample clone passes hg verify${skipNote('hg')}`, async ({ page }) => {
  test.skip(missing('hg'), 'hg is not installed');
  await firstRunSampleClone(page, (dest) => {
    const verify = hgVerify(dest);
    expect(verify.status, verify.output).toBe(0);
  });
});
