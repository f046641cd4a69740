// Bundles through the UI: drop a real bundle file (its bytes in a DataTransfer, dispatched as a
// drop), inspect it, apply it, verify the result; refuse a file that is not a bundle and one that
// needs requirements nobody supports, before anything starts.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Page } from '@playwright/test';
import { missing, skipNote } from '../test/support/env';
import { test, expect, FIXTURES_DIR } from './fixtures';
import {
  dropFile,
  expectTransferState,
  hgVerify,
  packed1WithRequirement,
  screenshot,
  transferRow,
} from './ui-helpers';

/** Drops the default fixture's stream v2 bundle on the page and applies it into `dest` through the dialog. */
async function dropAndApply(page: Page, dest: string) {
  const bytes = await readFile(join(FIXTURES_DIR, 'default', 'stream-v2.hg'));

  await page.evaluate(() => {
    const dt = new DataTransfer();
    dt.items.add(new File([new Uint8Array(4)], 'x.hg'));
    document.body.dispatchEvent(
      new DragEvent('dragenter', { dataTransfer: dt, bubbles: true, cancelable: true }),
    );
  });
  await expect(page.getByTestId('drop-overlay')).toContainText('Drop a bundle');
  await screenshot(page, 'drop-overlay');

  await dropFile(page, 'stream-v2.hg', bytes);
  const dialog = page.getByRole('dialog', { name: 'Apply stream bundle' });
  await expect(dialog).toBeVisible();
  const facts = dialog.getByTestId('bundle-facts');
  await expect(facts).toContainText('bundle2 with stream v2');
  await expect(facts).toContainText('generaldelta');
  expect(Number((await dialog.getByTestId('bundle-files').textContent())!.replace(/,/g, ''))).toBeGreaterThan(
    0,
  );
  await dialog.getByLabel('New repository folder').fill(dest);
  await screenshot(page, 'apply-dialog');
  await dialog.getByRole('button', { name: 'Apply bundle' }).click();

  const row = transferRow(page, dest);
  await expectTransferState(row, 'done');
  expect(existsSync(join(dest, '.hg', 'requires'))).toBe(true);
  return row;
}

test('dropping a stream v2 bundle opens the apply dialog; applying it makes a sound repository', async ({
  sluicePage: page,
  tempDir,
}) => {
  const row = await dropAndApply(page, join(tempDir, 'from-drop'));

  // Sluice's own verification, started from the finished row
  await row.getByRole('button', { name: /^Verify / }).click();
  const verifyRow = page.getByTestId('transfer').filter({ hasText: 'Verify from-drop' });
  await expectTransferState(verifyRow, 'done');
});

test(`a repository applied from a dropped bundle passes hg verify${skipNote('hg')}`, async ({
  sluicePage: page,
  tempDir,
}) => {
  test.skip(missing('hg'), 'hg is not installed');
  const dest = join(tempDir, 'from-drop-hg');
  await dropAndApply(page, dest);
  const verify = hgVerify(dest);
  expect(verify.status, verify.output).toBe(0);
});

test('a file that is not a bundle is refused with a clear message, and nothing starts', async ({
  sluicePage: page,
}) => {
  // the web host is shared by the specs of a worker: count what was there before
  const jobsBefore = (await page.evaluate(() => window.sluice.invoke('job:list'))).length;
  await dropFile(page, 'notes.txt', Buffer.from('# Release notes\n\nNothing to see here.\n'));
  const refused = page.getByRole('alertdialog', { name: /Sluice cannot apply “notes.txt”/ });
  await expect(refused).toBeVisible();
  await expect(refused).toContainText('Nothing was written.');
  await expect(refused.getByRole('alert')).toContainText(/not a Mercurial bundle|damaged|ended too early/);
  await screenshot(page, 'refused-dialog');
  await refused.getByRole('button', { name: 'OK' }).click();
  await expect(refused).toBeHidden();
  expect(await page.evaluate(() => window.sluice.invoke('job:list'))).toHaveLength(jobsBefore);
  await expect(page.getByTestId('transfer')).toHaveCount(jobsBefore);
});

test('a bundle that needs an unsupported requirement is refused before it starts', async ({
  sluicePage: page,
}) => {
  const jobsBefore = (await page.evaluate(() => window.sluice.invoke('job:list'))).length;
  const bytes = await packed1WithRequirement(
    join(FIXTURES_DIR, 'default', 'packed1.hg'),
    'exp-sluice-test-unknown',
  );
  await dropFile(page, 'future.hg', bytes);
  const refused = page.getByRole('alertdialog', { name: /Sluice cannot apply “future.hg”/ });
  await expect(refused).toBeVisible();
  await expect(refused).toContainText('needs features Sluice does not support');
  await expect(refused).toContainText('exp-sluice-test-unknown');
  await screenshot(page, 'refused-requirements');
  await page.keyboard.press('Escape');
  await expect(refused).toBeHidden();
  expect(await page.evaluate(() => window.sluice.invoke('job:list'))).toHaveLength(jobsBefore);
});
