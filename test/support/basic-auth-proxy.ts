// An HTTP proxy on 127.0.0.1 in front of a real server (hg serve, which has no authentication of
// its own) that answers 401 with a Basic challenge unless a request carries `user:password`, as an
// hgweb behind a web server's basic auth does. Counts what it refused and what it let through.
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface BasicAuthProxy {
  url: string;
  /** requests answered 401, and requests passed on */
  refused(): number;
  passed(): number;
  stop(): Promise<void>;
}

export async function startBasicAuthProxy(
  target: string,
  user: string,
  password: string,
): Promise<BasicAuthProxy> {
  const t = new URL(target);
  const expected = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
  let refused = 0;
  let passed = 0;
  const server: Server = createServer((req, res) => {
    if (req.headers.authorization !== expected) {
      refused++;
      req.resume();
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="sluice test"', 'Content-Type': 'text/plain' });
      res.end('authorization required\n');
      return;
    }
    passed++;
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
        up.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}${t.pathname}`,
    refused: () => refused,
    passed: () => passed,
    stop: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
