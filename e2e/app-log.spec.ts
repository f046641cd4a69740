// A finished job's debug log is complete (every file listed) although the renderer never received
// one message per file: the host keeps the log and the page fetches what it shows. Counted on the
// page's WebSocket, the bridge every push and reply crosses. The log and the job's numbers are
// still there after a reload.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, expect } from './fixtures';
import { packed1Header } from '../src/main/engine/format/packed1';

const FILES = 3000;

interface BridgeStats {
  messages: number;
  jobEvents: number;
  fileEntries: number;
}

/** Counts what the bridge delivers to the page; installed before the bridge script runs. */
function countBridge(): void {
  const Native = window.WebSocket;
  const stats = { messages: 0, jobEvents: 0, fileEntries: 0 };
  (window as unknown as { __bridgeStats: BridgeStats }).__bridgeStats = stats;
  window.WebSocket = class extends Native {
    constructor(...args: ConstructorParameters<typeof WebSocket>) {
      super(...args);
      this.addEventListener('message', (ev) => {
        stats.messages++;
        const m = JSON.parse(String(ev.data));
        if (m.t === 'push' && m.channel === 'job:events') {
          stats.jobEvents++;
          for (const e of m.payload.events) if (e.type === 'files') stats.fileEntries += e.entries.length;
        }
      });
    }
  };
}

test("a finished job's debug log lists every file; the renderer got no message per file", async ({
  page,
  webHost,
  tempDir,
}) => {
  const parts: Buffer[] = [];
  let bytes = 0;
  for (let i = 0; i < FILES; i++) {
    const data = Buffer.alloc(32 + (i % 64), i % 251);
    parts.push(Buffer.from(`data/dir${i % 7}/file${i}.i\0${data.length}\n`, 'latin1'), data);
    bytes += data.length;
  }
  const bundle = join(tempDir, 'many.hg');
  await writeFile(
    bundle,
    Buffer.concat([packed1Header(FILES, bytes, ['generaldelta', 'revlogv1']), ...parts]),
  );
  const dest = join(tempDir, 'many-files');

  await page.addInitScript(countBridge);
  await page.goto(webHost.url);
  await page.getByRole('button', { name: 'Apply bundle…' }).first().click();
  const open = page.getByRole('dialog', { name: 'Apply a stream bundle' });
  await open.getByLabel('Bundle file').fill(bundle);
  await open.getByRole('button', { name: 'Continue' }).click();
  const dialog = page.getByRole('dialog', { name: 'Apply stream bundle' });
  await dialog.getByLabel('New repository folder').fill(dest);
  const before = await page.evaluate(() => ({
    ...(window as unknown as { __bridgeStats: BridgeStats }).__bridgeStats,
  }));
  await dialog.getByRole('button', { name: 'Apply bundle' }).click();
  const row = page.getByTestId('transfer').filter({ hasText: 'many-files' });
  await expect(row).toHaveAttribute('data-state', 'done', { timeout: 45_000 });
  const after = await page.evaluate(() => ({
    ...(window as unknown as { __bridgeStats: BridgeStats }).__bridgeStats,
  }));

  // no file entry crossed, and far fewer messages than files (batched, ~20/s at most)
  expect(after.fileEntries - before.fileEntries).toBe(0);
  const messages = after.messages - before.messages;
  expect(messages).toBeLessThan(FILES / 20);
  console.log(
    `bridge: ${messages} messages (${after.jobEvents - before.jobEvents} job:events) for ${FILES} files`,
  );

  // the log view shows the host's whole log: the announcement, two phases, every file, the footer
  await row.getByRole('button', { name: /Show log/ }).click();
  const view = page.getByTestId('logview');
  await expect.poll(async () => Number(await view.getAttribute('data-total'))).toBe(FILES + 4);
  await expect(view).toContainText(`${FILES} files to transfer`);
  await page.getByLabel('Filter lines').fill('file2999.i');
  await expect(page.getByTestId('log-count')).toHaveText(/^1 of 3,004 lines$/);
  await expect(view).toContainText('adding [s] data/dir3/file2999.i (');
  // the match keeps its number in the whole log (after the announcement and the phase line)
  await expect(view.locator('.log-number').first()).toHaveText(/^30\d\d$/);
  await page.getByLabel('Filter lines').fill('');

  // the export is the host's copy, downloaded by the browser (not saved on the host): every file, once
  const download = page.waitForEvent('download');
  await page.getByRole('button', { name: 'Export…' }).click();
  const file = await download;
  expect(file.suggestedFilename()).toBe('many-files-debug.log');
  const exported = await readFile((await file.path())!, 'utf8');
  const lines = exported.trimEnd().split('\n');
  expect(lines[0]).toMatch(/^# Sluice apply/);
  const adding = lines.filter((l) => l.startsWith('adding [s] '));
  expect(adding).toHaveLength(FILES);
  expect(new Set(adding.map((l) => /file(\d+)\.i/.exec(l)![1])).size).toBe(FILES);
  expect(lines.at(-1)).toMatch(/^transferred .* seconds/);

  // a reload: the finished job keeps its numbers and its log
  await page.reload();
  const again = page.getByTestId('transfer').filter({ hasText: 'many-files' });
  await expect(again).toHaveAttribute('data-state', 'done');
  await expect(again).toContainText(FILES.toLocaleString('en-US'));
  await again.getByRole('button', { name: /Show log/ }).click();
  await expect
    .poll(async () => Number(await page.getByTestId('logview').getAttribute('data-total')))
    .toBe(FILES + 4);
});
