// The stale keep-alive race: a server closes an idle kept-alive connection just as the client
// sends its next request on it. Sluice resends (its wire commands are read-only); a reset on a
// fresh connection is still an error.

import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { SluiceError } from '../../../../src/main/engine/errors';
import { HttpSession } from '../../../../src/main/engine/client/http-client';

const OK =
  'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\nKeep-Alive: timeout=60\r\n\r\nok';

/** Answers the first request on each connection; `onSecond` decides what a second one gets. */
async function rawServer(onSecond: (s: net.Socket) => void, resetFresh = false) {
  let connections = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    connections++;
    sockets.add(s);
    let requests = 0;
    let buf = '';
    s.on('error', () => {});
    s.on('data', (d) => {
      buf += d.toString('latin1');
      while (buf.includes('\r\n\r\n')) {
        buf = buf.slice(buf.indexOf('\r\n\r\n') + 4);
        requests++;
        if (requests === 1 && !resetFresh) s.write(OK);
        else if (requests === 1) s.resetAndDestroy();
        else onSecond(s);
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  return {
    url,
    connections: () => connections,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

async function get(session: HttpSession, url: string): Promise<string> {
  const res = await session.request(url);
  return (await res.readAll()).toString();
}

describe('HttpSession keep-alive', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0)) await c();
  });

  for (const [what, kill] of [
    ['reset (RST)', (s: net.Socket) => s.resetAndDestroy()],
    ['closed (FIN)', (s: net.Socket) => s.end()],
  ] as const) {
    it(`a pooled connection the server ${what} is resent on a new connection`, async () => {
      const srv = await rawServer(kill);
      cleanups.push(srv.close);
      const logs: string[] = [];
      const session = new HttpSession({ log: (l) => logs.push(l) });
      cleanups.push(async () => session.close());
      expect(await get(session, srv.url)).toBe('ok');
      expect(await get(session, srv.url)).toBe('ok');
      expect(srv.connections()).toBe(2);
      expect(logs.some((l) => l.includes('closed a kept-alive connection'))).toBe(true);
    });
  }

  it('a reset on a fresh connection is a NETWORK error, not retried', async () => {
    const srv = await rawServer(() => {}, true);
    cleanups.push(srv.close);
    const session = new HttpSession();
    cleanups.push(async () => session.close());
    const err = await session.request(srv.url).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SluiceError);
    expect((err as SluiceError).code).toBe('NETWORK');
    expect(srv.connections()).toBe(1);
  });
});
