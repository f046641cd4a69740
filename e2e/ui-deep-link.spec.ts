// The web host's /open?url=…: the same link a sluice://clone?… carries, opened in the browser. A
// good link opens the clone dialog pre-filled and starts nothing until Clone is clicked (the clone
// then runs against a live `hg serve`); a hostile one opens no dialog and a notice says why.
// Electron's sluice:// handler, open-file and second-instance paths need an Electron binary, which
// this machine lacks: their argv extraction is unit-tested (test/unit/host/deep-link.test.ts).
import { join } from 'node:path';
import { missing, skipNote } from '../test/support/env';
import { test, expect, repoFromFixture, startHgServe, type HgServe } from './fixtures';
import { expectTransferState, hgVerify, screenshot, transferRow } from './ui-helpers';

const openUrl = (origin: string, token: string, params: Record<string, string>) =>
  `${origin}/open?${new URLSearchParams({ token, ...params }).toString()}`;

test.describe(`deep links through the web host${skipNote('hg')}`, () => {
  let server: HgServe | undefined;
  test.afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  test('/open?url=… opens a pre-filled clone dialog; Clone clones it', async ({ page, webHost, tempDir }) => {
    test.skip(missing('hg'), 'hg is not installed: the link names a live `hg serve`');
    server = await startHgServe(await repoFromFixture(tempDir));
    const dest = join(tempDir, 'from-link');
    await page.goto(openUrl(webHost.origin, webHost.token, { url: server.url, dest, rev: 'default' }));

    const dialog = page.getByRole('dialog', { name: 'Clone from URL' });
    await expect(dialog).toBeVisible();
    await expect(dialog.getByTestId('from-link')).toContainText('Filled in from a link');
    await expect(dialog.getByLabel('Repository URL')).toHaveValue(server.url);
    await expect(dialog.getByLabel('Destination folder')).toHaveValue(dest);
    await expect(dialog.getByLabel('Revision to check out')).toHaveValue('default');
    // the one-time id left the address bar; nothing started without the user's click
    expect(new URL(page.url()).hash).toBe('');
    await expect(transferRow(page, dest)).toHaveCount(0);
    await screenshot(page, 'clone-dialog-from-link');

    await dialog.getByRole('button', { name: 'Clone', exact: true }).click();
    await expect(dialog).toBeHidden();
    await expectTransferState(transferRow(page, dest), 'done');
    const verify = hgVerify(dest);
    expect(verify.status, verify.output).toBe(0);
  });

  for (const [what, url, reason] of [
    ['javascript:', 'javascript:alert(document.cookie)', 'a link may not name a javascript: source'],
    ['file:', 'file:///etc/passwd', 'a link may not name a file: source'],
    ['control characters', 'https://h.example/r\u001b[2Jx', 'url holds control characters'],
  ] as const) {
    test(`a ${what} link opens nothing and says why`, async ({ page, webHost }) => {
      await page.goto(openUrl(webHost.origin, webHost.token, { url }));
      const notice = page.getByTestId('notice').filter({ hasText: 'A link was not opened' });
      await expect(notice).toBeVisible();
      await expect(notice).toContainText(reason);
      await expect(page.getByRole('dialog')).toHaveCount(0);
    });
  }

  test('/open without the token is refused like every route', async ({ page, webHost }) => {
    const res = await page.goto(`${webHost.origin}/open?url=${encodeURIComponent('https://h.example/r')}`);
    expect(res?.status()).toBe(403);
  });
});
