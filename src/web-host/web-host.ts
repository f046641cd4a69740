// The web host: where no Electron binary exists, the same built renderer is served on
// http://127.0.0.1:PORT and window.sluice is bridged over a loopback WebSocket to the same
// EngineHost Electron main uses. Only this machine's user should reach it, so:
//  - it listens on 127.0.0.1 only;
//  - every HTTP request and the WebSocket upgrade need the random token printed at start, in the
//    URL's ?token= (the page, the bridge script, /open, /download/log, the socket) or, for uploads,
//    a header a cross-site page cannot send without a preflight this server never grants. The
//    module scripts, styles and fonts the page loads cannot carry a query, so an HttpOnly
//    SameSite=Strict cookie admits those files of the built renderer, and nothing else: cookies
//    ignore ports, so the browser also sends it to any other server on 127.0.0.1 it visits, and it
//    must not be worth anything there;
//  - the Host header must name the loopback address (DNS rebinding), a WebSocket Origin must be
//    this server's own;
//  - responses carry the renderer's CSP, no-referrer (keeps the token out of Referer) and nosniff.
// `/open?url=…[&dest=…&rev=…]` (token as everywhere) is the web host's sluice://clone link: the
// host checks it with deep-link.ts, keeps the result under a one-time id and redirects to the app
// with `#open=<id>`; that page's bridge names the id when it connects and receives the checked link
// (or the refusal) as a `link:opened` push, so nothing a page puts in the URL reaches the renderer
// unchecked.

import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readFile, rm, stat } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { basename, extname, join, resolve, sep } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { WebSocketServer, type WebSocket } from 'ws';
import { contentSecurityPolicy } from '../main/host/csp';
import { parseCloneQuery, type DeepLinkResult } from '../main/host/deep-link';
import { toInvokeFailure, type EngineHost } from '../main/host/engine-host';
import type { PushMessage } from '../main/host/job-registry';
import { validateInvoke } from '../main/host/validate';
import type { BridgeToHost, HostToBridge } from './bridge-protocol';

export interface WebHostOptions {
  engineHost: Pick<EngineHost, 'invoke' | 'onPush'> & Partial<Pick<EngineHost, 'logs'>>;
  /** the built renderer (out/renderer) */
  rendererDir: string;
  /** the browser side of the bridge (bridge.js, built from bridge-client.ts) */
  bridgeScript: string;
  /** where dropped files are uploaded (emptied at start and close) */
  uploadDir: string;
  maxUploadBytes?: number;
  /** fixed token (tests); default: 32 random bytes */
  token?: string;
  /** largest WebSocket message accepted from the page */
  maxMessageBytes?: number;
  /** called for each page that connects, with a way to push to that page only */
  onConnect?: (push: (message: PushMessage) => void) => void;
}

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.woff': 'font/woff',
  '.map': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
};

export const DEFAULT_MAX_UPLOAD_BYTES = 4 * 1024 ** 3;
/** /open links not yet taken by a page; older ones are dropped first */
const MAX_OPEN_LINKS = 16;
const OPEN_ID_RE = /^[A-Za-z0-9_-]{22}$/;

/** A constant-time comparison (timingSafeEqual) of a request's secret with ours. */
function secretMatches(candidate: string | undefined | null, secret: string): boolean {
  if (!candidate) return false;
  const a = Buffer.from(candidate);
  const b = Buffer.from(secret);
  return a.length === b.length && timingSafeEqual(a, b);
}

export class WebHost {
  readonly token: string;
  private readonly server: Server;
  private readonly wss: WebSocketServer;
  private readonly clients = new Set<WebSocket>();
  private readonly unsubscribe: () => void;
  private port = 0;
  private uploads = 0;
  private readonly openLinks = new Map<string, DeepLinkResult>();
  /** the cookie's value: admits the built renderer's files only (see the header), never the token */
  private readonly assetKey = randomBytes(32).toString('base64url');

