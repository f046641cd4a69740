import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { uploadFileName, WebHost } from '../../../src/web-host/web-host';
import { InvokeFailure } from '../../../src/main/host/engine-host';
import type { PushMessage } from '../../../src/main/host/job-registry';
import type { HostToBridge } from '../../../src/web-host/bridge-protocol';

const TOKEN = 'test-token-0123456789';

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function http(
  port: number,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: Buffer } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method: options.method ?? 'GET', headers: options.headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString() }),
        );
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** The status a WebSocket upgrade gets: 101 when it opens. */
function upgradeStatus(url: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise<number>((resolve) => {
    const ws = new WebSocket(url, { headers });
    ws.on('unexpected-response', (_req, res) => resolve(res.statusCode!));
    ws.on('open', () => {
      ws.close();
      resolve(101);
    });
    ws.on('error', () => {});
  });
}

describe('WebHost', () => {
  let dir: string;
  let host: WebHost;
  let port: number;
  let pushListener: ((m: PushMessage) => void) | null;
  const calls: { channel: unknown; args: unknown }[] = [];

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-webhost-'));
    const rendererDir = join(dir, 'renderer');
    await mkdir(join(rendererDir, 'assets'), { recursive: true });
    await writeFile(
      join(rendererDir, 'index.html'),
      '<!doctype html><html><head><title>t</title><script type="module" src="./assets/app-abcdef12.js"></script></head><body></body></html>',
    );
    await writeFile(join(rendererDir, 'assets', 'app-abcdef12.js'), 'console.log("app")');
    await writeFile(join(dir, 'secret.txt'), 'secret');
    calls.length = 0;
    pushListener = null;
    host = new WebHost({
      engineHost: {
        invoke: async (channel, args) => {
          calls.push({ channel, args });
          if (channel === 'job:list') return [];
          if (channel === 'job:cancel')
            throw new InvokeFailure('USAGE', 'job:cancel jobId: expected an identifier');
          return undefined;
        },
        onPush: (listener) => {
          pushListener = listener;
          return () => (pushListener = null);
        },
      },
      rendererDir,
      bridgeScript: 'window.bridgeLoaded = true;',
      uploadDir: join(dir, 'uploads'),
      maxUploadBytes: 1000,
      token: TOKEN,
    });
    ({ port } = await host.listen(0));
  });

  afterEach(async () => {
    await host.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses every HTTP request without the token', async () => {
    for (const path of [
      '/',
      '/index.html',
      '/bridge.js',
      '/assets/app-abcdef12.js',
      '/?token=wrong',
      '/?token=',
    ]) {
      const r = await http(port, path);
      expect(r.status, path).toBe(403);
      expect(r.body).not.toContain('app');
    }
  });

  it('serves the page with the bridge injected first, then assets by cookie', async () => {
    const page = await http(port, `/?token=${TOKEN}`);
    expect(page.status).toBe(200);
    expect(page.body).toMatch(
      new RegExp(`<head>\\s*<script src="\\./bridge\\.js\\?token=${TOKEN}"></script>`),
    );
    expect(page.headers['content-security-policy']).toMatch(/script-src 'self';/);
    expect(page.headers['referrer-policy']).toBe('no-referrer');
    const cookie = String(page.headers['set-cookie']).split(';')[0]!;
    expect(cookie).toMatch(new RegExp(`^sluice-assets-${port}=[A-Za-z0-9_-]{43}$`));
    expect(String(page.headers['set-cookie'])).toMatch(/HttpOnly; SameSite=Strict/);

    const asset = await http(port, '/assets/app-abcdef12.js', { headers: { cookie } });
    expect(asset.status).toBe(200);
    expect(asset.body).toBe('console.log("app")');
    expect(asset.headers['content-type']).toMatch(/text\/javascript/);

    const bridge = await http(port, `/bridge.js?token=${TOKEN}`);
    expect(bridge.body).toBe(
      `self.__sluiceBridgeConfig = {"token":"${TOKEN}"};\nwindow.bridgeLoaded = true;`,
    );

    expect(
      (await http(port, '/assets/app-abcdef12.js', { headers: { cookie: `sluice-assets-${port}=nope` } }))
        .status,
    ).toBe(403);
    expect((await http(port, '/missing.js', { headers: { cookie } })).status).toBe(404);
  });

  // Cookies ignore ports: the browser hands the cookie to every server on 127.0.0.1 it visits (and a
  // page of another local port makes same-site requests with it), so it must not be the token.
  it("the page's cookie admits the renderer's files only: not the token, the bridge, the socket", async () => {
    const page = await http(port, `/?token=${TOKEN}`);
    const cookie = String(page.headers['set-cookie']).split(';')[0]!;
    expect(cookie).not.toContain(TOKEN);
    expect((await http(port, '/assets/app-abcdef12.js', { headers: { cookie } })).status).toBe(200);
    for (const path of [
      '/',
      '/index.html',
      '/bridge.js',
      `/open?url=${encodeURIComponent('https://h/r')}`,
      '/download/log?job=j1&name=x.log',
    ]) {
      const r = await http(port, path, { headers: { cookie } });
      // the page: 403 with how to get in; the rest is no file of the renderer's
      expect(r.status, path).toBe(path.startsWith('/index') || path === '/' ? 403 : 404);
      expect(r.body, path).not.toContain(TOKEN);
      expect(r.body, path).not.toContain('bridgeLoaded');
    }
    const origin = `http://127.0.0.1:${port}`;
    expect(await upgradeStatus(`ws://127.0.0.1:${port}/ws`, { cookie, origin })).toBe(403);
    expect(await upgradeStatus(`ws://127.0.0.1:${port}/ws?token=${TOKEN}`, { origin })).toBe(101);
  });

  it('does not serve files outside the renderer', async () => {
    for (const path of ['/../secret.txt', '/%2e%2e/secret.txt', '/assets/..%2f..%2fsecret.txt', '/%00']) {
      const r = await http(port, `${path}?token=${TOKEN}`);
      expect([400, 403, 404], path).toContain(r.status);
      expect(r.body).not.toContain('secret');
    }
  });

  it('refuses a foreign Host header (DNS rebinding)', async () => {
    const r = await http(port, `/?token=${TOKEN}`, { headers: { host: `evil.example:${port}` } });
    expect(r.status).toBe(403);
  });

  it('bridges invokes and pushes over the WebSocket, and refuses sockets without the token or from another origin', async () => {
    const refused = upgradeStatus;
    expect(await refused(`ws://127.0.0.1:${port}/ws`)).toBe(403);
    expect(await refused(`ws://127.0.0.1:${port}/ws?token=wrong`)).toBe(403);
    expect(
      await refused(`ws://127.0.0.1:${port}/ws?token=${TOKEN}`, { origin: 'https://evil.example' }),
    ).toBe(403);

    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws?token=${TOKEN}`, {
      headers: { origin: `http://127.0.0.1:${port}` },
    });
    const received: HostToBridge[] = [];
    ws.on('message', (d) => received.push(JSON.parse(d.toString()) as HostToBridge));
    await new Promise((r) => ws.on('open', r));
    ws.send(JSON.stringify({ t: 'invoke', id: 1, channel: 'job:list', args: [] }));
    ws.send(JSON.stringify({ t: 'invoke', id: 2, channel: 'job:cancel', args: ['../x'] }));
    await expect.poll(() => received.length).toBe(2);
    expect(received).toContainEqual({ t: 'result', id: 1, ok: true, value: [] });
    expect(received).toContainEqual({
      t: 'result',
      id: 2,
      ok: false,
      error: { code: 'USAGE', message: 'job:cancel jobId: expected an identifier' },
    });
    expect(calls).toContainEqual({ channel: 'job:cancel', args: ['../x'] });

    pushListener!({ channel: 'bundle:opened', payload: { path: '/x.hg' } });
    await expect.poll(() => received.length).toBe(3);
    expect(received[2]).toEqual({ t: 'push', channel: 'bundle:opened', payload: { path: '/x.hg' } });

    // Garbage closes the socket instead of reaching the engine host.
    const closed = new Promise<number>((r) => ws.on('close', (code) => r(code)));
    ws.send('not json');
    expect(await closed).toBe(1007);
  });

  it('/open checks the link and hands it, once, to the page it redirects to', async () => {
    const open = async (query: string, headers: Record<string, string> = {}) =>
      http(port, `/open?${query}`, { headers });
    // the same token check as every route
    expect((await open('url=https%3A%2F%2Fh%2Fr')).status).toBe(403);
    expect((await open('token=wrong&url=https%3A%2F%2Fh%2Fr')).status).toBe(403);

    const linkOf = async (location: string) => {
      const id = /#open=([A-Za-z0-9_-]+)$/.exec(location)![1]!;
      const ws = new WebSocket(`ws://127.0.0.1:${port}/ws?token=${TOKEN}&open=${id}`);
      const first = new Promise<HostToBridge>((r) => ws.once('message', (d) => r(JSON.parse(d.toString()))));
      await new Promise((r) => ws.on('open', r));
      // an id not taken yet gives its push at connect; a second page with it gets nothing
      ws.send(JSON.stringify({ t: 'invoke', id: 9, channel: 'job:list', args: [] }));
      const message = await first;
      ws.close();
      return message;
    };

    const good = await open(
      `token=${TOKEN}&url=${encodeURIComponent('http://127.0.0.1:8000/repo')}&rev=stable&dest=%2Ftmp%2Fr`,
    );
    expect(good.status).toBe(303);
    expect(good.headers.location).toMatch(new RegExp(`^/\\?token=${TOKEN}#open=[A-Za-z0-9_-]{22}$`));
    expect(good.headers['referrer-policy']).toBe('no-referrer');
    expect(await linkOf(good.headers.location as string)).toEqual({
      t: 'push',
      channel: 'link:opened',
      payload: {
        ok: true,
        link: { kind: 'clone', url: 'http://127.0.0.1:8000/repo', dest: '/tmp/r', rev: 'stable' },
      },
    });
    // used once: the same id a second time is an ordinary connection
    expect(await linkOf(good.headers.location as string)).toEqual({
      t: 'result',
      id: 9,
      ok: true,
      value: [],
    });

    // a hostile link opens the app with the reason, never the link
    const hostile = await open(`token=${TOKEN}&url=${encodeURIComponent('javascript:alert(1)')}`);
    expect(hostile.headers.location).toMatch(/^\/\?token=[^#]+#open=/);
    expect(await linkOf(hostile.headers.location as string)).toEqual({
      t: 'push',
      channel: 'link:opened',
      payload: { ok: false, reason: 'a link may not name a javascript: source' },
    });
    const control = await open(`token=${TOKEN}&url=${encodeURIComponent('https://h/r\u0007')}`);
    expect(await linkOf(control.headers.location as string)).toMatchObject({
      payload: { ok: false, reason: 'url holds control characters' },
    });
  });

  it('uploads dropped files to a temporary file, with the token header and a size limit', async () => {
    const body = Buffer.from('HG20 bundle bytes');
    const noHeader = await http(port, `/upload?name=x.hg&token=${TOKEN}`, {
      method: 'PUT',
      body,
    });
    expect(noHeader.status).toBe(403);

    const ok = await http(port, `/upload?name=${encodeURIComponent('../../my bundle.hg')}`, {
      method: 'PUT',
      headers: { 'x-sluice-token': TOKEN },
      body,
    });
    expect(ok.status).toBe(200);
    const { path, size } = JSON.parse(ok.body) as { path: string; size: number };
    expect(size).toBe(body.length);
    expect(path.startsWith(join(dir, 'uploads'))).toBe(true);
    expect(path.endsWith('my bundle.hg')).toBe(true);
    expect(await readFile(path)).toEqual(body);

    const big = await http(port, '/upload?name=big.hg', {
      method: 'PUT',
      headers: { 'x-sluice-token': TOKEN },
      body: Buffer.alloc(2000),
    });
    expect(big.status).toBe(413);
    // Only the first upload's directory is left.
    expect(await readdir(join(dir, 'uploads'))).toHaveLength(1);
    // the user's bundles are no other local user's business
    if (process.platform !== 'win32') expect((await stat(join(dir, 'uploads'))).mode & 0o777).toBe(0o700);
  });
});

describe('uploadFileName', () => {
  it('keeps a plain name and strips directories and odd characters', () => {
    expect(uploadFileName('repo.hg')).toBe('repo.hg');
    expect(uploadFileName('C:\\Users\\me\\repo.hg')).toBe('repo.hg');
    expect(uploadFileName('../../etc/passwd')).toBe('passwd');
    expect(uploadFileName('..')).toBe('upload.hg');
    expect(uploadFileName('a<b>:c?.hg')).toBe('a_b__c_.hg');
    expect(uploadFileName(null)).toBe('upload.hg');
  });
});
