// The web host against another page in the same browser: a server on another 127.0.0.1 port (the
// same site for cookies, another origin for everything else), visited after the app was opened.
// Cookies ignore ports, so whatever cookie the app's page got is sent there: it must not be the
// token. The hostile page then tries what a page can: read the bridge script (it holds the token),
// include it as a script, open the WebSocket, upload, and open the app with a link.
import { readdir } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { test, expect } from './fixtures';

interface HostilePage {
  origin: string;
  cookies: string[];
  close(): Promise<void>;
}

async function hostileServer(): Promise<HostilePage> {
  const cookies: string[] = [];
  const server: Server = createServer((req: IncomingMessage, res) => {
    if (req.headers.cookie) cookies.push(req.headers.cookie);
    res.writeHead(200, { 'Content-Type': 'text/html' });
    res.end('<!doctype html><title>elsewhere</title><p>another local page</p>');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    cookies,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

test('a page on another 127.0.0.1 port gets neither the token nor the bridge', async ({
  context,
  sluicePage,
  webHost,
}) => {
  const hostile = await hostileServer();
  try {
    // the app's page set its cookie; the browser now visits the other local server
    await expect(sluicePage.locator('.app')).toBeVisible();
    expect((await context.cookies(webHost.origin)).length).toBeGreaterThan(0);
    // the host is shared with other specs, whose uploads may already be there
    const uploads = async () =>
      (await readdir(join(webHost.dataDir, 'uploads')).catch(() => [] as string[])).sort();
    const uploadsBefore = await uploads();
    const page = await context.newPage();
    await page.goto(`${hostile.origin}/`);
    expect(hostile.cookies.length).toBeGreaterThan(0);
    for (const header of hostile.cookies) expect(header).not.toContain(webHost.token);

    const attempts = await page.evaluate(async (app) => {
      const outcome = async (f: () => Promise<string>) => f().catch((e: Error) => `error: ${e.name}`);
      // a CORS read of the bridge script (it holds the token)
      const read = await outcome(async () =>
        (await fetch(`${app}/bridge.js`, { credentials: 'include' })).text(),
      );
      // the same as a classic script (cross-origin script inclusion)
      const included = await new Promise<string>((resolve) => {
        const s = document.createElement('script');
        s.src = `${app}/bridge.js`;
        s.onload = () => resolve('loaded');
        s.onerror = () => resolve('refused');
        document.head.append(s);
      });
      const w = window as { sluice?: unknown; __sluiceBridgeConfig?: unknown };
      const socket = await new Promise<string>((resolve) => {
        const ws = new WebSocket(`${app.replace('http', 'ws')}/ws`);
        ws.onopen = () => resolve('open');
        ws.onerror = () => resolve('refused');
      });
      // an upload as a simple request (no preflight: POST, no header), then with a guessed header
      const simple = await outcome(async () =>
        String(
          (await fetch(`${app}/upload?name=x.hg`, { method: 'POST', mode: 'no-cors', body: 'HG20' })).type,
        ),
      );
      const guessed = await outcome(async () =>
        String(
          (
            await fetch(`${app}/upload?name=y.hg`, {
              method: 'PUT',
              headers: { 'X-Sluice-Token': 'guess' },
              body: 'HG20',
            })
          ).status,
        ),
      );
      return {
        read,
        included,
        sluice: typeof w.sluice,
        config: typeof w.__sluiceBridgeConfig,
        socket,
        simple,
        guessed,
      };
    }, webHost.origin);
    expect(attempts).toEqual({
      read: 'error: TypeError',
      included: 'refused',
      sluice: 'undefined',
      config: 'undefined',
      socket: 'refused',
      // sent, but refused (405), and its reply blocked by Cross-Origin-Resource-Policy
      simple: 'error: TypeError',
      guessed: 'error: TypeError',
    });
    // nothing was uploaded
    expect(await uploads()).toEqual(uploadsBefore);

    // a link from that page, with the cookie but without the token, does not open the app
    const link = await page.goto(`${webHost.origin}/open?url=${encodeURIComponent('https://h/r')}`);
    expect(link!.status()).toBe(404);
    expect(await page.evaluate(() => typeof (window as { sluice?: unknown }).sluice)).toBe('undefined');
  } finally {
    await hostile.close();
  }
});
