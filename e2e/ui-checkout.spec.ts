// Clone with a working copy through the UI: the clone dialog checks out by default (hg clone's
// behaviour), the job's log reports hg's "N files updated" line, and the files are on disk with a
// clean `hg status`. Also: unticking "Check out working copy" gives an `hg clone -U` repository.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { missing, skipNote } from '../test/support/env';
import { test, expect, repoFromFixture, startHgServe, type HgServe } from './fixtures';
import { expectTransferState, hgVerify, openCloneDialog, screenshot, transferRow } from './ui-helpers';

const hgOut = (args: string[]): string =>
  spawnSync('hg', args, { encoding: 'utf8', env: { ...process.env, HGPLAIN: '1', HGRCPATH: '' } }).stdout ??
  '';

test.describe(`clone with checkout${skipNote('hg')}`, () => {
  test.skip(missing('hg'), 'hg is not installed: these tests clone from a live `hg serve`');

  let server: HgServe | undefined;
  test.afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  test('the dialog checks out the working copy and the log shows the files count', async ({
    sluicePage: page,
    tempDir,
  }) => {
    server = await startHgServe(await repoFromFixture(tempDir));
    const dest = join(tempDir, 'with-files');
    const dialog = await openCloneDialog(page, server.url, dest);
    await expect(dialog.getByLabel('Check out working copy')).toBeChecked();
    await expect(dialog.getByLabel('Revision to check out')).toBeVisible();
    await dialog.getByRole('button', { name: 'Clone', exact: true }).click();
    await expect(dialog).toBeHidden();

    const row = transferRow(page, dest);
    await expectTransferState(row, 'done');
    const tracked = hgOut(['files', '-R', dest]).split('\n').filter(Boolean).length;
    expect(tracked).toBeGreaterThan(0);
    await row.getByRole('button', { name: /Show log/ }).click();
    const log = page.getByRole('dialog', { name: /Debug log/ });
    // the view renders only the lines on screen: filter to the ones asserted
    await log.getByLabel('Filter lines').fill('files updated');
    await expect(log.getByTestId('logview')).toContainText(`${tracked} files updated, 0 files merged`);
    await log.getByLabel('Filter lines').fill('getting ');
    await expect(log.getByTestId('logview')).toContainText('getting ');
    await log.getByLabel('Filter lines').fill('');
    await screenshot(page, 'clone-checkout-log');
    await page.keyboard.press('Escape');

    expect(hgOut(['status', '-R', dest])).toBe('');
    expect(readdirSync(dest).length).toBeGreaterThan(1);
    expect(hgVerify(dest).status).toBe(0);
  });

  test('unticking "Check out working copy" clones like hg clone -U', async ({
    sluicePage: page,
    tempDir,
  }) => {
    server = await startHgServe(await repoFromFixture(tempDir));
    const dest = join(tempDir, 'bare');
    const dialog = await openCloneDialog(page, server.url, dest);
    await dialog.getByLabel('Check out working copy').uncheck();
    await expect(dialog.getByLabel('Revision to check out')).toBeHidden();
    await dialog.getByRole('button', { name: 'Clone', exact: true }).click();
    await expectTransferState(transferRow(page, dest), 'done');
    expect(readdirSync(dest)).toEqual(['.hg']);
  });
});
