// The renderer against a simulated host (test/support/renderer/demo-host.ts served in place of
// the web host's bridge.js): states the real engine rarely produces on demand — a 250,000-line
// debug log, a stalled transfer, a network failure — checked for behaviour (speed is printed, benchmarks measure it).
import { build } from 'esbuild';
import { join } from 'node:path';
import { test, expect, PROJECT_ROOT } from './fixtures';
import { dropFile, openCloneDialog, screenshot, transferRow } from './ui-helpers';
import type { Page } from '@playwright/test';

let demoBridge: string | undefined;

async function openWithDemoHost(page: Page, origin: string, url: string, speed: number): Promise<void> {
  demoBridge ??= (
    await build({
      entryPoints: [join(PROJECT_ROOT, 'test/support/renderer/demo-host.ts')],
      bundle: true,
      format: 'iife',
      platform: 'browser',
      write: false,
    })
  ).outputFiles[0]!.text;
  // the page asks for ./bridge.js?token=…: match the path, whatever the query
  await page.route(
    (u) => u.origin === origin && u.pathname === '/bridge.js',
    (route) =>
      route.fulfill({
        body: `self.__sluiceDemoSpeed = ${speed};\n${demoBridge}`,
        contentType: 'text/javascript',
      }),
  );
  await page.goto(url);
  await expect(page.getByRole('heading', { name: 'Transfers' })).toBeVisible();
}

test('a 250,000-line debug log stays virtualized, draws the lines under every scroll position, filters and exports in full', async ({
  page,
  webHost,
}) => {
  test.setTimeout(90_000);
  await openWithDemoHost(page, webHost.origin, webHost.url, 10);
  await dropFile(page, 'big.hg', new Uint8Array([0x48, 0x47, 0x32, 0x30]));
  const apply = page.getByRole('dialog', { name: 'Apply stream bundle' });
  await apply.getByRole('button', { name: 'Apply bundle' }).click();
  const row = transferRow(page, 'big');
  await expect(row).toHaveAttribute('data-state', 'done', { timeout: 60_000 });

  await row.getByRole('button', { name: /Show log/ }).click();
  const view = page.getByTestId('logview');
  // 250,000 "adding" lines plus hg's header/footer and phase lines
  await expect
    .poll(async () => Number(await view.getAttribute('data-total')), { timeout: 10_000 })
    .toBeGreaterThan(250_000);
  const total = Number(await view.getAttribute('data-total'));
  expect(total).toBeLessThan(250_010);
  expect(await view.locator('.log-line').count()).toBeLessThan(150);

  // jump through the whole log: at every position the rows drawn are the ones under the viewport
  // (their line numbers follow the scroll position, their text has arrived) and only a screenful
  // of them exists. How fast a jump renders is the benchmarks' business, not this test's.
  for (let i = 0; i <= 8; i++) {
    const expected = await view.evaluate((el, at) => {
      el.scrollTop = ((el.scrollHeight - el.clientHeight) * at) / 8;
      const row = (el.querySelector('.log-line') as HTMLElement | null)?.offsetHeight || 1;
      return Math.floor(el.scrollTop / row) + 1;
    }, i);
    await expect
      .poll(
        () =>
          view.evaluate((el, want) => {
            const top = el.getBoundingClientRect().top;
            const rows = [...el.querySelectorAll<HTMLElement>('.log-line')];
            const under = rows.find((r) => r.getBoundingClientRect().bottom > top + 1);
            return {
              pending: rows.some((r) => r.classList.contains('log-pending')),
              // the line under the viewport's top edge (off by one at most where a row is cut)
              atScroll: Math.abs(Number(under?.querySelector('.log-number')?.textContent) - want) <= 1,
            };
          }, expected),
        { timeout: 10_000 },
      )
      .toEqual({ pending: false, atScroll: true });
    expect(await view.locator('.log-line').count()).toBeLessThan(150);
  }
  await expect(view).toContainText('data/src/module124999.py.i');
  expect(await view.locator('.log-line').count()).toBeLessThan(150);
  await screenshot(page, 'log-250k');

  await page.getByLabel('Filter lines').fill('module12499.');
  await expect(page.getByTestId('log-count')).toHaveText(/^2 of 250,\d{3} lines$/);
  await page.getByLabel('Filter lines').fill('');

  await page.getByRole('button', { name: 'Export…' }).click();
  await expect(page.getByTestId('notice').filter({ hasText: 'Saved' })).toBeVisible();
  const exported = await page.evaluate(
    () =>
      Object.values(
        (window as unknown as { __sluiceDemoExports: Record<string, string> }).__sluiceDemoExports,
      )[0]!,
  );
  const lines = exported.trimEnd().split('\n');
  expect(lines[0]).toMatch(/^# Sluice apply bundle .*big\.hg/);
  expect(lines.length).toBe(total + 1);
  expect(lines.filter((l) => l.startsWith('adding [s] ')).length).toBe(250_000);
});

test('a stalled transfer is flagged with cancel and retry at hand', async ({ page, webHost }) => {
  await openWithDemoHost(page, webHost.origin, webHost.url, 2);
  await page.getByRole('button', { name: 'Settings' }).click();
  await page.getByLabel('Stalled after').fill('3');
  await page.getByRole('button', { name: 'Done' }).click();

  const dialog = await openCloneDialog(page, 'http://127.0.0.1:8000/slow-repo');
  await dialog.getByRole('button', { name: 'Clone', exact: true }).click();
  const row = transferRow(page, 'slow-repo');
  const banner = row.getByTestId('stall-banner');
  await expect(banner).toBeVisible({ timeout: 15_000 });
  await expect(row.getByTestId('transfer-state')).toContainText('Stalled');
  await screenshot(page, 'transfers-stalled');

  await banner.getByRole('button', { name: 'Cancel and retry' }).click();
  await expect(page.getByTestId('transfer')).toHaveCount(2);
  await expect(page.getByTestId('transfer').nth(1)).toHaveAttribute('data-state', 'cancelled');
  await expect(page.getByTestId('transfer').nth(0)).toHaveAttribute('data-state', 'running');
});

test('a failed transfer explains the error in words and retries the same request', async ({
  page,
  webHost,
}) => {
  await openWithDemoHost(page, webHost.origin, webHost.url, 4);
  const dialog = await openCloneDialog(page, 'http://127.0.0.1:8000/broken-repo');
  await dialog.getByRole('button', { name: 'Clone', exact: true }).click();
  const row = transferRow(page, 'broken-repo');
  await expect(row).toHaveAttribute('data-state', 'failed', { timeout: 15_000 });
  await expect(row.getByRole('alert')).toContainText('Could not reach the server');
  await expect(row.getByRole('alert')).toContainText('NETWORK');
  await screenshot(page, 'transfers-failed');
  await row.getByRole('button', { name: /^Retry/ }).click();
  await expect(page.getByTestId('transfer')).toHaveCount(2);
  await expect(page.getByTestId('transfer').nth(0)).toContainText('broken-repo');
});
