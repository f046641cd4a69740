// Loopback helpers of the test servers and the bench's servers: a free port on 127.0.0.1 and a
// wait for an HTTP server to answer. Plain JavaScript so that vitest (test/interop/wire-support.ts,
// typed by net-harness.d.mts), the sshd harness and `npm run bench` share this one definition.

import net from 'node:net';

/** A port on 127.0.0.1 that was free a moment ago (the OS picks it; the listener is closed again). */
export async function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = s.address().port;
      s.close(() => resolve(port));
    });
  });
}

/** Resolves once a GET of `url` answers (any status), polling every 100 ms; throws after `timeoutMs`. */
export async function waitForHttp(url, timeoutMs = 15_000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      const r = await fetch(url);
      await r.arrayBuffer();
      return;
    } catch {
      if (Date.now() > end) throw new Error(`${url} did not come up`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
