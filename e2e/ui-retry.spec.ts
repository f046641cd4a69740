// A clone through a clone bundle whose server drops the connection: the transfer row counts down
// to the engine's next attempt ("Connection lost — retrying in N s (attempt a of m)") with what was
// kept, then the clone resumes from there and hg verify accepts the result.
import { createReadStream } from 'node:fs';
import { stat, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { missing, skipNote } from '../test/support/env';
import { test, expect, repoFromFixture, startHgServe, type HgServe } from './fixtures';
import { expectTransferState, hgVerify, openCloneDialog, screenshot, transferRow } from './ui-helpers';

/**
 * Serves one file with Range and an ETag. The first response is cut after `cutAt` bytes; then
 * every connection is dropped at once until `allow()`, so the engine's waits grow and show.
 */
async function startDroppingServer(file: string, cutAt: number) {
  const size = (await stat(file)).size;
  let requests = 0;
  let allowed = false;
  const server = http.createServer((req, res) => {
    requests++;
    if (requests > 1 && !allowed) {
      req.socket.destroy();
      return;
    }
    const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    const start = m ? Number(m[1]) : 0;
    const headers = {
      'Content-Type': 'application/octet-stream',
      ETag: '"bundle-1"',
      'Accept-Ranges': 'bytes',
    };
    if (m) {
      res.writeHead(206, { ...headers, 'Content-Range': `bytes ${start}-${size - 1}/${size}` });
    } else res.writeHead(200, { ...headers, 'Content-Length': String(size) });
    const end = requests === 1 ? cutAt - 1 : size - 1;
    const body = createReadStream(file, { start, end });
    body.pipe(res, { end: false });
    body.on('end', () => (requests === 1 ? req.socket.destroy() : res.end()));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/full.hg`,
    size,
    allow: () => void (allowed = true),
    stop: () => new Promise<void>((r) => server.close(() => r())),
  };
}

test.describe(`clone bundle download that loses its connection${skipNote('hg')}`, () => {
  test.skip(missing('hg'), 'hg is not installed: the repository is served by `hg serve`');

  let server: HgServe | undefined;
  let bundles: Awaited<ReturnType<typeof startDroppingServer>> | undefined;
  test.afterEach(async () => {
    await bundles?.stop();
    await server?.stop();
    server = bundles = undefined;
  });

  test('shows the retry countdown, then resumes and finishes', async ({ sluicePage: page, tempDir }) => {
    const repo = await repoFromFixture(tempDir);
    const file = join(tempDir, 'full.hg');
    const made = spawnSync('hg', ['-R', repo, 'debugcreatestreamclonebundle', file], {
      env: { ...process.env, HGPLAIN: '1', HGRCPATH: '' },
      encoding: 'utf8',
    });
    expect(made.status, made.stderr).toBe(0);
    const size = (await stat(file)).size;
    bundles = await startDroppingServer(file, Math.floor(size / 2));
    await writeFile(join(repo, '.hg', 'clonebundles.manifest'), `${bundles.url} BUNDLESPEC=none-packed1\n`);
    server = await startHgServe(repo, ['extensions.clonebundles=']);
    const dest = join(tempDir, 'cloned');

    const dialog = await openCloneDialog(page, server.url, dest);
    await dialog.getByRole('button', { name: 'Clone', exact: true }).click();
    const row = transferRow(page, dest);
    const countdown = row.getByTestId('retry-countdown');
    // the waits double (0.5 s, 1 s, 2 s…): by the third the countdown shows whole seconds
    await expect(countdown).toHaveText(/Connection lost — retrying in \d+ s \(attempt [3-8] of 8\)/, {
      timeout: 30_000,
    });
    await expect(row.getByTestId('retry-kept')).toHaveText(/^kept so far: .+ of .+$/);
    await screenshot(page, 'transfer-retry-countdown');
    bundles.allow();
    await expectTransferState(row, 'done');
    await expect(row.getByTestId('retry-banner')).toHaveCount(0);
    const verify = hgVerify(dest);
    expect(verify.output).toMatch(/checked \d+ changesets/);
    expect(verify.status).toBe(0);
  });
});
