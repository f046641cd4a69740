// The app after a restart (a second web host on the same data folder, on another port): what the
// user set is kept, the sample clone still pulls from its source, and a cancelled job's row shows
// how far it got after a reload.
import { join } from 'node:path';
import { expect, makeTempDir, startWebHost, test } from './fixtures';
import { expectTransferState, SLOW_CLOSES } from './ui-helpers';

test('settings and the sample clone outlive a restart of the host', async ({ page }) => {
  const root = await makeTempDir('sluice-e2e-restart-');
  try {
    const first = await startWebHost({ root: root.path });
    try {
      await page.goto(first.url);
      await page.getByRole('button', { name: /^Theme: System/ }).click();
      await page.getByRole('button', { name: /^Theme: Light/ }).click();
      await expect(page.locator('html')).toHaveAttribute('data-theme', 'dark');
      await page.getByRole('button', { name: 'Clone the sample repository' }).click();
      await expectTransferState(
        page.getByTestId('transfer').filter({ hasText: 'Sample repository' }),
        'done',
      );
      await page.getByRole('button', { name: 'Compact', exact: true }).click();
      await expect(page.getByRole('list', { name: 'Transfers' })).toHaveClass(/compact/);
    } finally {
      await first.stop();
    }

    const second = await startWebHost({ root: root.path });
    try {
      expect(second.port).not.toBe(first.port);
      await page.goto(second.url);
      await expect(page.locator('html')).toHaveAttribute('data-theme', 'dark');
      await page.getByRole('button', { name: 'Repositories' }).click();
      const dest = join(second.cloneDir, 'sample');
      const row = page.locator(`[data-testid="repo-row"][data-path="${dest}"]`);
      await expect(page.getByTestId('repo-list')).toHaveClass(/compact/);
      // its source is the sample's path, not a port of the first host: the pull reaches it
      await row.getByRole('button', { name: 'Pull…' }).click();
      await expect(row.getByTestId('repo-pull-state')).toHaveText('incoming check done', { timeout: 30_000 });
      await expect(row.getByTestId('repo-incoming')).toHaveText('No incoming changesets: up to date.');
    } finally {
      await second.stop();
    }
  } finally {
    await root.remove();
  }
});

test('a cancelled job shows how far it got after a reload', async ({ page }) => {
  const host = await startWebHost();
  try {
    await page.goto(host.url);
    const sample = await page.evaluate(() => window.sluice.invoke('sample:get'));
    // slow closes: the job is still writing when it is cancelled
    const { jobId } = await page.evaluate(
      ([url, dest, closer]) =>
        window.sluice.invoke('job:start', {
          kind: 'clone',
          url,
          dest,
          closer,
        }),
      [sample.url, join(host.cloneDir, 'to-cancel'), SLOW_CLOSES] as const,
    );
    const row = page.locator(`[data-testid="transfer"][data-job-id="${jobId}"]`);
    await expect(row).toHaveAttribute('data-state', 'running');
    await expect(row.getByTestId('stat-bytes')).not.toHaveText(/^0 B/, { timeout: 20_000 });
    await row.getByRole('button', { name: /^Cancel/ }).click();
    await expectTransferState(row, 'cancelled');
    const before = await row.getByTestId('stat-files').textContent();
    expect(before).toMatch(/^\d+ of 28$/);
    await page.reload();
    await expect(row).toHaveAttribute('data-state', 'cancelled');
    await expect(row.getByTestId('stat-files')).not.toHaveText('–');
    await expect(row.getByTestId('stat-bytes')).not.toHaveText(/^0 B/);
    await expect(row.getByTestId('stat-files')).toHaveText(/^\d+ of 28$/);
  } finally {
    await host.stop();
  }
});

test('a page left open when the host stops says so at once, without waiting for an action', async ({
  page,
}) => {
  const host = await startWebHost({ noSample: true });
  try {
    await page.goto(host.url);
    await expect(page.getByRole('heading', { level: 1, name: 'Transfers' })).toBeVisible();
    await expect(page.getByTestId('notice')).toHaveCount(0);
  } finally {
    await host.stop();
  }
  await expect(
    page.getByTestId('notice').filter({ hasText: 'Disconnected from the Sluice host' }),
  ).toBeVisible({
    timeout: 5_000,
  });
});
