// Hostile HTTP servers (a scripted server on 127.0.0.1 in front of `sluice serve`, see
// server-support.ts and ../wire-faults/harness.ts): redirects that try to take credentials
// elsewhere or never end, replies that trickle, carry garbage or lie about their framing, pulls cut
// short. Each clone either succeeds without harm or fails with a typed SluiceError, leaving nothing
// at DEST. Clone bundle servers are in server-clonebundles.test.ts.
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { deflateSync, gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/main/engine/errors';
import { JobContext } from '../../src/main/engine/context/job-context';
import { cloneFromUrl } from '../../src/main/engine/operations/clone/clone';
import { pullFromUrl } from '../../src/main/engine/operations/pull/pull';
import { createEmptyRepository } from '../../src/main/engine/changegroup';
import { decompressWire } from '../../src/main/engine/protocol/compression-engines';
import { b85encode } from '../../src/main/engine/repo/obsstore';
import { treeHash } from '../interop/changegroup-support';
import { i32, pieces } from './craft';
import { startServer } from '../../src/main/engine/operations/serve/http-server';
import type { CloneRequest } from '../../src/shared/jobs';
import { extractFixture } from '../interop/wire-support';
import type { Script } from '../wire-faults/harness';
import { backend, clone, nextDest, serve, useHostileBackend, work } from './server-support';

useHostileBackend();

/** The backend's getbundle reply, its first `head` bytes at once, then a byte every 20 ms (never idle). */
function trickledGetbundle(timers: NodeJS.Timeout[], head = 0): Script {
  return async (_req, res, ctx) => {
    if (ctx.cmd !== 'getbundle') return false;
    const b = await ctx.forward();
    res.writeHead(200, b.headers);
    let at = head;
    if (head) res.write(b.body.subarray(0, head));
    timers.push(setInterval(() => res.write(b.body.subarray(at, ++at)), 20));
    return true;
  };
}
describe('redirects', () => {
  it('credentials do not follow a redirect to another origin', async () => {
    const other = await serve(() => false);
    const first = await serve((req, res) => {
      if (!req.headers.authorization) {
        res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="r"' });
        res.end();
        return true;
      }
      res.writeHead(302, { Location: new URL(req.url ?? '/', other.url).toString() });
      res.end();
      return true;
    });
    const url = first.url.replace('http://', 'http://user:secret@');
    const r = await clone(url);
    expect(r.err).toBeNull();
    expect(first.hits.some((h) => String(h.headers.authorization).startsWith('Basic '))).toBe(true);
    expect(other.hits.length).toBeGreaterThan(0);
    expect(other.hits.map((h) => h.headers.authorization ?? null)).toEqual(other.hits.map(() => null));
  });

  it('a redirect loop ends after 10 hops (HTTP); a redirect to file:, ftp:, data: or an invalid URL is refused', async () => {
    const loop = await serve((req, res) => {
      res.writeHead(302, { Location: req.url ?? '/' });
      res.end();
      return true;
    });
    const r = await clone(loop.url);
    expect(r.err?.code).toBe('HTTP');
    expect(r.err?.message).toMatch(/too many redirects/);
    expect(loop.hits.length).toBe(11);
    expect(r.left).toEqual([]);
    for (const target of ['file:///etc/passwd', 'ftp://127.0.0.1/x', 'data:,x', 'http://[::zz]/']) {
      const s = await serve((_req, res) => {
        res.writeHead(301, { Location: target });
        res.end();
        return true;
      });
      const e = await clone(s.url);
      expect(e.err?.code, target).toBe('HTTP');
      expect(e.err?.message).toMatch(/redirect to an (unsupported|invalid) URL/);
      expect(e.left).toEqual([]);
    }
  });
});

describe('replies that never end', () => {
  it('a getbundle reply trickling a byte every 20 ms (never idle): cancel ends it, nothing at DEST', async () => {
    const timers: NodeJS.Timeout[] = [];
    const s = await serve(trickledGetbundle(timers));
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 600);
    const r = await clone(s.url, {}, { idleTimeoutMs: 5000 }, ac.signal);
    for (const t of timers) clearInterval(t);
    expect(r.err?.code).toBe('CANCELLED');
    expect(r.left).toEqual([]);
  });

  it('a getbundle reply trickling a byte every 20 ms (never idle): TIMEOUT from the throughput floor, nothing at DEST', async () => {
    const timers: NodeJS.Timeout[] = [];
    const s = await serve(trickledGetbundle(timers));
    // idle 400 ms (room for a loaded machine's late timers): the floor's window is 2 s of waiting
    // (FLOOR_WINDOW_IDLES), ~100 bytes come
    const r = await clone(s.url, {}, { idleTimeoutMs: 400 });
    for (const t of timers) clearInterval(t);
    expect(r.err?.code, r.err?.message).toBe('TIMEOUT');
    expect(r.err?.message).toMatch(/the server sent only \d+ bytes in \d+ s of waiting \(trickling\)/);
    expect(r.left).toEqual([]);
  });

  it.each(['capabilities', 'batch'])(
    'a %s reply trickling a byte every 20 ms (never idle, below the small-reply bound for days): TIMEOUT from the throughput floor, nothing at DEST',
    async (cmd) => {
      const timers: NodeJS.Timeout[] = [];
      const s = await serve((_req, res, ctx) => {
        if (ctx.cmd !== cmd) return false;
        res.writeHead(200, { 'Content-Type': 'application/mercurial-0.1' });
        timers.push(setInterval(() => res.write('a'), 20));
        return true;
      });
      const r = await clone(s.url, {}, { idleTimeoutMs: 400 });
      for (const t of timers) clearInterval(t);
      expect(r.err?.code, r.err?.message).toBe('TIMEOUT');
      expect(r.err?.message).toMatch(/trickling/);
      expect(r.left).toEqual([]);
    },
  );

  it('an endless capabilities or heads reply is cut at the small-reply bound (LIMIT)', async () => {
    const endless =
      (cmd: string): Script =>
      (_req, res, ctx) => {
        if (ctx.cmd !== cmd) return false;
        res.writeHead(200, { 'Content-Type': 'application/mercurial-0.1' });
        const piece = Buffer.alloc(1 << 20, 0x61);
        const pump = (): void => {
          while (!res.destroyed && res.write(piece));
          if (!res.destroyed) res.once('drain', pump);
        };
        pump();
        return true;
      };
    for (const cmd of ['capabilities', 'batch']) {
      const r = await clone((await serve(endless(cmd))).url);
      expect(r.err?.code, cmd).toBe('LIMIT');
      expect(r.left).toEqual([]);
    }
  });
});

