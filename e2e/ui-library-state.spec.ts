// Every row's state at a glance, through the web host, with 20 repositories cloned from a live
// `hg serve`: editing files in three of them shows hg status's counts in their rows (the host's
// watch notices; no refresh), and Fetch all shows incoming counts equal to `hg incoming`'s.
import { spawnSync } from 'node:child_process';
import { cpSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { missing, skipNote } from '../test/support/env';
import { test, expect, repoFromFixture, startHgServe, type HgServe } from './fixtures';

const HG_ENV = { ...process.env, HGPLAIN: '1', HGRCPATH: '', HGUSER: 'E2E <e2e@example.com>' };

function hg(cwd: string, ...args: string[]): string {
  const r = spawnSync('hg', args, { cwd, env: HG_ENV, encoding: 'utf8' });
  if (r.status !== 0 && !(args[0] === 'incoming' && r.status === 1))
    throw new Error(`hg ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

test.describe(`library state: dirty counts and Fetch all${skipNote('hg')}`, () => {
  test.skip(missing('hg'), 'hg is not installed: the rows are checked against what hg says');

  let server: HgServe | undefined;
  test.afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  test('20 repositories: edits in three show their counts; Fetch all shows hg incoming counts', async ({
    sluicePage: page,
    tempDir,
  }) => {
    test.setTimeout(180_000);
    const served = await repoFromFixture(tempDir);
    server = await startHgServe(served);
    const seed = join(tempDir, 'state-00');
    hg(tempDir, 'clone', '-q', server.url, seed);
    const repos = [seed];
    for (let i = 1; i < 20; i++) {
      const r = join(tempDir, `state-${String(i).padStart(2, '0')}`);
      cpSync(seed, r, { recursive: true });
      repos.push(r);
    }
    // two repositories start behind the server: their incoming counts differ from the rest
    for (const r of repos.slice(0, 2)) hg(r, 'strip', '--config', 'extensions.strip=', '-q', '-r', 'tip');
    for (const r of repos) await page.evaluate((path) => window.sluice.invoke('library:add', path), r);

    await page.getByRole('button', { name: 'Repositories' }).click();
    const row = (path: string) => page.locator(`[data-testid="repo-row"][data-path="${path}"]`);
    for (const r of repos)
      await expect(row(r).getByTestId('repo-dirty')).toHaveText('clean', { timeout: 60_000 });

    // three edited as a user in a terminal would: a modified file, an unknown one, a deleted one
    const tracked = hg(seed, 'files').split('\n').filter(Boolean)[0]!;
    const edited = [repos[4]!, repos[11]!, repos[17]!];
    writeFileSync(join(edited[0]!, tracked), 'edited in a terminal\n');
    writeFileSync(join(edited[1]!, 'notes.txt'), 'not tracked\n');
    writeFileSync(join(edited[1]!, tracked), 'edited too\n');
    rmSync(join(edited[2]!, tracked));
    // the bound is a hang detector, not a speed claim
    const dirty = (path: string) => row(path).getByTestId('repo-dirty');
    await expect(dirty(edited[0]!)).toHaveText(/M1/, { timeout: 20_000 });
    await expect(dirty(edited[1]!)).toHaveText(/M1 \?1/, { timeout: 20_000 });
    await expect(dirty(edited[2]!)).toHaveText(/!1/, { timeout: 20_000 });
    for (const path of edited) {
      const hgStatus = hg(path, 'status').split('\n').filter(Boolean).length;
      await expect(dirty(path)).toHaveAttribute('data-dirty', String(hgStatus));
    }
    await expect(dirty(repos[5]!)).toHaveText('clean');

    // new changesets on the server, then Fetch all
    writeFileSync(join(served, 'upstream.txt'), 'new upstream\n');
    hg(served, 'commit', '-q', '-A', '-m', 'upstream change');
    await page.getByRole('button', { name: 'Fetch all' }).click();
    for (const r of repos) {
      const expected = hg(r, 'incoming', '-q').split('\n').filter(Boolean).length;
      await expect(row(r).getByTestId('repo-incoming')).toHaveAttribute('data-count', String(expected), {
        timeout: 60_000,
      });
      await expect(row(r).getByTestId('repo-outgoing')).toHaveAttribute('data-count', '0');
    }
    expect(hg(repos[0]!, 'incoming', '-q').split('\n').filter(Boolean)).toHaveLength(2);
    expect(hg(repos[3]!, 'incoming', '-q').split('\n').filter(Boolean)).toHaveLength(1);

    // a repository's own background interval, from its row
    const rowOf = (path: string) =>
      page.evaluate(
        async (p) => (await window.sluice.invoke('library:list')).find((r) => r.path === p),
        path,
      );
    await row(repos[0]!)
      .getByLabel(/^Background fetch for/)
      .selectOption('15');
    await expect.poll(async () => (await rowOf(repos[0]!))?.fetchInterval).toBe(15);
    await row(repos[0]!)
      .getByLabel(/^Background fetch for/)
      .selectOption('library');
    await expect.poll(async () => (await rowOf(repos[0]!))?.fetchInterval).toBeUndefined();

    // Settings: transfers at once, kept by the host with the library (set back for the next specs)
    await page.getByRole('button', { name: 'Settings' }).click();
    const transfers = page.getByLabel('Transfers at once');
    await transfers.selectOption('3');
    await expect
      .poll(() => page.evaluate(() => window.sluice.invoke('library:settings')))
      .toMatchObject({ maxTransfers: 3 });
    await transfers.selectOption('2');
    await expect
      .poll(() => page.evaluate(() => window.sluice.invoke('library:settings')))
      .toMatchObject({ maxTransfers: 2 });
    await page.getByRole('button', { name: 'Done' }).click();
  });
});
