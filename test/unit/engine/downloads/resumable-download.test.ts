// downloadWithResume against small real servers on 127.0.0.1 for what nginx never does: a range
// served from another version of the file (If-Range ignored), weak ETags, a complete partial
// checked by its last byte, and a cancel during a backoff wait.

import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpSession } from '../../../../src/main/engine/client/http-client';
import {
  CHANGED_ON_SERVER,
  downloadWithResume,
  validatorOf,
} from '../../../../src/main/engine/downloads/resumable-download';
import { removeDir, tempDirMaker } from '../../../support/env';

const tempDir = tempDirMaker('resumable');
const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

interface Served {
  url: string;
  requests: http.IncomingHttpHeaders[];
  bytes: number;
}

/** Serves `body()` with `etag()`: ranges honoured, If-Range ignored (as some servers do). */
async function serve(body: () => Buffer, headers: () => Record<string, string>): Promise<Served> {
  const served: Served = { url: '', requests: [], bytes: 0 };
  const server = http.createServer((req, res) => {
    served.requests.push(req.headers);
    const b = body();
    const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    const from = m ? Number(m[1]) : 0;
    const slice = b.subarray(from);
    served.bytes += slice.length;
    res.writeHead(m ? 206 : 200, {
      ...headers(),
      'content-length': slice.length,
      ...(m ? { 'content-range': `bytes ${from}-${b.length - 1}/${b.length}` } : {}),
    });
    res.end(slice);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  served.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/b.hg`;
  cleanups.push(() => {
    server.closeAllConnections();
    server.close();
  });
  return served;
}

function file(): string {
  const dir = tempDir('dl');
  cleanups.push(() => removeDir(dir));
  return join(dir, 'b.part');
}

describe('downloadWithResume', () => {
  it('a range from another version (If-Range ignored, ETag differs): from zero, said', async () => {
    const next = Buffer.alloc(3000, 2);
    const s = await serve(
      () => next,
      () => ({ etag: '"v2"' }),
    );
    const path = file();
    writeFileSync(path, Buffer.alloc(1000, 1));
    const logs: string[] = [];
    const n = await downloadWithResume(new HttpSession(), s.url, path, {
      resume: { have: 1000, validator: '"v1"', total: 3000 },
      log: (m) => logs.push(m),
      retryDelayMs: 1,
    });
    expect(n).toBe(3000);
    expect(readFileSync(path).equals(next)).toBe(true);
    expect(logs).toContain(CHANGED_ON_SERVER);
    expect(s.requests[0]).toMatchObject({ range: 'bytes=1000-', 'if-range': '"v1"' });
    expect(s.requests[1]?.range).toBeUndefined();
  });

  it('a complete partial asks for its last byte only', async () => {
    const body = Buffer.alloc(5000, 9);
    const s = await serve(
      () => body,
      () => ({ etag: '"v1"' }),
    );
    const path = file();
    writeFileSync(path, body);
    await downloadWithResume(new HttpSession(), s.url, path, {
      resume: { have: 5000, validator: '"v1"', total: 5000 },
    });
    expect(s.bytes).toBe(1);
    expect(readFileSync(path).equals(body)).toBe(true);
  });

  it('a weak ETag guards no range: Last-Modified does', () => {
    const lm = 'Sat, 05 Dec 2026 10:00:00 GMT';
    expect(validatorOf({ etag: 'W/"x"', 'last-modified': lm })).toBe(lm);
    expect(validatorOf({ etag: '"x"', 'last-modified': lm })).toBe('"x"');
    expect(validatorOf({ etag: 'W/"x"' })).toBeNull();
  });

  it('a cancel during a backoff wait ends it at once (CANCELLED)', async () => {
    const server = http.createServer((_req, res) => {
      res.writeHead(503);
      res.end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    cleanups.push(() => server.close());
    const ac = new AbortController();
    const waits: number[] = [];
    const p = downloadWithResume(
      new HttpSession(),
      `http://127.0.0.1:${(server.address() as AddressInfo).port}/b.hg`,
      file(),
      {
        signal: ac.signal,
        retryDelayMs: 3_600_000,
        onRetryWait: (w) => {
          waits.push(w.waitMs);
          ac.abort();
        },
      },
    );
    await expect(p).rejects.toMatchObject({ code: 'CANCELLED' });
    expect(waits).toEqual([3_600_000]);
  });
});