describe('garbage in small replies', () => {
  const batchReply =
    (body: string): Script =>
    (_req, res, ctx) => {
      if (ctx.cmd !== 'batch') return false;
      res.writeHead(200, { 'Content-Type': 'application/mercurial-0.1' });
      res.end(body);
      return true;
    };
  it.each([
    ['heads with garbage hex', `${'zz'.repeat(20)}\n;`],
    ['heads with a short node', `${'ab'.repeat(19)}\n;`],
    ['heads without the final newline', `${'ab'.repeat(20)};`],
    ['known of the wrong length', `${'ab'.repeat(20)}\n;11`],
    ['known with other characters', `${'ab'.repeat(20)}\n;x`],
    ['one result for two commands', `${'ab'.repeat(20)}\n`],
  ])('%s: PROTOCOL, nothing at DEST', async (_what, body) => {
    const r = await clone((await serve(batchReply(body))).url);
    expect(r.err?.code, r.err?.message).toBe('PROTOCOL');
    expect(r.left).toEqual([]);
  });
});

describe('malformed HTTP framing (a raw socket server)', () => {
  const head = 'HTTP/1.1 200 OK\r\nContent-Type: application/mercurial-0.1\r\n';
  it.each([
    ['a 100 KB header', `${head}X-Big: ${'a'.repeat(100_000)}\r\n\r\n`, 'NETWORK'],
    ['a negative Content-Length', `${head}Content-Length: -5\r\n\r\nabc`, 'NETWORK'],
    ['a 20-digit Content-Length', `${head}Content-Length: 99999999999999999999\r\n\r\nabc`, 'NETWORK'],
    ['two Content-Lengths', `${head}Content-Length: 3\r\nContent-Length: 5\r\n\r\nabcde`, 'NETWORK'],
    [
      'a 2^64 chunk that never comes',
      `${head}Transfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFF\r\nabc`,
      'TIMEOUT',
    ],
    ['not HTTP at all', 'garbage\r\n\r\n', 'NETWORK'],
    ['status 999', 'HTTP/1.1 999 Weird\r\nContent-Length: 0\r\n\r\n', 'HTTP'],
  ])('%s: %s', async (_what, reply, code) => {
    const server = net.createServer((s) => {
      s.on('data', () => s.write(reply));
      s.on('error', () => undefined);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    try {
      const port = (server.address() as net.AddressInfo).port;
      const r = await clone(`http://127.0.0.1:${port}/`, {}, { idleTimeoutMs: 300 });
      expect(r.err?.code, r.err?.message).toBe(code);
      expect(r.left).toEqual([]);
    } finally {
      server.close();
    }
  });

  it('interim 1xx replies without end (a 100 Continue every 10 ms, the final reply never comes): TIMEOUT, nothing at DEST', async () => {
    const timers: NodeJS.Timeout[] = [];
    const server = net.createServer((s) => {
      s.once('data', () => timers.push(setInterval(() => s.write('HTTP/1.1 100 Continue\r\n\r\n'), 10)));
      s.on('error', () => undefined);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    try {
      const port = (server.address() as net.AddressInfo).port;
      const r = await clone(`http://127.0.0.1:${port}/`, {}, { idleTimeoutMs: 100 });
      expect(r.err?.code, r.err?.message).toBe('TIMEOUT');
      expect(r.left).toEqual([]);
    } finally {
      for (const t of timers) clearInterval(t);
      server.close();
    }
  });

  it('response headers trickled a byte every 20 ms (never idle, never ending): TIMEOUT, nothing at DEST', async () => {
    const timers: NodeJS.Timeout[] = [];
    const server = net.createServer((s) => {
      s.once('data', () => {
        s.write(head);
        timers.push(setInterval(() => s.write('X'), 20)); // one endless header line
      });
      s.on('error', () => undefined);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    try {
      const port = (server.address() as net.AddressInfo).port;
      // idle 400 ms: the headers must be in within 2 s (FLOOR_WINDOW_IDLES idle timeouts)
      const r = await clone(`http://127.0.0.1:${port}/`, {}, { idleTimeoutMs: 400 });
      expect(r.err?.code, r.err?.message).toBe('TIMEOUT');
      expect(r.err?.message).toMatch(/response headers from 127\.0\.0\.1:\d+ took over 2000 ms/);
      expect(r.left).toEqual([]);
    } finally {
      for (const t of timers) clearInterval(t);
      server.close();
    }
  });
});

describe('a hostile source repository', () => {
  it('its .hg/hgrc (hooks, paths, an ssh command) is never copied, and no hook runs, with any stream or pull', async () => {
    const repo = extractFixture('default', join(work, 'evil'));
    const pwned = join(work, 'pwned');
    writeFileSync(
      join(repo, '.hg', 'hgrc'),
      `[hooks]\nupdate = touch ${pwned}\npreoutgoing = touch ${pwned}\n[ui]\nssh = touch ${pwned}\n[paths]\ndefault = http://evil.example/\n`,
    );
    const s = await startServer({ repo });
    try {
      for (const req of [{ stream: 'v2' }, { stream: 'v1' }, { pull: true }] as Partial<CloneRequest>[]) {
        const parent = join(work, `evil-${nextDest()}`);
        const dest = join(parent, 'clone');
        await cloneFromUrl(
          { kind: 'clone', url: s.url, dest, update: true, ...req },
          new JobContext({ fileEvents: false }),
        );
        const hgrc = readFileSync(join(dest, '.hg', 'hgrc'), 'utf8');
        expect(hgrc, JSON.stringify(req)).toContain(`default = ${s.url}`);
        expect(hgrc).not.toMatch(/hooks|evil|touch/);
        expect(readdirSync(join(dest, '.hg')).filter((n) => /hgrc/.test(n))).toEqual(['hgrc']);
      }
      expect(existsSync(pwned)).toBe(false);
    } finally {
      await s.close();
    }
  });
});

/** An application/mercurial-0.2 body decoded: u8 engine name length, the name, the payload. */
async function decoded02(body: Buffer): Promise<Buffer> {
  const engine = body.toString('latin1', 1, 1 + body[0]!);
  const out: Uint8Array[] = [];
  for await (const c of decompressWire(engine, pieces(body.subarray(1 + body[0]!)))) out.push(c);
  return Buffer.concat(out);
}

describe('a pull reply that goes on past its end', () => {
  it('a pull whose reply trickles (never idle) is cancelled: CANCELLED, the repository as it was', async () => {
    const timers: NodeJS.Timeout[] = [];
    const s = await serve(trickledGetbundle(timers, 2000)); // past the changelog into the transaction
    const repo = join(work, `pull-${nextDest()}`);
    await createEmptyRepository(repo);
    const before = treeHash(repo);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 600);
    const err = await pullFromUrl(
      { kind: 'pull', repo, source: s.url, idleTimeoutMs: 5000 },
      new JobContext({ signal: ac.signal }),
    ).catch((e: unknown) => e);
    for (const t of timers) clearInterval(t);
    expect((err as SluiceError).code, (err as Error).message).toBe('CANCELLED');
    expect(treeHash(repo)).toBe(before);
  });

  it('bytes after the bundle2 end marker of a getbundle reply: MALFORMED, the repository as it was', async () => {
    const s = await serve(async (_req, res, ctx) => {
      if (ctx.cmd !== 'getbundle') return false;
      const b = await ctx.forward();
      // the reply decoded whatever engine the backend chose, re-sent uncompressed with a tail
      res.writeHead(200, { 'Content-Type': 'application/mercurial-0.2' });
      res.end(
        Buffer.concat([Buffer.from('\x04none', 'latin1'), await decoded02(b.body), Buffer.from('junk')]),
      );
      return true;
    });
    const repo = join(work, `pull-${nextDest()}`);
    await createEmptyRepository(repo);
    const before = treeHash(repo);
    const err = await pullFromUrl({ kind: 'pull', repo, source: s.url }, new JobContext()).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SluiceError);
    expect((err as SluiceError).code, (err as Error).message).toBe('MALFORMED');
    expect((err as Error).message).toMatch(/after the end of the bundle2 stream/);
    expect(treeHash(repo)).toBe(before);
  });
});

describe('Content-Encoding the client never asked for (it sends Accept-Encoding: identity)', () => {
  // 64 MiB of zeros in ~64 KB of gzip or deflate: a client that inflated it would hold it
  const bomb = {
    gzip: gzipSync(Buffer.alloc(64 << 20)),
    deflate: deflateSync(Buffer.alloc(64 << 20)),
  };
  it.each([
    ['gzip', 'capabilities'],
    ['deflate', 'capabilities'],
    ['gzip', 'getbundle'],
    ['deflate', 'batch'],
  ] as const)(
    'a %s-encoded %s reply is refused, not inflated: PROTOCOL, nothing at DEST',
    async (enc, cmd) => {
      let accept: string | undefined;
      const s = await serve((req, res, ctx) => {
        if (ctx.cmd !== cmd) return false;
        accept = String(req.headers['accept-encoding']);
        res.writeHead(200, {
          'Content-Type': cmd === 'getbundle' ? 'application/mercurial-0.2' : 'application/mercurial-0.1',
          'Content-Encoding': enc,
          'Content-Length': String(bomb[enc].length),
        });
        res.end(bomb[enc]);
        return true;
      });
      const r = await clone(s.url, { pull: true });
      expect(accept).toBe('identity');
      expect(r.err?.code, r.err?.message).toBe('PROTOCOL');
      expect(r.err?.message).toMatch(new RegExp(`Content-Encoding: ${enc}`));
      expect(r.left).toEqual([]);
    },
  );
});

describe('chunked replies that lie about their chunk sizes (a raw socket server)', () => {
  /** the backend's reply to the same request, its body re-framed by `frame` as chunked */
  async function rawServer(frame: (body: Buffer) => Buffer): Promise<{ url: string; close: () => void }> {
    const server = net.createServer((sock) => {
      let got = '';
      sock.on('data', (d: Buffer) => {
        got += d.toString('latin1');
        const end = got.indexOf('\r\n\r\n');
        if (end < 0) return;
        const path = /^[A-Z]+ (\S+)/.exec(got)![1]!;
        const headers = Object.fromEntries(
          got
            .slice(0, end)
            .split('\r\n')
            .slice(1)
            .map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()])
            .filter(([k]) => k!.startsWith('x-hg')),
        ) as Record<string, string>;
        got = '';
        void fetch(new URL(path, backend.url), { headers }).then(async (b) => {
          const body = Buffer.from(await b.arrayBuffer());
          const cmd = new URL(path, 'http://x').searchParams.get('cmd');
          const type = b.headers.get('content-type') ?? '';
          sock.write(`HTTP/1.1 200 OK\r\nContent-Type: ${type}\r\nTransfer-Encoding: chunked\r\n\r\n`);
          sock.write(cmd === 'getbundle' || cmd === 'stream_out' ? frame(body) : chunked(body));
        });
      });
      sock.on('error', () => undefined);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    return {
      url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/`,
      close: () => server.close(),
    };
  }
  const chunked = (b: Buffer): Buffer =>
    Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n0\r\n\r\n')]);
  it.each([
    [
      'a chunk longer than its size says',
      (b: Buffer) => Buffer.concat([Buffer.from('10\r\n'), b, Buffer.from('\r\n0\r\n\r\n')]),
    ],
    [
      'a chunk shorter than its size says, then the next size',
      (b: Buffer) =>
        Buffer.concat([Buffer.from(`${(b.length + 5).toString(16)}\r\n`), b, Buffer.from('\r\n0\r\n\r\n')]),
    ],
    [
      'a chunk size that is not hex',
      (b: Buffer) => Buffer.concat([Buffer.from('zz\r\n'), b, Buffer.from('\r\n0\r\n\r\n')]),
    ],
    [
      'a negative chunk size',
      (b: Buffer) => Buffer.concat([Buffer.from('-10\r\n'), b, Buffer.from('\r\n0\r\n\r\n')]),
    ],
    ['a 40-digit chunk size', (b: Buffer) => Buffer.concat([Buffer.from(`${'f'.repeat(40)}\r\n`), b])],
    [
      'a chunk extension of 100 KB',
      (b: Buffer) =>
        Buffer.concat([
          Buffer.from(`${b.length.toString(16)};x=${'a'.repeat(100_000)}\r\n`),
          b,
          Buffer.from('\r\n0\r\n\r\n'),
        ]),
    ],
  ])(
    '%s: a typed error, nothing at DEST (or, read whole before the lie, a complete clone)',
    async (what, frame) => {
      const s = await rawServer(frame);
      try {
        for (const req of [{}, { pull: true }] as Partial<CloneRequest>[]) {
          const r = await clone(s.url, req, { idleTimeoutMs: 300 });
          if (r.err === null) {
            // the reply was read whole before the lie (a few bytes after the compressed stream or
            // the stream clone's end, then a next size that never comes): the clone is complete,
            // its store as an honest clone's
            const dest = r.dest;
            expect(what).toMatch(/shorter/);
            const honest = await clone(backend.url, req);
            expect(honest.err).toBeNull();
            const honestDest = honest.dest;
            expect(treeHash(join(dest, '.hg', 'store'))).toBe(treeHash(join(honestDest, '.hg', 'store')));
            continue;
          }
          expect(['NETWORK', 'TIMEOUT', 'TRUNCATED'], r.err.message).toContain(r.err.code);
          expect(r.left).toEqual([]);
        }
      } finally {
        s.close();
      }
    },
  );
});

describe('a pull from a server that trickles or stops mid-frame', () => {
  async function pullFrom(url: string, idleTimeoutMs = 5000): Promise<{ err: SluiceError; same: boolean }> {
    const repo = join(work, `pull-${nextDest()}`);
    await createEmptyRepository(repo);
    const before = treeHash(repo);
    const err = await pullFromUrl({ kind: 'pull', repo, source: url, idleTimeoutMs }, new JobContext()).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SluiceError);
    return { err: err as SluiceError, same: treeHash(repo) === before };
  }

  it('a getbundle reply trickling a byte every 20 ms past the changelog (never idle): TIMEOUT from the throughput floor, the repository as it was', async () => {
    const timers: NodeJS.Timeout[] = [];
    const s = await serve(trickledGetbundle(timers, 2000));
    const r = await pullFrom(s.url, 400);
    for (const t of timers) clearInterval(t);
    expect(r.err.code, r.err.message).toBe('TIMEOUT');
    expect(r.err.message).toMatch(/trickling/);
    expect(r.same).toBe(true);
  });

  it.each([10, 100, 2000, 6000])(
    'a getbundle reply cut after %i bytes (the connection closed mid-frame): TRUNCATED, the repository as it was',
    async (at) => {
      const s = await serve(async (_req, res, ctx) => {
        if (ctx.cmd !== 'getbundle') return false;
        const b = await ctx.forward();
        res.writeHead(200, b.headers);
        res.write(b.body.subarray(0, Math.min(at, b.body.length - 1)));
        setTimeout(() => res.socket?.destroy(), 30);
        return true;
      });
      const r = await pullFrom(s.url);
      expect(r.err.code, r.err.message).toBe('TRUNCATED');
      expect(r.same).toBe(true);
    },
  );
});

describe('a pull whose obsolete markers come through a hostile listkeys reply', () => {
  // the backend (sluice serve, no evolution) offers no bundle2 obsmarkers but pushkey: a pull
  // with evolution on asks `listkeys obsolete` (exchange._pullobsolete), which the script answers
  async function pullWith(reply: (res: import('node:http').ServerResponse) => void): Promise<{
    err: SluiceError;
    same: boolean;
    listkeys: number;
  }> {
    const s = await serve((_req, res, ctx) => {
      if (ctx.cmd !== 'listkeys') return false;
      res.writeHead(200, { 'Content-Type': 'application/mercurial-0.1' });
      reply(res);
      return true;
    });
    const repo = join(work, `pull-${nextDest()}`);
    await createEmptyRepository(repo);
    writeFileSync(join(repo, '.hg', 'hgrc'), '[experimental]\nevolution = all\n');
    const before = treeHash(repo);
    const err = await pullFromUrl({ kind: 'pull', repo, source: s.url }, new JobContext()).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SluiceError);
    return {
      err: err as SluiceError,
      same: treeHash(repo) === before,
      listkeys: s.hits.filter((h) => h.cmd === 'listkeys').length,
    };
  }
  const b85 = (bytes: number[]): string => b85encode(Buffer.from(bytes));
  /** a format-0 marker: no successors, `meta` as metadata, predecessor 0x11 * 20 */
  const fm0 = (meta: string, mdSize = meta.length): number[] => [
    0,
    ...i32(mdSize),
    0,
    ...Buffer.alloc(20, 0x11),
    ...Buffer.from(meta, 'latin1'),
  ];

  it.each([
    ['a character outside base85', 'dump0\tAB"CD', /bad base85 character/],
    ['a dump without its version byte', 'dump0\t', /no version byte/],
    ['an unknown marker format', `dump0\t${b85([7, 1, 2, 3])}`, /unknown version 7/],
    ['a marker cut in its fixed part', `dump0\t${b85([0, 0, 0, 0])}`, /truncated format-0 marker/],
    ['metadata longer than the dump', `dump0\t${b85([0, ...fm0('user:x', 5000)])}`, /metadata is too short/],
    ['a metadata entry without a colon', `dump0\t${b85([0, ...fm0('user')])}`, /without ':'/],
    ['p2 without p1', `dump0\t${b85([0, ...fm0(`p2:${'ab'.repeat(20)}`)])}`, /p2 without p1/],
    [
      'a metadata value of 300 bytes',
      `dump0\t${b85([0, ...fm0(`user:${'u'.repeat(300)}`)])}`,
      /longer than 255/,
    ],
    ['a timezone past 16 bits of minutes', `dump0\t${b85([0, ...fm0('date:0 99999999')])}`, /timezone/],
    [
      'a good dump0 and a broken dump1',
      `dump0\t${b85([0, ...fm0('user:x')])}\ndump1\t${b85([0, 1])}`,
      /truncated format-0 marker/,
    ],
  ])('%s: MALFORMED before anything is written', async (_label, body, message) => {
    const r = await pullWith((res) => res.end(body));
    expect(r.err.code, r.err.message).toBe('MALFORMED');
    expect(r.err.message).toMatch(message);
    expect(r.same).toBe(true);
    expect(r.listkeys).toBe(1);
  });

  it('a reply that never ends: LIMIT at 64 MiB, the repository as it was', async () => {
    const piece = Buffer.alloc(1 << 20, '0');
    let sent = 0;
    const r = await pullWith((res) => {
      res.write('dump0\t');
      const go = (): void => {
        for (;;) {
          if (res.destroyed || sent >= 256 << 20) return void res.destroy();
          sent += piece.length;
          if (!res.write(piece)) return void res.once('drain', go);
        }
      };
      go();
    });
    expect(r.err.code, r.err.message).toBe('LIMIT');
    expect(r.same).toBe(true);
    expect(sent).toBeLessThan(128 << 20);
  });
});
