// Hostile clone bundle servers (scripted servers on 127.0.0.1 in front of `sluice serve`, see
// server-support.ts): manifests pointing anywhere or listing thousands of entries, bundles that
// trickle, redirect, lie about their length or never end against the free space. Each clone either
// succeeds without harm (falling back to the server) or fails with a typed SluiceError.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/main/engine/errors';
import { JobContext } from '../../src/main/engine/context/job-context';
import { cloneFromUrl } from '../../src/main/engine/operations/clone/clone';
import { pullFromUrl } from '../../src/main/engine/operations/pull/pull';
import { createEmptyRepository } from '../../src/main/engine/changegroup';
import { treeHash } from '../interop/changegroup-support';
import { endlessChangesets, i32, partHead } from './craft';
import { startServer, type RunningServer } from '../../src/main/engine/operations/serve/http-server';
import { FIXTURES, extractFixture } from '../interop/wire-support';
import { scriptedServer } from '../wire-faults/harness';
import { clone, nextDest, open, serve, useHostileBackend, work } from './server-support';

useHostileBackend();

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
    const repo = extractFixture('default', join(work, `cb-${name}-${nextDest()}`));
    const origin = await startServer({
      repo,
      cloneBundles: { manifest: `${bundleUrl}full.hg BUNDLESPEC=${spec}\n` },
    });
    try {
      const parent = join(work, `p${nextDest()}`);
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
    const repo = join(work, `pull-${nextDest()}`);
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
    const repo = extractFixture('default', join(work, `cb-many-${nextDest()}`));
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
