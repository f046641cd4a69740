// `sluice serve` against hostile clients: every request is bounded in what it may ask for (batch
// commands and reply size, between pairs, getbundle lists, headers, bodies), connections that stop
// reading or sending are closed after the idle timeout, and past the concurrency bound requests
// get a typed refusal (503) instead of piling up. Each bound comes with the honest request just
// below it still answered. (The ssh transport's argument bounds: wire/ssh-server.test.ts.)
import { randomBytes } from 'node:crypto';
import { cpSync, lstatSync, readFileSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { inflateSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BATCH_MAX_COMMANDS,
  BATCH_MAX_REPLY,
  BETWEEN_MAX_PAIRS,
  GETBUNDLE_MAX_LIST,
  REQUEST_ARGS_COUNT_MAX,
} from '../../src/main/engine/operations/serve/server-limits';
import {
  startServer,
  type RunningServer,
  type ServerOptions,
} from '../../src/main/engine/operations/serve/http-server';
import { applyBundle2ToRepo, createEmptyRepository } from '../../src/main/engine/changegroup';
import { JobContext } from '../../src/main/engine/context/job-context';
import { bundle2Of, craftCg2, pieces } from './craft';
import { FIXTURES, extractFixture, hgSync, missing, removeDir, skipNote, tempDirMaker } from '../support/env';
import { cloneFromUrl } from '../../src/main/engine/operations/clone/clone';

let work = '';
let repo = '';
let heads: string[] = [];
const servers: RunningServer[] = [];

beforeAll(() => {
  work = tempDirMaker('hostile-clients')('w');
  repo = extractFixture('default', work);
});
afterAll(async () => {
  for (const s of servers) await s.close();
  removeDir(work);
});

async function serve(opts: Partial<ServerOptions> = {}): Promise<RunningServer> {
  const s = await startServer({ repo, ...opts });
  servers.push(s);
  return s;
}

async function get(
  url: string,
  init: RequestInit = {},
): Promise<{ status: number; type: string; body: string }> {
  const r = await fetch(url, init);
  return {
    status: r.status,
    type: r.headers.get('content-type') ?? '',
    body: Buffer.from(await r.arrayBuffer()).toString('latin1'),
  };
}

/** A raw connection: what it sends, and a promise of everything it got until the server closed it. */
function raw(
  s: RunningServer,
  request: string,
): { socket: Socket; closed: Promise<{ data: string; ms: number }> } {
  const t0 = Date.now();
  const socket = connect(s.port, s.address);
  let data = '';
  socket.on('data', (d: Buffer) => (data += d.toString('latin1')));
  socket.write(request);
  const closed = new Promise<{ data: string; ms: number }>((resolve) => {
    socket.on('close', () => resolve({ data, ms: Date.now() - t0 }));
    socket.on('error', () => undefined);
  });
  return { socket, closed };
}

describe('requests asking for too much', () => {
  let s: RunningServer;
  beforeAll(async () => {
    s = await serve();
    const r = await get(`${s.url}?cmd=heads`);
    heads = r.body.trim().split(' ');
  });

  it(`a batch of more than ${BATCH_MAX_COMMANDS} commands is refused (hg-error), one just below is answered`, async () => {
    const body = (n: number) => `cmds=${Array(n).fill('heads+').join('%3B')}`;
    const post = (n: number) =>
      get(`${s.url}?cmd=batch`, {
        method: 'POST',
        body: body(n),
        headers: { 'X-HgArgs-Post': String(body(n).length), 'Content-Type': 'application/mercurial-0.1' },
      });
    const over = await post(BATCH_MAX_COMMANDS + 1);
    expect(over.status).toBe(200);
    expect(over.type).toBe('application/hg-error');
    expect(over.body).toMatch(/too many commands in one batch/);
    const ok = await post(BATCH_MAX_COMMANDS);
    expect(ok.type).toBe('application/mercurial-0.1');
    expect(ok.body.split(';')).toHaveLength(BATCH_MAX_COMMANDS);
    expect(ok.body.split(';')[0]).toBe(`${heads.join(' ')}\n`);
  });

  it(`a batch whose reply would pass ${BATCH_MAX_REPLY} bytes is refused (a few bytes asked, megabytes answered)`, async () => {
    // 20000 bookmarks: each `listkeys bookmarks` answers ~1.2 MB
    const marks = Array.from({ length: 20000 }, (_, i) => `${heads[0]} mark-${'x'.repeat(12)}-${i}\n`).join(
      '',
    );
    const many = join(work, 'many');
    cpSync(repo, many, { recursive: true });
    writeFileSync(join(many, '.hg', 'bookmarks'), marks);
    const m = await serve({ repo: many });
    const batch = (n: number) =>
      `${m.url}?cmd=batch&cmds=${Array(n).fill('listkeys+namespace%3Dbookmarks').join('%3B')}`;
    const one = await get(batch(1));
    const per = one.body.length;
    expect(per).toBeGreaterThan(1 << 20);
    const over = await get(batch(Math.ceil(BATCH_MAX_REPLY / per) + 1));
    expect(over.type).toBe('application/hg-error');
    expect(over.body).toMatch(/batch reply larger than/);
    const ok = await get(batch(Math.floor(BATCH_MAX_REPLY / per) - 1));
    expect(ok.type).toBe('application/mercurial-0.1');
  });

  it(`between: more than ${BETWEEN_MAX_PAIRS} pairs (each may walk the whole history) is refused`, async () => {
    const pairs = (n: number) =>
      Array(n)
        .fill(`${heads[0]}-${'0'.repeat(40)}`)
        .join('+');
    const over = await get(`${s.url}?cmd=between&pairs=${pairs(BETWEEN_MAX_PAIRS + 1)}`);
    expect(over.type, over.body.slice(0, 200)).toBe('application/hg-error');
    expect(over.body).toMatch(/too many between pairs/);
    const ok = await get(`${s.url}?cmd=between&pairs=${pairs(10)}`);
    expect(ok.type).toBe('application/mercurial-0.1');
    expect(ok.body.split('\n')).toHaveLength(11);
  });

  it(`getbundle: more than ${GETBUNDLE_MAX_LIST} listkeys namespaces or bundlecaps is an error:abort part`, async () => {
    for (const [k, v] of [
      [
        'listkeys',
        Array(GETBUNDLE_MAX_LIST + 1)
          .fill('bookmarks')
          .join(','),
      ],
      [
        'bundlecaps',
        `HG20,${Array(GETBUNDLE_MAX_LIST + 1)
          .fill('x')
          .join(',')}`,
      ],
    ] as const) {
      const args = new URLSearchParams({ bundlecaps: 'HG20', cg: '0', [k]: v });
      if (k === 'listkeys') args.set('bundlecaps', 'HG20');
      const r = await get(`${s.url}?cmd=getbundle`, {
        method: 'POST',
        body: args.toString(),
        // 0.2: the abort reply goes uncompressed
        headers: { 'X-HgArgs-Post': String(args.toString().length), 'X-HgProto-1': '0.2' },
      });
      expect(r.status).toBe(200);
      expect(r.body).toMatch(/error:abort/i); // mandatory: upper case
      expect(r.body).toContain(`too many ${k} entries`);
    }
  });

  it(`more than ${REQUEST_ARGS_COUNT_MAX} arguments (POST body, query string) are refused (400) before they are split; a batched command's too (hg-error)`, async () => {
    const post = (args: string) =>
      get(`${s.url}?cmd=heads`, {
        method: 'POST',
        body: args,
        headers: { 'X-HgArgs-Post': String(args.length) },
      });
    const many = (n: number) => Array.from({ length: n }, (_, i) => `k${i}=`).join('&');
    // 14 MB of distinct keys (under the 16 MiB body bound): ~400 MB of strings once split
    const huge = Array.from({ length: 1_500_000 }, (_, i) => `k${i}=`).join('&');
    for (const body of [many(REQUEST_ARGS_COUNT_MAX + 1), huge]) {
      const r = await post(body);
      expect(r.status).toBe(400);
      expect(r.body).toMatch(/too many arguments/);
    }
    const query = await get(`${s.url}?cmd=heads&${many(REQUEST_ARGS_COUNT_MAX)}`);
    expect(query.status).toBe(400);
    const ok = await post(many(REQUEST_ARGS_COUNT_MAX - 2)); // with cmd, one below the bound
    expect(ok.status).toBe(200);
    expect(ok.body).toBe(`${heads.join(' ')}\n`);
    const batched = await get(
      `${s.url}?cmd=batch&cmds=${encodeURIComponent(`heads ${Array.from({ length: REQUEST_ARGS_COUNT_MAX + 1 }, (_, i) => `k${i}=`).join(',')}`)}`,
    );
    expect(batched.type).toBe('application/hg-error');
    expect(batched.body).toMatch(/too many arguments to heads in a batch/);
  });

  it('known: 300k nodes in a POST body are answered (linear); a body past 16 MiB is 413', async () => {
    const unknown = 'f'.repeat(40);
    const nodes = [...heads, ...Array(300_000).fill(unknown)];
    const body = `nodes=${nodes.join('+')}`;
    const r = await get(`${s.url}?cmd=known`, {
      method: 'POST',
      body,
      headers: { 'X-HgArgs-Post': String(body.length) },
    });
    expect(r.body).toBe('1'.repeat(heads.length) + '0'.repeat(300_000));
    const big = 'x'.repeat((16 << 20) + 1);
    const tooBig = await get(`${s.url}?cmd=known`, {
      method: 'POST',
      body: big,
      headers: { 'X-HgArgs-Post': String(big.length) },
    }).catch(() => ({ status: 413, type: '', body: '' }));
    expect(tooBig.status).toBe(413);
  });

  it('X-HgArg-N headers: 60 KB of them (a pull with hundreds of common heads) are read; past 128 KiB is 431', async () => {
    const headerArgs = (n: number): Record<string, string> => {
      const value = `nodes=${[...heads, ...Array(n).fill('f'.repeat(40))].join('+')}`;
      const h: Record<string, string> = {};
      for (let i = 0; i * 1024 < value.length; i++)
        h[`X-HgArg-${i + 1}`] = value.slice(i * 1024, (i + 1) * 1024);
      return h;
    };
    const ok = await get(`${s.url}?cmd=known`, { headers: headerArgs(1500) });
    expect(ok.status).toBe(200);
    expect(ok.body).toBe('1'.repeat(heads.length) + '0'.repeat(1500));
    const over = await get(`${s.url}?cmd=known`, { headers: headerArgs(4000) }).catch(() => ({
      status: 431,
      type: '',
      body: '',
    }));
    expect(over.status).toBe(431);
  });

  it('a body no argument is read from (endless, chunked) is not read to its end: the connection closes after the reply', async () => {
    const c = raw(s, `POST /?cmd=heads HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n`);
    const chunk = Buffer.alloc(1 << 20, 0x61);
    const frame = Buffer.concat([
      Buffer.from(`${chunk.length.toString(16)}\r\n`),
      chunk,
      Buffer.from('\r\n'),
    ]);
    let sent = 0;
    let closed = false;
    void c.closed.then(() => (closed = true));
    while (!closed && sent < 200) {
      if (!c.socket.write(frame))
        await Promise.race([new Promise((r) => c.socket.once('drain', r)), c.closed]);
      sent++;
    }
    const { data } = await c.closed;
    expect(data).toMatch(/^HTTP\/1\.1 200/); // the heads reply went out
    expect(data).toMatch(/connection: close/i);
    expect(sent).toBeLessThan(200);
  });
});

describe('connections that stall, and too many at once', () => {
  let big: Promise<string> | undefined;
  /** 32 MiB of incompressible file data: more than the kernel's socket buffers hold (made once) */
  const bigRepo = (): Promise<string> =>
    (big ??= (async () => {
      const dir = join(work, 'big');
      await createEmptyRepository(dir);
      const content = randomBytes(32 << 20).toString('latin1');
      await applyBundle2ToRepo(
        dir,
        pieces(await bundle2Of(craftCg2([{ name: 'big.bin', content }]).cg)),
        new JobContext(),
      );
      return dir;
    })());

  it('a request whose headers never end, or whose body stops short of its Content-Length, is closed after the idle timeout', async () => {
    const s = await serve({ idleTimeoutMs: 400 });
    const headers = raw(s, 'GET /?cmd=heads HTTP/1.1\r\nHost: x\r\nX-HgArg-1: nodes=');
    const body = raw(
      s,
      'POST /?cmd=known HTTP/1.1\r\nHost: x\r\nX-HgArgs-Post: 1000\r\nContent-Length: 1000\r\n\r\nnodes=',
    );
    for (const c of [headers, body]) {
      const { data, ms } = await c.closed;
      expect(data).not.toMatch(/ 200 /);
      // closed by the idle timer (400 ms), not at once; a hang would end at the test timeout
      expect(ms).toBeGreaterThanOrEqual(300);
    }
    expect((await get(`${s.url}?cmd=heads`)).status).toBe(200);
  });

  it('a client that stops reading a stream clone is cut off after the idle timeout; its request slot is freed', async () => {
    const s = await serve({ repo: await bigRepo(), idleTimeoutMs: 500, maxActiveRequests: 1 });
    const t0 = Date.now();
    const socket = connect(s.port, s.address);
    socket.pause(); // never reads
    socket.write('GET /?cmd=stream_out HTTP/1.1\r\nHost: x\r\n\r\n');
    await expect.poll(() => s.requests).toBe(1); // the server has taken the stream request
    expect((await fetch(`${s.url}?cmd=heads`)).status).toBe(503); // the stream holds the one slot
    // the server ends the stream (its socket destroyed; this paused client never reads the FIN):
    // the slot frees after the idle timeout, not after 32 MiB
    let status = 503;
    while (status === 503 && Date.now() - t0 < 20_000) {
      await new Promise((r) => setTimeout(r, 100));
      status = (await fetch(`${s.url}?cmd=heads`)).status;
    }
    expect(status).toBe(200);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(500);
    expect(socket.bytesRead).toBe(0);
    socket.destroy();
  });

  it('a client that reads a stream clone, but too slowly (2 KiB every 50 ms, 40 KiB/s, below 64 KiB per idle timeout), is cut off: TIMEOUT logged, its request slot freed', async () => {
    const logs: string[] = [];
    const s = await serve({
      repo: await bigRepo(),
      idleTimeoutMs: 500,
      maxActiveRequests: 1,
      log: (l) => logs.push(l),
    });
    const socket = connect(s.port, s.address);
    socket.pause();
    socket.on('error', () => undefined);
    let read = 0;
    const reader = setInterval(() => {
      const b = socket.read(2048) as Buffer | null;
      if (b) read += b.length;
    }, 50);
    socket.write('GET /?cmd=stream_out HTTP/1.1\r\nHost: x\r\n\r\n');
    await expect.poll(() => s.requests).toBe(1); // the server has taken the stream request
    expect((await fetch(`${s.url}?cmd=heads`)).status).toBe(503); // the stream holds the one slot
    let status = 503;
    const t0 = Date.now();
    while (status === 503 && Date.now() - t0 < 20_000) {
      await new Promise((r) => setTimeout(r, 100));
      status = (await fetch(`${s.url}?cmd=heads`)).status;
    }
    clearInterval(reader);
    socket.destroy();
    expect(status).toBe(200);
    const cut = logs.find((l) => /stream_out/.test(l));
    expect(cut, logs.join('\n')).toMatch(
      / error: the client read (only \d+ bytes of the reply in \d+\.\d s of waiting \(reading too slowly\)|nothing of the reply for 500 ms)$/,
    );
    // it was reading all along (not the stalled client above), and got a fraction of the reply.
    // Over TCP the server sees a slow reader's progress only as whole writes complete (corked
    // 256 KiB writevs, after kernel buffers of megabytes): below the floor that is no progress
    // within an idle timeout, ReaderFloor's other branch; the floor's message proper is --stdio's
    expect(read).toBeGreaterThan(0);
    expect(read).toBeLessThan(8 << 20);
  });

  it('past maxActiveRequests a request is refused with 503 (Retry-After), and served again once one ends', async () => {
    const s = await serve({ maxActiveRequests: 1, idleTimeoutMs: 60_000 });
    // one request held open: its POST body never comes
    const held = raw(
      s,
      'POST /?cmd=known HTTP/1.1\r\nHost: x\r\nX-HgArgs-Post: 100\r\nContent-Length: 100\r\n\r\n',
    );
    await new Promise((r) => setTimeout(r, 100));
    const r = await fetch(`${s.url}?cmd=heads`);
    expect(r.status).toBe(503);
    expect(r.headers.get('retry-after')).toBe('5');
    expect(await r.text()).toMatch(/too many requests at once/);
    held.socket.destroy();
    await held.closed;
    await new Promise((r) => setTimeout(r, 50));
    expect((await get(`${s.url}?cmd=heads`)).status).toBe(200);
  });

  it('past maxConnections a connection is closed on arrival', async () => {
    const s = await serve({ maxConnections: 2 });
    const a = raw(s, '');
    const b = raw(s, '');
    await new Promise((r) => setTimeout(r, 100));
    const c = raw(s, 'GET /?cmd=heads HTTP/1.1\r\nHost: x\r\n\r\n');
    const { data } = await c.closed;
    expect(data).toBe('');
    for (const x of [a, b]) x.socket.destroy();
    await Promise.all([a.closed, b.closed]);
    await new Promise((r) => setTimeout(r, 50));
    expect((await get(`${s.url}?cmd=heads`)).status).toBe(200);
  });
});

describe('a thousand idle sockets', () => {
  it('past the connection bound (default 4 x 64) the rest are closed on arrival; the idle ones are closed after the idle timeout, and the server answers again', async () => {
    const s = await serve({ idleTimeoutMs: 3000 });
    let closedSoFar = 0;
    const idle = Array.from({ length: 1000 }, () => raw(s, ''));
    for (const c of idle) void c.closed.then(() => closedSoFar++);
    // the server keeps 256 of them and closes the rest on arrival (as the listen backlog hands
    // them over); then a request finds no room
    for (let t = 0; t < 100 && closedSoFar < 1000 - 256; t++) await new Promise((r) => setTimeout(r, 20));
    expect(closedSoFar).toBe(1000 - 256);
    const refused = raw(s, 'GET /?cmd=heads HTTP/1.1\r\nHost: x\r\n\r\n');
    expect((await refused.closed).data).toBe('');
    expect(closedSoFar).toBe(1000 - 256);
    // the held ones are closed by the server after the idle timeout (nothing was sent on them)
    const closed = await Promise.all(idle.map((c) => c.closed));
    expect(closed.every((c) => c.data === '')).toBe(true);
    expect((await get(`${s.url}?cmd=heads`)).status).toBe(200);
  });
});

describe('a flood of pipelined requests on one connection', () => {
  it('20000 requests in one write: at most 64 answered (the request bound), then the connection closed (after a 503 unless a reset overtakes it)', async () => {
    const s = await serve();
    const c = raw(s, 'GET /?cmd=heads HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(20_000));
    const { data } = await c.closed;
    // at most the 64 requests in progress when the next came are answered (fewer when some of
    // them are cut by the 503's close), the 503 last. The 503 itself may not reach the client:
    // the server closes with the rest of the 20000 requests unread, so its kernel answers them with
    // a reset, which can overtake the 503 still queued at the client (seen in a quiet CI run)
    const answered = data.match(/HTTP\/1\.1 200 /g)?.length ?? 0;
    expect(answered).toBeGreaterThan(0);
    expect(answered).toBeLessThanOrEqual(64);
    const refused = data.match(/HTTP\/1\.1 503 /g)?.length ?? 0;
    expect(refused).toBeLessThanOrEqual(1);
    if (refused) expect(data.lastIndexOf('HTTP/1.1 503 ')).toBeGreaterThan(data.lastIndexOf('HTTP/1.1 200 '));
    expect((await get(`${s.url}?cmd=heads`)).status).toBe(200);
  });
});

describe('push, getbundle lists and paths a client makes up', () => {
  let s: RunningServer;
  let tip: string[] = [];
  beforeAll(async () => {
    writeFileSync(join(repo, '.hg', 'hgrc'), '[paths]\nsecret = http://user:SECRET-MARKER@example.com/\n');
    s = await serve({
      cloneBundles: { files: [{ path: join(FIXTURES, 'default', 'packed1.hg') }] },
    });
    tip = (await get(`${s.url}?cmd=heads`)).body.trim().split(' ');
  });

  it('unbundle and pushkey are refused (hg-error: read-only) and an endless push body is not read to its end', async () => {
    for (const cmd of ['unbundle', 'pushkey']) {
      const r = await get(
        `${s.url}?cmd=${cmd}&heads=666f726365&namespace=bookmarks&key=x&old=&new=${'0'.repeat(40)}`,
        {
          method: 'POST',
          body: 'HG10UN',
          headers: { 'Content-Type': 'application/mercurial-0.1' },
        },
      );
      expect(r.type, cmd).toBe('application/hg-error');
      expect(r.body).toMatch(new RegExp(`read-only: ${cmd} is not supported`));
    }
    const c = raw(
      s,
      `POST /?cmd=unbundle&heads=666f726365 HTTP/1.1\r\nHost: x\r\nContent-Type: application/mercurial-0.1\r\nTransfer-Encoding: chunked\r\n\r\n`,
    );
    const chunk = Buffer.concat([
      Buffer.from('100000\r\n'),
      Buffer.alloc(1 << 20, 0x61),
      Buffer.from('\r\n'),
    ]);
    let sent = 0;
    const pump = (): void => {
      while (!c.socket.destroyed && sent < 256 << 20 && c.socket.write(chunk)) sent += chunk.length;
      if (!c.socket.destroyed && sent < 256 << 20) c.socket.once('drain', pump);
    };
    pump();
    const { data } = await c.closed;
    expect(data).toMatch(/read-only: unbundle is not supported/);
    expect(sent).toBeLessThan(64 << 20); // the server hung up after 16 MiB, not 256 MiB
    // the capabilities say so before a client tries: no `unbundle`, hg push stops at that
    expect((await get(`${s.url}?cmd=capabilities`)).body.split(' ')).not.toContain('unbundle');
  });

  it('getbundle with 100k heads (the real ones, repeated) and 100k unknown common nodes is answered; 100k unknown heads is an error:abort part', async () => {
    const caps = `HG20,bundle2=${encodeURIComponent('HG20\nchangegroup=02')}`;
    // no X-HgProto: an application/mercurial-0.1 reply, zlib as hg's
    const post = (args: string) =>
      fetch(`${s.url}?cmd=getbundle`, {
        method: 'POST',
        body: args,
        headers: { 'X-HgArgs-Post': String(args.length) },
      }).then(async (r) => inflateSync(Buffer.from(await r.arrayBuffer())));
    const many = (n: number, f: (i: number) => string) => Array.from({ length: n }, (_, i) => f(i)).join('+');
    const ok = await post(
      `bundlecaps=${caps}&heads=${many(100_000, (i) => tip[i % tip.length]!)}&common=${many(100_000, (i) => i.toString(16).padStart(40, 'e'))}`,
    );
    expect(ok.toString('latin1', 0, 4)).toBe('HG20');
    expect(ok.toString('latin1')).toMatch(/CHANGEGROUP/i);
    const bad = await post(
      `bundlecaps=${caps}&heads=${many(100_000, (i) => i.toString(16).padStart(40, 'd'))}`,
    );
    expect(bad.toString('latin1')).toMatch(/error:abort.*unknown revision requested/is);
    // and a node that is not hex at all is a 400, not a crash
    const notHex = await fetch(
      `${s.url}?cmd=getbundle&bundlecaps=${encodeURIComponent(caps)}&heads=${'z'.repeat(40)}`,
    );
    expect([200, 400]).toContain(notHex.status);
    expect((await get(`${s.url}?cmd=heads`)).status).toBe(200);
  });

  it.each([
    '/../../../../etc/passwd',
    '/%2e%2e/%2e%2e/%2e%2e/etc/passwd',
    '/.hg/hgrc',
    '/.hg/store/00changelog.i',
    '//.hg/hgrc',
    '/.sluice/bundles/0/../../../.hg/hgrc',
    '/.sluice/bundles/0/%2e%2e%2f%2e%2e%2f%2e%2e%2f.hg%2fhgrc',
    '/.sluice/bundles/1/packed1.hg',
    '/.sluice/bundles/0/packed1.hg/..',
    '/.sluice/bundles/0/PACKED1.HG',
    '/./.sluice/bundles/0/packed1.hg',
    '/?cmd=../../.hg/hgrc',
  ])('GET %s: 404 or 400, nothing of the repository or the disk', async (path) => {
    const c = raw(s, `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    const { data } = await c.closed;
    expect(data).toMatch(/^HTTP\/1\.1 (400|404) /);
    expect(data).not.toMatch(/SECRET-MARKER|root:|HGS1UN|\0\0/);
  });

  it('the served bundle is served at its own route, whole and by Range', async () => {
    const [route] = (await get(`${s.url}?cmd=clonebundles`)).body.split(' ');
    const whole = await fetch(route!);
    expect(whole.status).toBe(200);
    const file = readFileSync(join(FIXTURES, 'default', 'packed1.hg'));
    expect(Buffer.from(await whole.arrayBuffer()).equals(file)).toBe(true);
    const part = await fetch(route!, { headers: { Range: 'bytes=10-' } });
    expect(part.status).toBe(206);
    expect(Buffer.from(await part.arrayBuffer()).equals(file.subarray(10))).toBe(true);
    const past = await fetch(route!, { headers: { Range: `bytes=${file.length}-` } });
    expect(past.status).toBe(416);
  });

  /** the body of one request sent as is (its Host header, its request target) */
  async function rawBody(server: RunningServer, target: string, headers: string): Promise<string> {
    const { data } = await raw(server, `GET ${target} HTTP/1.1\r\n${headers}Connection: close\r\n\r\n`)
      .closed;
    return data.slice(data.indexOf('\r\n\r\n') + 4);
  }

  it("a Host header naming another host (evil.example) never reaches the clonebundles manifest or the landing page: the served bundle's URL is the address the connection came in on", async () => {
    const bundleUrl = `${s.url}.sluice/bundles/0/packed1.hg`;
    for (const host of [
      'evil.example',
      `evil.example:${s.port}`,
      `127.0.0.1:${s.port}@evil.example`,
      `127.0.0.1:${s.port}/evil.example`,
      `localhost:${s.port}.evil.example`,
      'evil.example\r\nX-Forwarded-Host: evil.example',
    ]) {
      const manifest = await rawBody(s, '/?cmd=clonebundles', `Host: ${host}\r\n`);
      expect(manifest, host).not.toMatch(/evil/);
      expect(manifest.startsWith(`${bundleUrl} BUNDLESPEC=none-packed1;`), `${host}: ${manifest}`).toBe(true);
      const landing = await rawBody(s, '/', `Host: ${host}\r\n`);
      expect(landing, host).toContain(`hg clone --stream ${s.url}\n`);
      expect(landing, host).not.toMatch(/evil/);
    }
    // absolute-form request target: not the repository root, nothing reflected
    const absolute = await rawBody(s, 'http://evil.example/?cmd=clonebundles', 'Host: evil.example\r\n');
    expect(absolute).not.toMatch(/evil/);
    // localhost names this server too on a loopback connection: kept as the client wrote it
    const local = await rawBody(s, '/?cmd=clonebundles', `Host: localhost:${s.port}\r\n`);
    expect(local.startsWith(`http://localhost:${s.port}/.sluice/bundles/0/packed1.hg `)).toBe(true);
  });

  it('bound to all interfaces (::), the bundle URL is the address each connection came in on: 127.0.0.1 over IPv4, [::1] over IPv6', async () => {
    const all = await serve({
      address: '::',
      cloneBundles: { files: [{ path: join(FIXTURES, 'default', 'packed1.hg') }] },
    });
    for (const [address, host] of [
      ['127.0.0.1', '127.0.0.1'],
      ['::1', '[::1]'],
    ]) {
      const { data } = await raw(
        { ...all, address: address! },
        'GET /?cmd=clonebundles HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n',
      ).closed;
      expect(data).toContain(`\r\n\r\nhttp://${host}:${all.port}/.sluice/bundles/0/packed1.hg BUNDLESPEC=`);
      expect(data).not.toMatch(/evil/);
    }
  });

  it('with a public URL (--public-url) the served bundle is advertised under it, whatever the Host header says', async () => {
    const pub = await serve({
      publicUrl: 'https://hg.example.org/mirror',
      cloneBundles: { files: [{ path: join(FIXTURES, 'default', 'packed1.hg') }] },
    });
    for (const host of ['evil.example', `127.0.0.1:${pub.port}`]) {
      const manifest = await rawBody(pub, '/?cmd=clonebundles', `Host: ${host}\r\n`);
      expect(
        manifest.startsWith('https://hg.example.org/mirror/.sluice/bundles/0/packed1.hg BUNDLESPEC='),
      ).toBe(true);
      expect(manifest).not.toMatch(/evil/);
    }
    for (const bad of ['ftp://hg.example.org/', 'http://user:pw@hg.example.org/', 'http://h/?x=1', 'h:8000'])
      await expect(serve({ publicUrl: bad }), bad).rejects.toMatchObject({ code: 'USAGE' });
  });
});

describe('requests while the repository is being written', () => {
  it.skipIf(missing('hg'))(
    `a pull-clone during a transaction sees the repository as it was; a stream clone waits for the lock and sees it as it became${skipNote('hg')}`,
    async () => {
      const dir = join(work, 'written');
      await createEmptyRepository(dir);
      const first = craftCg2([{ name: 'a.txt', content: 'first\n' }], 'first');
      await applyBundle2ToRepo(dir, pieces(await bundle2Of(first.cg)), new JobContext());
      // a second root with a 2 MB file: the transaction is held open half-way through its file data
      const second = craftCg2(
        [{ name: 'b.bin', content: randomBytes(2 << 20).toString('latin1') }],
        'second',
      );
      const bundle = await bundle2Of(second.cg);
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      let halfway!: () => void;
      const atHalf = new Promise<void>((r) => (halfway = r));
      async function* held(): AsyncGenerator<Uint8Array> {
        yield bundle.subarray(0, bundle.length >> 1);
        halfway();
        await released;
        yield bundle.subarray(bundle.length >> 1);
      }
      const s = await serve({ repo: dir });
      const writing = applyBundle2ToRepo(dir, held(), new JobContext());
      await atHalf;
      // the writer holds the store lock (hg's lock: a symbolic link to host:pid, a file on Windows)
      await expect
        .poll(() => lstatSync(join(dir, '.hg', 'store', 'lock'), { throwIfNoEntry: false }))
        .toBeTruthy();

      // the old state, whole: one head, and a pull clone of it
      expect((await get(`${s.url}?cmd=heads`)).body).toBe(`${first.changeset.toString('hex')}\n`);
      const pulled = join(work, 'written-pull');
      await cloneFromUrl(
        { kind: 'clone', url: s.url, dest: pulled, pull: true },
        new JobContext({ fileEvents: false }),
      );
      expect(await headsOf(pulled)).toEqual([first.changeset.toString('hex')]);

      // a stream clone lists the store under the lock, as hg: it waits for the writer
      let streamed = false;
      const streamDest = join(work, 'written-stream');
      const streaming = cloneFromUrl(
        { kind: 'clone', url: s.url, dest: streamDest, stream: 'v2' },
        new JobContext({ fileEvents: false }),
      ).then(() => (streamed = true));
      await new Promise((r) => setTimeout(r, 300));
      expect(streamed).toBe(false);
      release();
      await writing;
      await streaming;
      expect((await headsOf(streamDest)).sort()).toEqual(
        [first.changeset.toString('hex'), second.changeset.toString('hex')].sort(),
      );
      for (const d of [pulled, streamDest]) expect(hgSync(['verify', '-q'], d).status, d).toBe(0);
    },
  );
});

/** the heads of a repository, as its own served `heads` answers them */
async function headsOf(dir: string): Promise<string[]> {
  const s = await serve({ repo: dir });
  return (await get(`${s.url}?cmd=heads`)).body.trim().split(' ');
}
