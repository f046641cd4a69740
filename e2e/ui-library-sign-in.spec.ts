// A library row whose source wants credentials (hg serve behind a basic-auth proxy), through the
// web host: the row's Fetch never asks, the row says "needs sign-in"; its "Sign in…" runs the same
// fetch asking in the sign-in dialog, and then shows the incoming count `hg incoming` lists.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startBasicAuthProxy, type BasicAuthProxy } from '../test/support/basic-auth-proxy';
import { missing, skipNote } from '../test/support/env';
import { test, expect, repoFromFixture, startHgServe, type HgServe } from './fixtures';

const HG_ENV = { ...process.env, HGPLAIN: '1', HGRCPATH: '', HGUSER: 'E2E <e2e@example.com>' };

function hg(cwd: string, ...args: string[]): string {
  const r = spawnSync('hg', args, { cwd, env: HG_ENV, encoding: 'utf8' });
  if (r.status !== 0 && !(args[0] === 'incoming' && r.status === 1))
    throw new Error(`hg ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

test.describe(`library: a source that wants credentials${skipNote('hg')}`, () => {
  test.skip(missing('hg'), 'hg is not installed: the row is checked against what hg says');

  let server: HgServe | undefined;
  let proxy: BasicAuthProxy | undefined;
  test.afterEach(async () => {
    await proxy?.stop();
    await server?.stop();
    proxy = server = undefined;
  });

  test('Fetch needs sign-in without asking; "Sign in…" asks and then shows hg incoming', async ({
    sluicePage: page,
    tempDir,
  }) => {
    test.setTimeout(120_000);
    const served = await repoFromFixture(tempDir);
    server = await startHgServe(served);
    proxy = await startBasicAuthProxy(server.url, 'alice', 's3cret');
    const repo = join(tempDir, 'signed');
    hg(tempDir, 'clone', '-q', server.url, repo);
    writeFileSync(join(repo, '.hg', 'hgrc'), `[paths]\ndefault = ${proxy.url}\n`);
    writeFileSync(join(served, 'upstream.txt'), 'new upstream\n');
    hg(served, 'commit', '-q', '-A', '-m', 'upstream change');
    await page.evaluate((path) => window.sluice.invoke('library:add', path), repo);

    await page.getByRole('button', { name: 'Repositories' }).click();
    const row = page.locator(`[data-testid="repo-row"][data-path="${repo}"]`);
    await row.getByRole('button', { name: /^Fetch signed$/ }).click();
    await expect(row.getByTestId('repo-fetch')).toHaveAttribute('data-state', 'needs-sign-in', {
      timeout: 60_000,
    });
    await expect(page.getByTestId('credentials-dialog')).toHaveCount(0);
    expect(proxy.passed()).toBe(0);

    await row.getByRole('button', { name: 'Sign in to fetch signed' }).click();
    const dialog = page.getByTestId('credentials-dialog');
    await expect(dialog).toBeVisible({ timeout: 60_000 });
    await dialog.getByLabel('User name').fill('alice');
    await dialog.getByLabel('Password').fill('s3cret');
    await dialog.getByRole('button', { name: 'Sign in' }).click();
    const expected = hg(repo, 'incoming', '-q', server.url).split('\n').filter(Boolean).length;
    expect(expected).toBe(1);
    await expect(row.getByTestId('repo-incoming')).toHaveAttribute('data-count', String(expected), {
      timeout: 60_000,
    });
    await expect(row.getByTestId('repo-outgoing')).toHaveAttribute('data-count', '0');
    expect(proxy.passed()).toBeGreaterThan(0);
  });
});
