// The app shell at 1280x800 in the web host: no screen scrolls the window (only the main area
// scrolls), History fits, and every throughput sparkline stays inside its box.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Page } from '@playwright/test';
import {
  expect,
  makeTempDir,
  SAMPLE_BUNDLE,
  startWebHost,
  test,
  type TempDir,
  type WebHostHandle,
} from './fixtures';
import { expectTransferState, SLOW_CLOSES } from './ui-helpers';

const SCREENS = ['Transfers', 'Repositories', 'Comparisons', 'History'] as const;

/** History as an app from before job-relative samples saved it: samples restart per phase. */
function seededHistory(cloneDir: string) {
  const now = Date.now();
  const request = {
    kind: 'clone',
    url: 'https://hg.example.org/a/very/long/path/to/a/repository',
    dest: join(cloneDir, 'x'.repeat(120)),
  };
  return {
    version: 1,
    records: [
      {
        jobId: 'seed-clone',
        request,
        label: `A clone with a long label ${'y'.repeat(80)}`,
        state: 'failed',
        startedAt: now - 60_000,
        endedAt: now - 50_000,
        error: { code: 'NETWORK', message: `connect ECONNREFUSED ${'z'.repeat(200)}` },
        samples: [
          [200, 10_000],
          [5000, 90_000],
          [9000, 80_000],
          [100, 40_000],
          [350, 30_000],
        ],
      },
    ],
  };
}

let root: TempDir;
let host: WebHostHandle;

test.beforeAll(async () => {
  root = await makeTempDir('sluice-e2e-layout-');
  await mkdir(join(root.path, 'data'), { recursive: true });
  await writeFile(
    join(root.path, 'data', 'history.json'),
    JSON.stringify(seededHistory(join(root.path, 'clones'))),
  );
  host = await startWebHost({ root: root.path });
});

test.afterAll(async () => {
  await host?.stop();
  await root?.remove();
});

async function shellScrolls(page: Page): Promise<{ scrollHeight: number; innerHeight: number }> {
  return page.evaluate(() => ({
    scrollHeight: document.scrollingElement!.scrollHeight,
    innerHeight: window.innerHeight,
  }));
}

/** Every sparkline's points, with the box its viewBox makes. */
async function sparklinePoints(page: Page) {
  return page.locator('svg.sparkline').evaluateAll((svgs) =>
    svgs.map((svg) => {
      const [, , w, h] = svg.getAttribute('viewBox')!.split(' ').map(Number);
      const pts = (svg.querySelector('polyline')?.getAttribute('points') ?? '')
        .trim()
        .split(/\s+/)
        .filter(Boolean)
        .map((p) => p.split(',').map(Number) as [number, number]);
      return { w: w!, h: h!, pts };
    }),
  );
}

function expectInsideBox(lines: { w: number; h: number; pts: [number, number][] }[], minDrawn: number) {
  const drawn = lines.filter((l) => l.pts.length > 0);
  expect(drawn.length).toBeGreaterThanOrEqual(minDrawn);
  for (const { w, h, pts } of drawn)
    for (const [x, y] of pts) {
      expect(x).toBeGreaterThanOrEqual(0);
      expect(x).toBeLessThanOrEqual(w);
      expect(y).toBeGreaterThanOrEqual(0);
      expect(y).toBeLessThanOrEqual(h);
    }
}

test('no screen scrolls the app shell, History fits 1280 px, sparklines stay in their box', async ({
  page,
}) => {
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto(host.url);
  // a job with two phases of progress: a clone with slow closes, then its checkout
  const sample = await page.evaluate(() => window.sluice.invoke('sample:get'));
  await page.evaluate(
    ([url, dest, closer]) =>
      window.sluice.invoke('job:start', {
        kind: 'clone',
        url,
        dest,
        closer,
      }),
    [sample.url, join(host.cloneDir, 'slow'), SLOW_CLOSES] as const,
  );
  const row = page.getByTestId('transfer').filter({ hasText: 'slow' });
  await expectTransferState(row, 'done');
  // its transfer and then its checkout, whose progress counts elapsed time from its own start
  expectInsideBox(await sparklinePoints(page), 1);

  // a comparison with results: its table has the visually hidden caption
  await page.getByRole('button', { name: 'Comparisons' }).click();
  await page.getByLabel('Bundle file').fill(SAMPLE_BUNDLE);
  await page.getByRole('button', { name: 'Run comparison' }).click();
  await expect(page.getByRole('button', { name: 'Run comparison' })).toBeEnabled({ timeout: 45_000 });
  await expect(page.locator('table caption')).toHaveCount(1, { timeout: 10_000 });

  for (const name of SCREENS) {
    await page.getByRole('button', { name, exact: true }).first().click();
    await expect(page.getByRole('heading', { level: 1, name })).toBeVisible();
    // to the end of the screen, as a user scrolls to the last result
    await page.locator('.app-main').evaluate((el) => el.scrollTo(0, el.scrollHeight));
    const m = await shellScrolls(page);
    expect(m.scrollHeight, `${name}: the window scrolls`).toBeLessThanOrEqual(m.innerHeight);
  }

  // History (still shown): no horizontal scrolling to reach the actions, and the seeded record's
  // sparkline (samples that restart per phase) inside its box
  const main = await page.locator('.app-main').evaluate((el) => ({ sw: el.scrollWidth, cw: el.clientWidth }));
  expect(main.sw).toBeLessThanOrEqual(main.cw);
  const table = await page
    .getByTestId('history-table')
    .evaluate((el) => ({ right: el.getBoundingClientRect().right, width: window.innerWidth }));
  expect(table.right).toBeLessThanOrEqual(table.width);
  await expect(page.getByRole('button', { name: /Run .* again/ }).first()).toBeInViewport();
  expectInsideBox(await sparklinePoints(page), 1);
});
