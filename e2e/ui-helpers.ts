// Helpers for the UI specs (e2e/ui-*.spec.ts): screenshots, a real drop of file bytes, a
// throttling proxy that makes a clone from `hg serve` slow enough to cancel mid-transfer, a
// packed1 bundle with a requirement nobody supports, and `hg verify`.
import { spawnSync } from 'node:child_process';
import { mkdir, readFile } from 'node:fs/promises';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { expect, type Locator, type Page } from '@playwright/test';
import { PROJECT_ROOT } from './fixtures';

export const SCREENSHOT_DIR = join(PROJECT_ROOT, 'test-results', 'screenshots');

/** Saves test-results/screenshots/<name>-<theme>.png (theme = what the page resolved). */
export async function screenshot(page: Page, name: string): Promise<string> {
  await mkdir(SCREENSHOT_DIR, { recursive: true });
  const theme = await page.evaluate(() => document.documentElement.dataset.theme ?? 'light');
  const path = join(SCREENSHOT_DIR, `${name}-${theme}.png`);
  await settled(page);
  await page.screenshot({ path, animations: 'disabled' });
  return path;
}

/** Waits until the page has drawn two more frames (a style change made before it is painted). */
export async function settled(page: Page): Promise<void> {
  await page.evaluate(
    () => new Promise<void>((r) => requestAnimationFrame(() => requestAnimationFrame(() => r()))),
  );
}

/** Drops a file with these bytes on the window, as the OS would: dragenter, dragover, drop. */
export async function dropFile(page: Page, name: string, bytes: Uint8Array): Promise<void> {
  await page.evaluate(
    ({ name, b64 }) => {
      const raw = atob(b64);
      const data = new Uint8Array(raw.length);
      for (let i = 0; i < raw.length; i++) data[i] = raw.charCodeAt(i);
      const dt = new DataTransfer();
      dt.items.add(new File([data], name, { type: 'application/octet-stream' }));
      for (const type of ['dragenter', 'dragover', 'drop']) {
        document.body.dispatchEvent(
          new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }),
        );
      }
    },
    { name, b64: Buffer.from(bytes).toString('base64') },
  );
}

export interface ThrottleProxy {
  url: string;
  stop(): Promise<void>;
}

/** An HTTP proxy on 127.0.0.1 to `target` whose response bodies flow at `bytesPerSec`. */
export async function startThrottleProxy(target: string, bytesPerSec: number): Promise<ThrottleProxy> {
  const t = new URL(target);
  const server: Server = createServer((req, res) => {
    const upstream = httpRequest(
      {
        host: t.hostname,
        port: t.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: t.host },
      },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        const chunk = Math.max(512, Math.floor(bytesPerSec / 8));
        let queue: Buffer[] = [];
        let ended = false;
        let timer: ReturnType<typeof setInterval> | null = null;
        const pump = () => {
          let budget = chunk;
          while (budget > 0 && queue.length) {
            const head = queue[0]!;
            if (head.length <= budget) {
              res.write(head);
              budget -= head.length;
              queue.shift();
            } else {
              res.write(head.subarray(0, budget));
              queue[0] = head.subarray(budget);
              budget = 0;
            }
          }
          if (!queue.length && ended) {
            clearInterval(timer!);
            res.end();
          }
        };
        timer = setInterval(pump, 125);
        up.on('data', (d: Buffer) => queue.push(d));
        up.on('end', () => (ended = true));
        res.on('close', () => {
          clearInterval(timer!);
          queue = [];
          up.destroy();
        });
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}${t.pathname}`,
    stop: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** A copy of a packed1 bundle whose requirements also name `extra` (which no Mercurial supports). */
export async function packed1WithRequirement(src: string, extra: string): Promise<Buffer> {
  const buf = await readFile(src);
  expect(buf.subarray(0, 4).toString('latin1')).toBe('HGS1');
  const reqLen = buf.readUInt16BE(22);
  const reqs = buf
    .subarray(24, 24 + reqLen - 1)
    .toString('latin1')
    .split(',');
  const field = Buffer.from(`${[...reqs, extra].sort().join(',')}\0`, 'latin1');
  const len = Buffer.alloc(2);
  len.writeUInt16BE(field.length);
  return Buffer.concat([buf.subarray(0, 22), len, field, buf.subarray(24 + reqLen)]);
}

/** `hg verify` of a repository (0 = sound). */
export function hgVerify(repo: string): { status: number | null; output: string } {
  const r = spawnSync('hg', ['verify', '-R', repo], {
    env: { ...process.env, HGPLAIN: '1', HGRCPATH: '' },
    encoding: 'utf8',
  });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

/** Opens the "Clone from URL" dialog and fills in the URL, and the destination when given. */
export async function openCloneDialog(page: Page, url: string, dest?: string): Promise<Locator> {
  await page.getByRole('button', { name: 'Clone from URL…' }).first().click();
  const dialog = page.getByRole('dialog', { name: 'Clone from URL' });
  await dialog.getByLabel('Repository URL').fill(url);
  if (dest !== undefined) await dialog.getByLabel('Destination folder').fill(dest);
  return dialog;
}

/** The transfer row whose route mentions `text` (a destination, a URL). */
export function transferRow(page: Page, text: string): Locator {
  return page.getByTestId('transfer').filter({ hasText: text });
}

/** Fails with the row's own error text when the job ends in another state. */
export async function expectTransferState(
  row: Locator,
  state: 'done' | 'failed' | 'cancelled',
  timeout = 45_000,
): Promise<void> {
  await expect
    .poll(
      async () => {
        const s = await row.getAttribute('data-state');
        if (s !== state && (s === 'failed' || s === 'done' || s === 'cancelled'))
          return `${s}: ${(await row.textContent())?.slice(0, 400)}`;
        return s;
      },
      { timeout },
    )
    .toBe(state);
}

/**
 * Closes made slow (100 ms each) on one background thread with a queue of one: the writer waits
 * for each close without blocking the engine's event loop, so progress flows while it writes.
 */
export const SLOW_CLOSES = {
  backgroundClose: 'on',
  closeThreads: 1,
  maxQueue: 1,
  minFileCount: 0,
  simulateCloseMs: 100,
} as const;
