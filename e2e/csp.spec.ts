// The renderer's Content-Security-Policy has one definition, src/main/host/csp.ts: the build puts
// it into out/renderer/index.html (electron.vite.config.ts's csp-meta plugin) and the web host
// sends it as a header (Electron's session sets it too, src/main/index.ts).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { contentSecurityPolicy } from '../src/main/host/csp';
import { test, expect, PROJECT_ROOT } from './fixtures';

test("the built index.html carries csp.ts's policy, once", async ({ page }) => {
  const html = readFileSync(join(PROJECT_ROOT, 'out', 'renderer', 'index.html'), 'utf8');
  // parsed by the browser, so entities in the attribute are read as a browser reads them
  await page.setContent(html.replace(/<script\b[^>]*>[\s\S]*?<\/script>/g, ''));
  const policies = await page.$$eval('meta[http-equiv="Content-Security-Policy" i]', (metas) =>
    metas.map((m) => m.getAttribute('content')),
  );
  expect(policies).toEqual([contentSecurityPolicy({ forMeta: true })]);
});

test("the web host sends csp.ts's policy, and the app runs under it without a violation", async ({
  page,
  webHost,
}) => {
  const violations: string[] = [];
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
  });
  const res = await page.goto(webHost.url);
  expect(res?.headers()['content-security-policy']).toBe(contentSecurityPolicy());
  await page.waitForFunction(() => typeof (window as { sluice?: unknown }).sluice === 'object');
  await expect(page.getByRole('navigation')).toBeVisible();
  expect(violations).toEqual([]);
});
