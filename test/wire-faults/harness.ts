// A scripted misbehaving hg server for the client fault tests: a node http(s) server on 127.0.0.1
// whose commands are forwarded to a real `sluice serve` backend unless the test scripts an
// answer for them (garbage, errors, truncation, stalls, redirects, 401s...).

import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
export const TLS = {
  ca: join(HERE, 'tls', 'ca.pem'),
  cert: readFileSync(join(HERE, 'tls', 'server.pem')),
  key: readFileSync(join(HERE, 'tls', 'server.key')),
};

export interface Hit {
  method: string;
  path: string;
  cmd: string | null;
  headers: http.IncomingHttpHeaders;
}

export interface Backend {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

export type Script = (
  req: http.IncomingMessage,
  res: http.ServerResponse,
  ctx: { cmd: string | null; hit: number; forward: () => Promise<Backend> },
) => void | boolean | Promise<void | boolean>;

export interface ScriptedServer {
  url: string;
  hits: Hit[];
  close(): Promise<void>;
}

/** Fetches the same request from the backend (whole body in memory: the fixtures are small). */
async function forwardTo(backend: string, req: http.IncomingMessage, body: Buffer): Promise<Backend> {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (k.startsWith('x-hg') || k === 'content-type' || k === 'content-length') headers[k] = String(v);
  }
  const url = new URL(req.url ?? '/', backend);
  const r = await fetch(url, {
    method: req.method,
    headers,
    ...(body.length ? { body: new Uint8Array(body) } : {}),
  });
  const out: Record<string, string> = {};
  r.headers.forEach((v, k) => {
    if (k === 'content-type') out[k] = v;
  });
  return { status: r.status, headers: out, body: Buffer.from(await r.arrayBuffer()) };
}

/**
 * `script` answers a request by writing to `res` and returning true (or nothing after ending
 * the response); returning false forwards it to the backend unchanged.
 */
export async function scriptedServer(
  backend: string,
  script: Script,
  opts: { tls?: boolean } = {},
): Promise<ScriptedServer> {
  const hits: Hit[] = [];
  const sockets = new Set<import('node:net').Socket>();
  const handler = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const u = new URL(req.url ?? '/', 'http://x');
      const cmd = u.searchParams.get('cmd');
      hits.push({ method: req.method ?? 'GET', path: u.pathname, cmd, headers: req.headers });
      const forward = (): Promise<Backend> => forwardTo(backend, req, body);
      void (async () => {
        const handled = await script(req, res, { cmd, hit: hits.length, forward });
        if (handled === false || (handled === undefined && !res.headersSent && !res.writableEnded)) {
          const b = await forward();
          res.writeHead(b.status, b.headers);
          res.end(b.body);
        }
      })().catch(() => res.destroy());
    });
  };
  const server = opts.tls
    ? https.createServer({ cert: TLS.cert, key: TLS.key }, handler)
    : http.createServer(handler);
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `${opts.tls ? 'https' : 'http'}://127.0.0.1:${port}/`,
    hits,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

/** A forward proxy on 127.0.0.1: absolute-URI GETs for http, CONNECT tunnels for https. */
export async function forwardProxy(
  opts: { auth?: string } = {},
): Promise<{ url: string; requests: string[]; close(): Promise<void> }> {
  const net = await import('node:net');
  const requests: string[] = [];
  const sockets = new Set<import('node:net').Socket>();
  const denied = (req: http.IncomingMessage): boolean =>
    !!opts.auth &&
    req.headers['proxy-authorization'] !== `Basic ${Buffer.from(opts.auth).toString('base64')}`;
  const server = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    if (denied(req)) {
      res.writeHead(407, { 'Proxy-Authenticate': 'Basic realm="proxy"' });
      res.end();
      return;
    }
    const target = new URL(req.url ?? '');
    const headers = { ...req.headers };
    delete headers['proxy-authorization'];
    const up = http.request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname + target.search,
        method: req.method,
        headers,
      },
      (ur) => {
        res.writeHead(ur.statusCode ?? 502, ur.headers);
        ur.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  server.on('connect', (req, client: import('node:net').Socket, head: Buffer) => {
    requests.push(`CONNECT ${req.url}`);
    if (denied(req)) {
      client.end(
        'HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="proxy"\r\n\r\n',
      );
      return;
    }
    const [host, port] = (req.url ?? '').split(':');
    const up = net.connect(Number(port), host!, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) up.write(head);
      up.pipe(client);
      client.pipe(up);
    });
    sockets.add(up);
    sockets.add(client);
    up.on('error', () => client.destroy());
    client.on('error', () => up.destroy());
  });
  server.on('connection', (s) => sockets.add(s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}
