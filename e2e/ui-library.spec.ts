// The repository library through the web host: a clone from a live `hg serve` appears with the
// right tip; a commit made with hg in that repository changes its row without a refresh; verify from the
// row; "open folder" says where the folder is (a browser page cannot open a file manager); remove
// from the list. Screenshots of the library, light and dark, for the README (docs/screenshots/).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Page } from '@playwright/test';
import { missing, skipNote } from '../test/support/env';
import { test, expect, repoFromFixture, startHgServe, PROJECT_ROOT, type HgServe } from './fixtures';
import { expectTransferState, openCloneDialog, SCREENSHOT_DIR, settled, transferRow } from './ui-helpers';

const HG_ENV = { ...process.env, HGPLAIN: '1', HGRCPATH: '', HGUSER: 'E2E <e2e@example.com>' };

function hg(cwd: string, ...args: string[]): string {
  const r = spawnSync('hg', args, { cwd, env: HG_ENV, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`hg ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

async function cloneThroughDialog(page: Page, url: string, dest: string): Promise<void> {
  const dialog = await openCloneDialog(page, url, dest);
  await dialog.getByRole('button', { name: 'Clone', exact: true }).click();
  await expect(dialog).toBeHidden();
  await expectTransferState(transferRow(page, dest), 'done');
}

test.describe(`repository library${skipNote('hg')}`, () => {
  test.skip(missing('hg'), 'hg is not installed: the library is tested against repositories hg writes');

  let server: HgServe | undefined;
  test.afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  test('Delete in the web host: no trash offered; the folder goes for good once its name is typed', async ({
    sluicePage: page,
    tempDir,
  }) => {
    const repo = await repoFromFixture(tempDir);
    const keep = join(tempDir, 'beside');
    await mkdir(keep);
    await page.evaluate(
      (path) =>
        (window as unknown as { sluice: { invoke(c: string, p: string): Promise<unknown> } }).sluice.invoke(
          'library:add',
          path,
        ),
      repo,
    );
    await page.getByRole('button', { name: 'Repositories' }).click();
    const row = page.locator(`[data-testid="repo-row"][data-path="${repo}"]`);
    await expect(row).toBeVisible();
    await expect(row.getByRole('button', { name: 'Delete…' })).toHaveCount(0);
    await row.getByRole('button', { name: 'Delete folder permanently…' }).click();
    const confirm = row.getByRole('group', { name: 'Confirm deleting the folder permanently' });
    await expect(confirm.getByRole('button', { name: 'Move to trash' })).toHaveCount(0);
    const button = confirm.getByRole('button', { name: 'Delete permanently' });
    await expect(button).toBeDisabled();
    await confirm.getByRole('textbox').fill('not-its-name');
    await expect(button).toBeDisabled();
    await confirm.getByRole('textbox').fill(basename(repo));
    await button.click();
    await expect(row).toHaveCount(0);
    expect(existsSync(repo)).toBe(false);
    expect(existsSync(keep)).toBe(true);
  });

  test('a clone appears with its tip; an hg commit there changes the row without a refresh; verify; open folder; remove', async ({
    sluicePage: page,
    tempDir,
  }) => {
    const served = await repoFromFixture(tempDir);
    server = await startHgServe(served);
    const dest = join(tempDir, 'library-clone');
    await cloneThroughDialog(page, server.url, dest);

    await page.getByRole('button', { name: 'Repositories' }).click();
    const row = page.locator(`[data-testid="repo-row"][data-path="${dest}"]`);
    await expect(row).toBeVisible();
    const tip = hg(served, 'log', '-r', 'tip', '-T', '{rev}:{node|short}');
    await expect(row.getByTestId('repo-tip')).toContainText(tip);
    await expect(row).toContainText(server.url.replace(/\/$/, ''));

    // outside Sluice, as a user in a terminal would
    hg(dest, 'update', '-q', '-r', 'tip');
    writeFileSync(join(dest, 'from-terminal.txt'), 'hello\n');
    hg(dest, 'commit', '-q', '-A', '-m', 'committed in a terminal');
    // the library's watch on .hg notices it: no refresh, no click (the bound is a hang detector)
    await expect(row.getByTestId('repo-tip')).toContainText('committed in a terminal', { timeout: 30_000 });
    const newTip = hg(dest, 'log', '-r', 'tip', '-T', '{rev}:{node|short}');
    await expect(row.getByTestId('repo-tip')).toContainText(newTip);
    await expect(row.getByTestId('repo-parent')).toContainText(newTip);

    await row.getByRole('button', { name: 'Verify' }).click();
    await expect(row.getByTestId('repo-verify-state')).toHaveText('passed', { timeout: 30_000 });

    await row.getByRole('button', { name: 'Open folder' }).click();
    const reveal = page.getByTestId('reveal-dialog');
    await expect(reveal.getByTestId('reveal-path')).toHaveText(dest);
    await reveal.getByRole('button', { name: 'Done' }).click();

    // screenshots of both themes; SLUICE_UPDATE_SCREENSHOTS=1 writes the README's (docs/screenshots)
    const shots = process.env.SLUICE_UPDATE_SCREENSHOTS
      ? join(PROJECT_ROOT, 'docs', 'screenshots')
      : SCREENSHOT_DIR;
    await mkdir(shots, { recursive: true });
    await page.setViewportSize({ width: 1100, height: 640 });
    for (const theme of ['light', 'dark'] as const) {
      await page.evaluate((t) => (document.documentElement.dataset.theme = t), theme);
      await settled(page);
      await page.screenshot({ path: join(shots, `library-${theme}.png`), animations: 'disabled' });
    }

    await row.getByRole('button', { name: 'Remove from list' }).click();
    await row.getByRole('button', { name: 'Remove', exact: true }).click();
    await expect(row).toHaveCount(0);
    expect(existsSync(join(dest, '.hg'))).toBe(true);
  });

  test('Add existing refuses a folder without .hg and lists a repository made by hg', async ({
    sluicePage: page,
    tempDir,
  }) => {
    const repo = join(tempDir, 'made-by-hg');
    hg(tempDir, 'init', repo);
    await page.getByRole('button', { name: 'Repositories' }).click();
    for (const [path, ok] of [
      [tempDir, false],
      [repo, true],
    ] as const) {
      await page.getByRole('button', { name: 'Add existing…' }).click();
      const dialog = page.getByTestId('add-repository-dialog');
      await dialog.getByLabel('Repository folder').fill(path);
      await dialog.getByRole('button', { name: 'Add', exact: true }).click();
      if (!ok) {
        await expect(
          page.getByTestId('notice').filter({ hasText: 'not a Mercurial repository' }),
        ).toBeVisible();
        await dialog.getByRole('button', { name: 'Cancel' }).click();
      }
    }
    const row = page.locator(`[data-testid="repo-row"][data-path="${repo}"]`);
    await expect(row.getByTestId('repo-tip')).toHaveText('empty repository');
    await expect(row.getByTestId('repo-parent')).toHaveText('no working copy');
  });

  test('the clone dialog checks the destination before submit, shows the hg command and remembers the URL', async ({
    sluicePage: page,
    tempDir,
  }) => {
    const served = await repoFromFixture(tempDir);
    server = await startHgServe(served);
    writeFileSync(join(tempDir, 'a-file'), 'x');
    const dialog = await openCloneDialog(page, server.url);
    const destField = dialog.getByLabel('Destination folder');
    await destField.fill(join(tempDir, 'a-file'));
    await expect(dialog.locator('.field-error')).toContainText('This folder is a file');
    await destField.fill(tempDir);
    await expect(dialog.locator('.field-error')).toContainText('is not empty');
    const dest = join(tempDir, 'fresh');
    await destField.fill(dest);
    await expect(dialog.locator('.field-error')).toHaveCount(0);
    await expect(dialog.getByTestId('hg-command')).toHaveText(`hg clone --stream ${server.url} ${dest}`);
    // a stream format chosen here is for this clone only
    await dialog.getByText('Options', { exact: true }).click();
    await dialog.getByRole('radio', { name: /^Stream v1/ }).check();
    await dialog.getByRole('button', { name: 'Clone', exact: true }).click();
    await expectTransferState(transferRow(page, dest), 'done');

    // the next clone suggests the folder of the last one and offers the URL again
    await page.getByRole('button', { name: 'Clone from URL…' }).first().click();
    // the next dialog starts from Settings' default (Auto), not from the last clone's v1
    await dialog.getByText('Options', { exact: true }).click();
    await expect(dialog.getByRole('radio', { name: /^Auto/ })).toBeChecked();
    // newest first (the host keeps them for every page of this host: earlier tests' URLs follow)
    await expect(dialog.locator('#clone-recent-urls option').first()).toHaveAttribute('value', server.url);
    await dialog.getByLabel('Repository URL').fill(`${server.url}other-name`);
    await expect(destField).toHaveValue(join(tempDir, 'other-name'));
  });

  test('pull after the served repository gains changesets shows the new tip', async ({
    sluicePage: page,
    tempDir,
  }) => {
    const served = await repoFromFixture(tempDir);
    server = await startHgServe(served);
    const dest = join(tempDir, 'to-pull');
    await cloneThroughDialog(page, server.url, dest);
    // the served repository gains a changeset
    hg(served, 'update', '-q', '-r', 'tip');
    writeFileSync(join(served, 'upstream.txt'), 'new\n');
    hg(served, 'commit', '-q', '-A', '-m', 'upstream change');
    const upstreamTip = hg(served, 'log', '-r', 'tip', '-T', '{rev}:{node|short}');
    await page.getByRole('button', { name: 'Repositories' }).click();
    const row = page.locator(`[data-testid="repo-row"][data-path="${dest}"]`);
    await expect(row.getByTestId('repo-tip')).not.toContainText(upstreamTip);
    await row.getByRole('button', { name: 'Pull…' }).click();
    await expect(row.getByTestId('repo-pull-state')).toHaveText('incoming check done', { timeout: 30_000 });
    // the count is in the row, and the offer survives a change of screen
    await expect(row.getByTestId('repo-incoming')).toHaveText('1 incoming changeset.');
    await page.getByRole('button', { name: 'Transfers' }).click();
    await page.getByRole('button', { name: 'Repositories' }).click();
    await row.getByRole('button', { name: 'Pull now' }).click();
    await expect(row.getByTestId('repo-pull-state')).toHaveText('pull done', { timeout: 30_000 });
    await expect(row.getByTestId('repo-tip')).toContainText(upstreamTip);
    await expect(row.getByTestId('repo-tip')).toContainText('upstream change');
    // nothing more to pull: the check says so and offers no pull
    await row.getByRole('button', { name: 'Pull…' }).click();
    await expect(row.getByTestId('repo-pull-state')).toHaveText('incoming check done', { timeout: 30_000 });
    await expect(row.getByTestId('repo-incoming')).toHaveText('No incoming changesets: up to date.');
    await expect(row.getByRole('button', { name: 'Pull now' })).toHaveCount(0);
  });

  test('update to a revision from the row', async ({ sluicePage: page, tempDir }) => {
    const repo = join(tempDir, 'two-revisions');
    hg(tempDir, 'init', repo);
    writeFileSync(join(repo, 'a.txt'), 'one\n');
    hg(repo, 'commit', '-q', '-A', '-m', 'first');
    writeFileSync(join(repo, 'a.txt'), 'two\n');
    hg(repo, 'commit', '-q', '-m', 'second');
    const rev0 = hg(repo, 'log', '-r', '0', '-T', '{rev}:{node|short}');
    await page.getByRole('button', { name: 'Repositories' }).click();
    await page.getByRole('button', { name: 'Add existing…' }).click();
    const dialog = page.getByTestId('add-repository-dialog');
    await dialog.getByLabel('Repository folder').fill(repo);
    await dialog.getByRole('button', { name: 'Add', exact: true }).click();
    const row = page.locator(`[data-testid="repo-row"][data-path="${repo}"]`);
    await expect(row.getByTestId('repo-parent')).toContainText('1:');
    await row.getByRole('button', { name: 'Update…' }).click();
    await row.getByLabel('Revision', { exact: true }).fill('0');
    await row.getByRole('button', { name: 'Update', exact: true }).click();
    await expect(row.getByTestId('repo-update-state')).toHaveText('done', { timeout: 30_000 });
    // the watcher sees the new dirstate: the row follows without a reload
    await expect(row.getByTestId('repo-parent')).toContainText(rev0);
    expect(hg(repo, 'log', '-r', '.', '-T', '{rev}:{node|short}')).toBe(rev0);
    expect(readFileSync(join(repo, 'a.txt'), 'utf8')).toBe('one\n');
    // a local change refuses the next update, as hg does, and the row says what and where
    writeFileSync(join(repo, 'a.txt'), 'edited here\n');
    await row.getByRole('button', { name: 'Update…' }).click();
    await row.getByRole('button', { name: 'Update', exact: true }).click();
    await expect(row.getByTestId('repo-update-state')).toHaveText('failed', { timeout: 30_000 });
    const reason = row.getByTestId('repo-update-state-reason');
    await expect(reason).toHaveText('Uncommitted changes: a.txt is modified');
    await expect(reason).toHaveAttribute('title', /uncommitted changes in 1 file \(M a\.txt\)/);
    await expect(page.getByText('The request is invalid')).toHaveCount(0);
  });
});
