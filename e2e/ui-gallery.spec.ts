// Every screen in both themes, against the real web host, saved as
// test-results/screenshots/<screen>-<theme>.png for a person to look at; plus the keyboard basics
// (skip link, focus into and back out of dialogs, Esc) and the theme toggle.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, expect, FIXTURES_DIR, startWebHost } from './fixtures';
import { dropFile, expectTransferState, screenshot, transferRow } from './ui-helpers';
import type { Page } from '@playwright/test';

for (const colorScheme of ['light', 'dark'] as const) {
  test(`every screen, ${colorScheme} theme`, async ({ page, tempDir }) => {
    // a host of its own: the first screen is the empty first-run state
    const host = await startWebHost({ noSample: true });
    // the renderer's strict CSP (no inline script or style) must hold on every screen
    const problems: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error' || /Content Security Policy|Refused to/i.test(m.text()))
        problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(e.message));
    try {
      await page.emulateMedia({ colorScheme });
      await page.goto(host.url);
      await galleryOf(page, tempDir, colorScheme);
      expect(problems).toEqual([]);
    } finally {
      await host.stop();
    }
  });
}

async function galleryOf(page: Page, tempDir: string, colorScheme: 'light' | 'dark'): Promise<void> {
  await expect(page.locator('html')).toHaveAttribute('data-theme', colorScheme);

  await expect(page.getByTestId('empty-transfers')).toBeVisible();
  await expect(page.getByRole('button', { name: 'Clone the sample repository' })).toBeVisible();
  await screenshot(page, 'transfers-empty');

  await page.getByRole('button', { name: 'Clone from URL…' }).first().click();
  await expect(page.getByRole('dialog', { name: 'Clone from URL' })).toBeVisible();
  await screenshot(page, 'clone-dialog-empty');
  await page.keyboard.press('Escape');

  const dest = join(tempDir, `gallery-${colorScheme}`);
  await dropFile(page, 'stream-v2.hg', await readFile(join(FIXTURES_DIR, 'default', 'stream-v2.hg')));
  const apply = page.getByRole('dialog', { name: 'Apply stream bundle' });
  await apply.getByLabel('New repository folder').fill(dest);
  await apply.getByRole('button', { name: 'Apply bundle' }).click();
  await expectTransferState(transferRow(page, dest), 'done');
  await screenshot(page, 'transfers');

  await transferRow(page, dest)
    .getByRole('button', { name: /Show log/ })
    .click();
  await expect(page.getByTestId('logview')).toContainText('adding [');
  await screenshot(page, 'log');
  await page
    .getByRole('dialog', { name: /Debug log/ })
    .getByRole('button', { name: 'Close' })
    .click();

  await page.getByRole('navigation').getByRole('button', { name: 'History' }).click();
  await expect(page.getByTestId('history-table')).toContainText('gallery-');
  await screenshot(page, 'history');

  await page.getByRole('navigation').getByRole('button', { name: 'Comparisons' }).click();
  await expect(page.getByTestId('comparison-form')).toBeVisible();
  await screenshot(page, 'comparisons-form');
}

test('keyboard: skip link, focus moves into a dialog and back, Esc closes; theme toggle cycles', async ({
  sluicePage: page,
}) => {
  await page.keyboard.press('Tab');
  await expect(page.getByRole('link', { name: 'Skip to content' })).toBeFocused();
  await page.keyboard.press('Tab');
  const opener = page.getByRole('button', { name: 'Clone from URL…' }).first();
  await expect(opener).toBeFocused();
  await page.keyboard.press('Enter');
  const dialog = page.getByRole('dialog', { name: 'Clone from URL' });
  await expect(dialog).toBeVisible();
  await expect(dialog.getByLabel('Repository URL')).toBeFocused();
  // invalid input is explained, not silently ignored
  await page.keyboard.type('ftp://hg.example.org/repo');
  await page.keyboard.press('Enter');
  await expect(
    dialog.getByText('Only http://, https://, ssh:// and file:// URLs and absolute paths are supported.'),
  ).toBeVisible();
  await expect(dialog.getByLabel('Repository URL')).toHaveAttribute('aria-invalid', 'true');
  await page.keyboard.press('Escape');
  await expect(dialog).toBeHidden();
  await expect(opener).toBeFocused();

  const toggle = page.getByTestId('theme-toggle');
  await toggle.click();
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'light');
  await toggle.click();
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'dark');
  await expect(toggle).toHaveAccessibleName(/Theme: Dark/);
  // the choice survives a reload
  await page.reload();
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'dark');
});
