// Hostile HTTP servers (a scripted server on 127.0.0.1 in front of `sluice serve`, see
// ../wire-faults/harness.ts): redirects that try to take credentials elsewhere or never end,
// replies that trickle or carry garbage, clone bundle manifests pointing anywhere. Each clone
// either succeeds without harm or fails with a typed SluiceError, leaving nothing at DEST.
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { deflateSync, gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/main/engine/errors';
import { JobContext } from '../../src/main/engine/context/job-context';
import { cloneFromUrl, type CloneOptions } from '../../src/main/engine/operations/clone/clone';
import { pullFromUrl } from '../../src/main/engine/operations/pull/pull';
import { createEmptyRepository } from '../../src/main/engine/changegroup';
import { decompressWire } from '../../src/main/engine/protocol/compression-engines';
import { b85encode } from '../../src/main/engine/repo/obsstore';
import { treeHash } from '../interop/changegroup-support';
import { endlessChangesets, i32, partHead, pieces } from './craft';
import { startServer, type RunningServer } from '../../src/main/engine/operations/serve/http-server';
import type { CloneRequest } from '../../src/shared/jobs';
import { FIXTURES, extractFixture, removeDir, tempDir } from '../interop/wire-support';
import { scriptedServer, type Script, type ScriptedServer } from '../wire-faults/harness';

let work = '';
let backend: RunningServer;
const open: ScriptedServer[] = [];

beforeAll(async () => {
  work = tempDir('hostile');
  backend = await startServer({ repo: extractFixture('default', work) });
});

afterAll(async () => {
  for (const s of open) await s.close();
  await backend.close();
  removeDir(work);
});

async function serve(script: Script): Promise<ScriptedServer> {
  const s = await scriptedServer(backend.url, script);
  open.push(s);
  return s;
}

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

let destCount = 0;
async function clone(
  url: string,
  req: Partial<CloneRequest> = {},
  opts: CloneOptions = {},
  signal?: AbortSignal,
): Promise<{ err: SluiceError | null; left: string[]; logs: string[] }> {
  const parent = join(work, `p${destCount++}`);
  const logs: string[] = [];
  const ctx = new JobContext({
    fileEvents: false,
    sink: (e) => void (e.type === 'log' && logs.push(e.message)),
    ...(signal ? { signal } : {}),
  });
  const err = await cloneFromUrl({ kind: 'clone', url, dest: join(parent, 'clone'), ...req }, ctx, {
    idleTimeoutMs: 5000,
    ...opts,
  }).then(
    () => null,
    (e: unknown) => e as SluiceError,
  );
  if (err) expect(err).toBeInstanceOf(SluiceError);
  let left: string[] = [];
  try {
    left = readdirSync(parent);
  } catch {
    /* parent never created */
  }
  return { err, left, logs };
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

describe('clone bundle manifests pointing anywhere', () => {
  async function withManifest(manifest: string): Promise<RunningServer> {
    const s = await startServer({ repo, cloneBundles: { manifest } });
    closers.push(() => s.close());
    return s;
  }
  const closers: (() => Promise<void>)[] = [];
  let repo = '';
  beforeAll(() => {
    repo = extractFixture('default', join(work, 'cb'));
  });
  afterAll(async () => {
    for (const c of closers) await c();
  });

  it('a bundle on another origin is fetched without the credentials the server asked for', async () => {
    const packed1 = readFileSync(join(FIXTURES, 'default', 'packed1.hg'));
    const spec = readFileSync(join(FIXTURES, 'default', 'packed1.spec'), 'utf8').trim();
    const cdn = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Length': String(packed1.length) });
      res.end(packed1);
      return true;
    });
    const inner = await withManifest(`${cdn.url}full.hg BUNDLESPEC=${spec}\n`);
    const guarded = await scriptedServer(inner.url, (req, res) => {
      if (req.headers.authorization) return false;
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="r"' });
      res.end();
      return true;
    });
    open.push(guarded);
    const r = await clone(guarded.url.replace('http://', 'http://user:secret@'));
    expect(r.err).toBeNull();
    expect(r.logs.join('\n')).toMatch(/finished applying clone bundle/);
    expect(cdn.hits.length).toBeGreaterThan(0);
    expect(cdn.hits.map((h) => h.headers.authorization ?? null)).toEqual(cdn.hits.map(() => null));
  });

  it('file:, ftp: and schemeless URLs are filtered out; the clone streams from the server instead', async () => {
    const s = await withManifest(
      ['file:///etc/passwd', 'ftp://127.0.0.1/x.hg', '/relative.hg', 'javascript:alert(1)']
        .map((u) => `${u} BUNDLESPEC=none-packed1;requirements%3Drevlogv1\n`)
        .join(''),
    );
    const r = await clone(s.url);
    expect(r.err).toBeNull();
    expect(r.logs.join('\n')).toMatch(/no compatible clone bundles available on server/);
  });

  it('a clonebundles manifest trickling a byte every 20 ms (never idle): TIMEOUT from the throughput floor, nothing at DEST', async () => {
    const origin = await withManifest('https://example.invalid/full.hg BUNDLESPEC=none-packed1\n');
    const timers: NodeJS.Timeout[] = [];
    const s = await scriptedServer(origin.url, (_req, res, ctx) => {
      if (ctx.cmd !== 'clonebundles') return false;
      res.writeHead(200, { 'Content-Type': 'application/mercurial-0.1' });
      timers.push(setInterval(() => res.write('a'), 20));
      return true;
    });
    open.push(s);
    const r = await clone(s.url, {}, { idleTimeoutMs: 400 });
    for (const t of timers) clearInterval(t);
    expect(s.hits.some((h) => h.cmd === 'clonebundles')).toBe(true);
    expect(r.err?.code, r.err?.message).toBe('TIMEOUT');
    expect(r.err?.message).toMatch(/trickling/);
    expect(r.left).toEqual([]);
  });

  it('a clone bundle that trickles is given up (TIMEOUT, not retried: each resume would trickle again); the clone falls back to the server', async () => {
    const packed1 = readFileSync(join(FIXTURES, 'default', 'packed1.hg'));
    const spec = readFileSync(join(FIXTURES, 'default', 'packed1.spec'), 'utf8').trim();
    const timers: NodeJS.Timeout[] = [];
    let requests = 0;
    const cdn = await serve((req, res) => {
      requests++;
      const from = Number(/bytes=(\d+)-/.exec(String(req.headers.range ?? ''))?.[1] ?? 0);
      res.writeHead(from ? 206 : 200, {
        'Content-Length': String(packed1.length - from),
        ETag: '"x"',
        ...(from ? { 'Content-Range': `bytes ${from}-${packed1.length - 1}/${packed1.length}` } : {}),
      });
      let at = from;
      timers.push(setInterval(() => res.write(packed1.subarray(at, ++at)), 20));
      return true;
    });
    const s = await withManifest(`${cdn.url}full.hg BUNDLESPEC=${spec}\n`);
    const r = await clone(s.url, {}, { idleTimeoutMs: 400 });
    for (const t of timers) clearInterval(t);
    expect(r.err).toBeNull();
    expect(r.logs.join('\n')).toMatch(
      /error fetching bundle: the server sent only \d+ bytes .*trickling.*falling back/,
    );
    expect(requests).toBe(1);
  });

  it('a clone bundle whose Content-Length exceeds the free space is refused before a byte is written (IO, ENOSPC); the clone falls back', async () => {
    const spec = readFileSync(join(FIXTURES, 'default', 'packed1.spec'), 'utf8').trim();
    const huge = 2 ** 52; // 4 PiB
    const cdn = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Length': String(huge) });
      res.write('HGS1UN'); // and then nothing: the old client waited for the rest
      return true;
    });
    const s = await withManifest(`${cdn.url}full.hg BUNDLESPEC=${spec}\n`);
    const r = await clone(s.url, {}, { idleTimeoutMs: 2000 });
    expect(r.err).toBeNull();
    expect(r.logs.join('\n')).toMatch(
      new RegExp(
        `error fetching bundle: not enough space in .*: .*full\\.hg announces ${huge} bytes, \\d+ are free and Sluice leaves \\d+ free; falling back`,
      ),
    );
  });

  it('a bundle URL redirecting to file: or answering garbage without end is given up after its first bytes', async () => {
    let sent = 0;
    const garbage = await serve((req, res) => {
      if (req.url?.startsWith('/redirect')) {
        res.writeHead(302, { Location: 'file:///etc/passwd' });
        res.end();
        return true;
      }
      res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
      const piece = Buffer.alloc(1 << 16, 0x3c);
      const pump = (): void => {
        while (!res.destroyed && sent < 1 << 30 && res.write(piece)) sent += piece.length;
        if (!res.destroyed && sent < 1 << 30) res.once('drain', pump);
      };
      pump();
      return true;
    });
    for (const path of ['redirect', 'endless']) {
      const s = await withManifest(
        `${garbage.url}${path}.hg BUNDLESPEC=none-packed1;requirements%3Drevlogv1\n`,
      );
      const r = await clone(s.url);
      expect(r.err, path).toBeNull();
      expect(r.logs.join('\n')).toMatch(
        path === 'redirect' ? /redirect to an unsupported URL/ : /not a Mercurial bundle: starts with "<<<<"/,
      );
      expect(r.logs.join('\n')).toMatch(/falling back to the server/);
    }
    // what the server managed to push into socket buffers before the client hung up, not a gigabyte
    expect(sent).toBeLessThan(64 << 20);
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
        const parent = join(work, `evil-${destCount++}`);
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
    const repo = join(work, `pull-${destCount++}`);
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
    const repo = join(work, `pull-${destCount++}`);
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

describe('input without a length that never ends, against the free space', () => {
  // the free space as a fake probe sees it: 8 MiB, so the guard keeps half (4 MiB) free and the
  // test writes a few MiB, not a disk's worth; the servers give up at CAP whatever happens
  const freeSpace = { probe: () => 8 << 20 };
  const CAP = 128 << 20;

  /**
   * A clone from a server whose clone bundle manifest points at `bundleUrl`/full.hg, with 8 MiB
   * free (freeSpace): the clone's log lines and the folder that holds its destination.
   */
  async function cloneThroughBundleAt(
    bundleUrl: string,
    name: string,
  ): Promise<{ logs: string[]; parent: string }> {
    const spec = readFileSync(join(FIXTURES, 'default', 'packed1.spec'), 'utf8').trim();
    const repo = extractFixture('default', join(work, `cb-${name}-${destCount++}`));
    const origin = await startServer({
      repo,
      cloneBundles: { manifest: `${bundleUrl}full.hg BUNDLESPEC=${spec}\n` },
    });
    try {
      const parent = join(work, `p${destCount++}`);
      const logs: string[] = [];
      const ctx = new JobContext({
        fileEvents: false,
        freeSpace,
        sink: (e) => void (e.type === 'log' && logs.push(e.message)),
      });
      await cloneFromUrl({ kind: 'clone', url: origin.url, dest: join(parent, 'clone') }, ctx, {
        idleTimeoutMs: 5000,
      });
      return { logs, parent };
    } finally {
      await origin.close();
    }
  }

  /** Writes `next()` pieces to res with backpressure until the client hangs up or CAP is sent. */
  function pump(res: import('node:http').ServerResponse, next: () => Buffer): { sent: number } {
    const state = { sent: 0 };
    const go = (): void => {
      for (;;) {
        if (res.destroyed) return;
        if (state.sent >= CAP) return void res.destroy();
        const b = next();
        state.sent += b.length;
        if (!res.write(b)) return void res.once('drain', go);
      }
    };
    go();
    return state;
  }

  it('a pull whose getbundle reply (chunked, no Content-Length) adds changesets without end stops with IO ENOSPC before the reserve, the repository as it was', async () => {
    let state = { sent: 0 };
    const s = await serve((_req, res, ctx) => {
      if (ctx.cmd !== 'getbundle') return false;
      res.writeHead(200, { 'Content-Type': 'application/mercurial-0.2' });
      res.write(Buffer.concat([Buffer.from('\x04none', 'latin1'), Buffer.from('HG20'), i32(0)]));
      // a changegroup part whose payload chunks never end
      res.write(partHead('CHANGEGROUP', [['version', '02']], 0).subarray(0, -4));
      const changesets = endlessChangesets();
      state = pump(res, () => {
        const c = changesets.next().value as Buffer;
        return Buffer.concat([i32(c.length), c]);
      });
      return true;
    });
    const repo = join(work, `pull-${destCount++}`);
    await createEmptyRepository(repo);
    const before = treeHash(repo);
    const err = await pullFromUrl({ kind: 'pull', repo, source: s.url }, new JobContext({ freeSpace })).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SluiceError);
    expect((err as SluiceError).code, (err as Error).message).toBe('IO');
    expect((err as SluiceError).details).toMatchObject({ errno: 'ENOSPC', free: 8 << 20, reserve: 4 << 20 });
    expect((err as Error).message).toMatch(
      /not enough space in .*: the transaction stopped after \d+ bytes: 8388608 were free when it started, and Sluice leaves 4194304 free/,
    );
    expect(treeHash(repo)).toBe(before);
    // the ~8 MiB the guard let through, and what socket buffers held when the client hung up:
    // far from the cap
    expect(state.sent).toBeLessThan(CAP / 2);
  });

  it('a clone bundle whose Content-Length fits the free space but not the free space less the reserve is refused before a byte is written (one rule with the guard); the clone falls back', async () => {
    const declared = 6 << 20; // 8 MiB free, 4 MiB kept: the guard would stop it at 4 MiB
    const cdn = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Length': String(declared) });
      res.end(Buffer.concat([Buffer.from('HGS1UN'), Buffer.alloc(declared - 6, 0x2a)]));
      return true;
    });
    const { logs, parent } = await cloneThroughBundleAt(cdn.url, 'declared');
    expect(logs.join('\n')).toMatch(
      /error fetching bundle: not enough space in .*: .*full\.hg announces 6291456 bytes, 8388608 are free and Sluice leaves 4194304 free; falling back/,
    );
    expect(logs.join('\n')).not.toMatch(/stopped after/);
    expect(readdirSync(parent)).toEqual(['clone']);
  });

  it('a clone bundle without Content-Length that never ends is given up at the reserve (IO, ENOSPC); the clone falls back to the server', async () => {
    let state = { sent: 0 };
    const cdn = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
      res.write('HGS1UN'); // a bundle's magic, then bytes without end
      const piece = Buffer.alloc(1 << 16, 0x2a);
      state = pump(res, () => piece);
      return true;
    });
    const { logs, parent } = await cloneThroughBundleAt(cdn.url, 'endless');
    expect(logs.join('\n')).toMatch(
      /error fetching bundle: not enough space in .*: the download of .*full\.hg stopped after \d+ bytes: 8388608 were free when it started, and Sluice leaves 4194304 free; falling back/,
    );
    expect(readdirSync(parent)).toEqual(['clone']);
    expect(state.sent).toBeLessThan(CAP / 2);
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
            const dest = join(work, `p${destCount - 1}`, 'clone');
            expect(what).toMatch(/shorter/);
            const honest = await clone(backend.url, req);
            expect(honest.err).toBeNull();
            const honestDest = join(work, `p${destCount - 1}`, 'clone');
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
    const repo = join(work, `pull-${destCount++}`);
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

describe('a clone bundle manifest with thousands of entries', () => {
  it('is parsed, the first compatible entry alone is tried (as hg), the filtered ones are logged in bounded number, and the clone falls back once it fails', async () => {
    const spec = readFileSync(join(FIXTURES, 'default', 'packed1.spec'), 'utf8').trim();
    const cdn = await serve((_req, res) => {
      res.writeHead(404);
      res.end();
      return true;
    });
    const manifest =
      Array.from({ length: 5000 }, (_, i) => `${cdn.url}b${i}.hg BUNDLESPEC=nonsense-v9\n`).join('') +
      Array.from({ length: 5000 }, (_, i) => `${cdn.url}c${i}.hg BUNDLESPEC=${spec}\n`).join('');
    const repo = extractFixture('default', join(work, `cb-many-${destCount++}`));
    const origin = await startServer({ repo, cloneBundles: { manifest } });
    try {
      const r = await clone(origin.url);
      expect(r.err).toBeNull();
      expect(cdn.hits.map((h) => h.path)).toEqual(['/c0.hg']);
      // why each entry was filtered: the first 100 said, then a count (not 5000 log events)
      const filtering = r.logs.filter((l) => l.startsWith('filtering '));
      expect(filtering).toHaveLength(100);
      expect(filtering[0]).toMatch(/^filtering .*b0\.hg because unsupported bundle spec/);
      expect(r.logs).toContain('filtered 4900 more clone bundle entries');
      expect(r.logs.join('\n')).toMatch(/HTTP error fetching bundle: 404.*falling back/);
    } finally {
      await origin.close();
    }
  });
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
    const repo = join(work, `pull-${destCount++}`);
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
