// Smoke test of the web host: the built renderer loads with the bridge, window.sluice speaks the
// SluiceApi (invoke, on, pathForFile), the host validates what it receives, and nothing is served
// without the token.
import { readFile } from 'node:fs/promises';
import { test, expect } from './fixtures';

// window.sluice is typed by src/preload/index.d.ts.

test('the page loads and window.sluice answers', async ({ sluicePage: page, webHost }) => {
  const shape = await page.evaluate(() => ({
    keys: Object.keys(window.sluice).sort(),
    frozen: Object.isFrozen(window.sluice),
    types: [typeof window.sluice.invoke, typeof window.sluice.on, typeof window.sluice.pathForFile],
  }));
  expect(shape).toEqual({ keys: ['invoke', 'on', 'pathForFile'], frozen: true, types: ['function', 'function', 'function'] });

  const info = await page.evaluate(() => window.sluice.invoke('app:info'));
  expect(info).toMatchObject({ host: 'web', platform: process.platform, defaultCloneDir: webHost.cloneDir });
  expect(await page.evaluate(() => window.sluice.invoke('job:list'))).toEqual([]);
  expect(await page.evaluate(() => window.sluice.invoke('dialog:pickDirectory'))).toBeNull();
});

test('the host refuses invalid calls with a code the UI understands', async ({ sluicePage: page }) => {
  const refused = await page.evaluate(async () => {
    const attempt = async (f: () => Promise<unknown>) => {
      try {
        await f();
        return null;
      } catch (e) {
        return { code: (e as { code?: string }).code, message: (e as Error).message };
      }
    };
    const api = window.sluice as unknown as { invoke(channel: string, ...args: unknown[]): Promise<unknown> };
    return {
      relative: await attempt(() => api.invoke('bundle:inspect', 'relative/x.hg')),
      scheme: await attempt(() => api.invoke('server:probe', 'file:///etc/passwd')),
      channel: await attempt(() => api.invoke('fs:readFile', '/etc/passwd')),
      shape: await attempt(() => api.invoke('job:start', { kind: 'apply', bundlePath: '/b.hg', dest: '/r', evil: true })),
    };
  });
  expect(refused.relative).toMatchObject({ code: 'USAGE', message: expect.stringContaining('not an absolute path') });
  expect(refused.scheme).toMatchObject({ code: 'USAGE', message: expect.stringContaining('only http and https') });
  expect(refused.channel).toMatchObject({ code: 'USAGE', message: expect.stringContaining('unknown channel') });
  expect(refused.shape).toMatchObject({ code: 'USAGE', message: expect.stringContaining('unknown field "evil"') });
});

test('pathForFile uploads a dropped file and returns its path on the host', async ({ sluicePage: page, webHost }) => {
  const path = await page.evaluate(() => window.sluice.pathForFile(new File([new Uint8Array([0x48, 0x47, 0x32, 0x30, 1, 2, 3])], 'dropped bundle.hg')));
  expect(path.startsWith(webHost.dataDir)).toBe(true);
  expect(path.endsWith('dropped bundle.hg')).toBe(true);
  expect([...(await readFile(path))]).toEqual([0x48, 0x47, 0x32, 0x30, 1, 2, 3]);
});

test('a bad or missing token is refused, for the page, its assets and the WebSocket', async ({ page, webHost, request }) => {
  const bad = await page.goto(`${webHost.origin}/?token=not-the-token`);
  expect(bad!.status()).toBe(403);
  expect(await page.evaluate(() => typeof (window as { sluice?: unknown }).sluice)).toBe('undefined');

  const noToken = await request.get(`${webHost.origin}/`, { failOnStatusCode: false });
  expect(noToken.status()).toBe(403);
  const bridge = await request.get(`${webHost.origin}/bridge.js`, { failOnStatusCode: false });
  expect(bridge.status()).toBe(403);
  expect(await bridge.text()).not.toContain(webHost.token);

  // A page of the same origin without the token cannot open the socket either.
  const socket = await page.evaluate(
    (origin) =>
      new Promise<string>((resolve) => {
        const ws = new WebSocket(`${origin.replace('http', 'ws')}/ws?token=wrong`);
        ws.onopen = () => resolve('open');
        ws.onerror = () => resolve('refused');
      }),
    webHost.origin,
  );
  expect(socket).toBe('refused');
});

test('responses carry the CSP, and the renderer runs under it without violations', async ({ page, webHost }) => {
  const violations: string[] = [];
  page.on('console', (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text());
  });
  const res = await page.goto(webHost.url);
  expect(res!.headers()['content-security-policy']).toContain("script-src 'self'");
  await page.waitForFunction(() => typeof (window as { sluice?: unknown }).sluice === 'object');
  await page.waitForLoadState('networkidle');
  expect(violations).toEqual([]);
});