  constructor(private readonly options: WebHostOptions) {
    this.token = options.token ?? randomBytes(32).toString('base64url');
    this.server = createServer((req, res) => {
      this.handleHttp(req, res).catch((e: unknown) => {
        console.error('web host: request failed:', e);
        if (!res.headersSent) this.send(res, 500, 'internal error');
        else res.destroy();
      });
    });
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: options.maxMessageBytes ?? 64 * 1024 * 1024,
    });
    this.server.on('upgrade', (req, socket, head) => {
      if (!this.authorizeUpgrade(req)) {
        socket.end('HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
        return;
      }
      const openId = new URL(req.url ?? '/', this.origin).searchParams.get('open');
      this.wss.handleUpgrade(req, socket, head, (ws) => this.attach(ws, openId));
    });
    this.unsubscribe = options.engineHost.onPush((message) => {
      const push = { t: 'push', ...message } as HostToBridge;
      const text = JSON.stringify(push);
      for (const ws of this.clients) if (ws.readyState === ws.OPEN) ws.send(text);
    });
  }

  /** Listens on 127.0.0.1 (port 0 = a free one); resolves with the URL to open, token included. */
  async listen(port = 0): Promise<{ url: string; port: number }> {
    await rm(this.options.uploadDir, { recursive: true, force: true });
    // made anew at each start, so 0700 even inside a data folder an older host made 0755
    await mkdir(this.options.uploadDir, { recursive: true, mode: 0o700 });
    await new Promise<void>((resolvePromise, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => {
        this.server.off('error', reject);
        resolvePromise();
      });
    });
    this.port = (this.server.address() as AddressInfo).port;
    return { url: `${this.origin}/?token=${this.token}`, port: this.port };
  }

  get origin(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async close(): Promise<void> {
    this.unsubscribe();
    for (const ws of this.clients) ws.terminate();
    this.wss.close();
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
    await rm(this.options.uploadDir, { recursive: true, force: true });
  }

  private get cookieName(): string {
    // Cookies ignore ports: two hosts on one machine must not overwrite each other's key.
    return `sluice-assets-${this.port}`;
  }

  private tokenMatches(candidate: string | undefined | null): boolean {
    return secretMatches(candidate, this.token);
  }

  private hostAllowed(req: IncomingMessage): boolean {
    const host = req.headers.host;
    return host === `127.0.0.1:${this.port}` || host === `localhost:${this.port}`;
  }

  private cookieValue(req: IncomingMessage): string | undefined {
    const header = req.headers.cookie;
    if (!header) return undefined;
    for (const part of header.split(';')) {
      const [name, ...rest] = part.trim().split('=');
      if (name === this.cookieName) return rest.join('=');
    }
    return undefined;
  }

  private authorizeUpgrade(req: IncomingMessage): boolean {
    if (!this.hostAllowed(req)) return false;
    const url = new URL(req.url ?? '/', this.origin);
    if (url.pathname !== '/ws') return false;
    const origin = req.headers.origin;
    if (
      origin !== undefined &&
      origin !== `http://127.0.0.1:${this.port}` &&
      origin !== `http://localhost:${this.port}`
    )
      return false;
    return this.tokenMatches(url.searchParams.get('token'));
  }

  private securityHeaders(res: ServerResponse): void {
    res.setHeader('Content-Security-Policy', contentSecurityPolicy());
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
    res.setHeader('Cross-Origin-Resource-Policy', 'same-origin');
    res.setHeader('X-Frame-Options', 'DENY');
  }

  private send(
    res: ServerResponse,
    status: number,
    body: string | Buffer,
    type = 'text/plain; charset=utf-8',
  ): void {
    this.securityHeaders(res);
    res.writeHead(status, {
      'Content-Type': type,
      'Content-Length': Buffer.byteLength(body),
      'Cache-Control': 'no-store',
    });
    res.end(body);
  }

  private async handleHttp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!this.hostAllowed(req)) return this.send(res, 403, 'forbidden: unexpected Host header');
    const url = new URL(req.url ?? '/', this.origin);
    // an upload proves the token in its header (handleUpload)
    if (req.method === 'PUT' && url.pathname === '/upload') return this.handleUpload(req, res, url);
    const needsToken = 'forbidden: open the URL printed by `npm start` (it carries the access token)';
    if (!this.tokenMatches(url.searchParams.get('token'))) {
      // the cookie reaches the renderer's files and nothing else (the page itself names the bridge)
      const byCookie = secretMatches(this.cookieValue(req), this.assetKey);
      if (!byCookie || req.method !== 'GET' || url.pathname === '/' || url.pathname === '/index.html')
        return this.send(res, 403, needsToken);
      return this.serveStatic(res, url.pathname);
    }
    res.setHeader('Set-Cookie', `${this.cookieName}=${this.assetKey}; HttpOnly; SameSite=Strict; Path=/`);

    if (req.method !== 'GET' && req.method !== 'HEAD') return this.send(res, 405, 'method not allowed');
    if (url.pathname === '/' || url.pathname === '/index.html') return this.serveIndex(res);
    if (url.pathname === '/open') return this.openLink(res, url);
    if (url.pathname === '/download/log') return this.serveLog(res, url);
    if (url.pathname === '/bridge.js') {
      const config = `self.__sluiceBridgeConfig = ${JSON.stringify({ token: this.token })};\n`;
      return this.send(res, 200, config + this.options.bridgeScript, CONTENT_TYPES['.js']);
    }
    return this.serveStatic(res, url.pathname);
  }

  /**
   * A job's whole debug log as a browser download (the log dialog's Export in a web page): the
   * arguments are job:exportLog's, checked by the same validator.
   */
  private async serveLog(res: ServerResponse, url: URL): Promise<void> {
    let jobId: string;
    let name: string;
    let header: string;
    try {
      [jobId, name, header] = validateInvoke('job:exportLog', [
        url.searchParams.get('job'),
        url.searchParams.get('name'),
        url.searchParams.get('header') ?? '',
      ]);
    } catch (e) {
      return this.send(res, 400, (e as Error).message);
    }
    const logs = this.options.engineHost.logs;
    if (!logs) return this.send(res, 404, 'no job logs here');
    const text = await logs.text(jobId, header);
    this.securityHeaders(res);
    res.writeHead(200, {
      'Content-Type': CONTENT_TYPES['.txt'],
      'Content-Length': Buffer.byteLength(text),
      // an ASCII fallback for old clients, the exact name (RFC 6266) for the rest
      'Content-Disposition': `attachment; filename="${name.replace(/[^\x20-\x7e]|["\\]/g, '_')}"; filename*=UTF-8''${encodeURIComponent(name)}`,
      'Cache-Control': 'no-store',
    });
    res.end(text);
  }

  /** `/open?…`: checks the link, keeps the result for the page it redirects to (see the header). */
  private openLink(res: ServerResponse, url: URL): void {
    const query = new URLSearchParams(url.search);
    query.delete('token');
    const result = parseCloneQuery(query.toString());
    const id = randomBytes(16).toString('base64url');
    if (this.openLinks.size >= MAX_OPEN_LINKS) this.openLinks.delete(this.openLinks.keys().next().value!);
    this.openLinks.set(id, result);
    const app = `/?token=${encodeURIComponent(this.token)}`;
    this.securityHeaders(res);
    res.writeHead(303, { Location: `${app}#open=${id}`, 'Content-Length': 0, 'Cache-Control': 'no-store' });
    res.end();
  }

  private async serveIndex(res: ServerResponse): Promise<void> {
    const html = await readFile(join(this.options.rendererDir, 'index.html'), 'utf8');
    // A classic script at the top of <head> runs before the renderer's module scripts (deferred).
    // the bridge holds the token, so it is fetched with it (the cookie does not admit it)
    const tag = `<script src="./bridge.js?token=${encodeURIComponent(this.token)}"></script>`;
    const injected = /<head[^>]*>/i.test(html)
      ? html.replace(/<head[^>]*>/i, (m) => `${m}\n    ${tag}`)
      : tag + html;
    this.send(res, 200, injected, CONTENT_TYPES['.html']);
  }

  private async serveStatic(res: ServerResponse, pathname: string): Promise<void> {
    let decoded: string;
    try {
      decoded = decodeURIComponent(pathname);
    } catch {
      return this.send(res, 400, 'bad path');
    }
    const root = resolve(this.options.rendererDir);
    const file = resolve(root, `.${decoded}`);
    if (decoded.includes('\0') || (file !== root && !file.startsWith(root + sep)))
      return this.send(res, 403, 'forbidden');
    try {
      const st = await stat(file);
      if (!st.isFile()) return this.send(res, 404, 'not found');
    } catch {
      return this.send(res, 404, 'not found');
    }
    const body = await readFile(file);
    const type = CONTENT_TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream';
    this.securityHeaders(res);
    // Vite's assets carry a content hash in their name; the rest is revalidated.
    const immutable =
      /[-.][A-Za-z0-9_-]{8,}\.(js|css|woff2?|png|svg)$/.test(file) && file.includes(`${sep}assets${sep}`);
    res.writeHead(200, {
      'Content-Type': type,
      'Content-Length': body.length,
      'Cache-Control': immutable ? 'max-age=31536000, immutable' : 'no-cache',
    });
    res.end(body);
  }

  /** pathForFile() in the browser: the File's bytes, streamed to a temporary file, size-limited. */
  private async handleUpload(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    if (!this.tokenMatches(req.headers['x-sluice-token'] as string | undefined))
      return this.send(res, 403, 'forbidden: missing X-Sluice-Token');
    const limit = this.options.maxUploadBytes ?? DEFAULT_MAX_UPLOAD_BYTES;
    const declared = Number(req.headers['content-length'] ?? NaN);
    if (Number.isFinite(declared) && declared > limit) {
      res.setHeader('Connection', 'close');
      return this.send(res, 413, `file larger than ${limit} bytes`);
    }
    const name = uploadFileName(url.searchParams.get('name'));
    const dir = join(
      this.options.uploadDir,
      `${Date.now().toString(36)}-${++this.uploads}-${randomBytes(4).toString('hex')}`,
    );
    await mkdir(dir, { recursive: true });
    const file = join(dir, name);
    let received = 0;
    const limiter = new Transform({
      transform(chunk: Buffer, _enc, callback) {
        received += chunk.length;
        if (received > limit)
          callback(Object.assign(new Error(`file larger than ${limit} bytes`), { status: 413 }));
        else callback(null, chunk);
      },
    });
    try {
      await pipeline(req, limiter, createWriteStream(file, { flags: 'wx' }));
    } catch (e) {
      await rm(dir, { recursive: true, force: true });
      const status = (e as { status?: number }).status ?? 400;
      res.setHeader('Connection', 'close');
      return this.send(res, status, `upload failed: ${(e as Error).message}`);
    }
    this.send(res, 200, JSON.stringify({ path: file, size: received }), CONTENT_TYPES['.json']);
  }

  private attach(ws: WebSocket, openId: string | null): void {
    this.clients.add(ws);
    const push = (message: PushMessage) =>
      ws.readyState === ws.OPEN && ws.send(JSON.stringify({ t: 'push', ...message } as HostToBridge));
    this.options.onConnect?.(push);
    const link = openId !== null && OPEN_ID_RE.test(openId) ? this.openLinks.get(openId) : undefined;
    if (link) {
      this.openLinks.delete(openId!);
      push({ channel: 'link:opened', payload: link });
    }
    ws.on('close', () => this.clients.delete(ws));
    ws.on('error', () => this.clients.delete(ws));
    ws.on('message', (data, isBinary) => {
      if (isBinary) return ws.close(1003, 'text messages only');
      let message: BridgeToHost;
      try {
        message = JSON.parse(data.toString()) as BridgeToHost;
      } catch {
        return ws.close(1007, 'invalid JSON');
      }
      if (!message || message.t !== 'invoke' || typeof message.id !== 'number')
        return ws.close(1008, 'unexpected message');
      const reply = (m: HostToBridge) => ws.readyState === ws.OPEN && ws.send(JSON.stringify(m));
      this.options.engineHost.invoke(message.channel, message.args).then(
        (value) => reply({ t: 'result', id: message.id, ok: true, value }),
        (e: unknown) => {
          const failure = toInvokeFailure(e);
          reply({
            t: 'result',
            id: message.id,
            ok: false,
            error: { code: failure.code, message: failure.message },
          });
        },
      );
    });
  }
}

/** A safe file name for an upload: the browser's name, without directories or odd characters. */
export function uploadFileName(name: string | null): string {
  const base = basename((name ?? '').replace(/\\/g, '/'))
    .replace(/[^\p{L}\p{N} ._()+-]/gu, '_')
    .replace(/^\.+/, '')
    .slice(0, 200);
  return base || 'upload.hg';
}
