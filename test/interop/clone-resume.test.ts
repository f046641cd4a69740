// Clone bundle downloads that stop and resume, against a real nginx (Range, If-Range, strong
// ETags) behind a fault proxy that counts the bytes it serves: a drop every MiB, kill -9 of the
// CLI at half the bundle and the same command again, the bundle changed between two ranges, a
// bundle cut short for good, a server announcing more than it has, a digest mismatch. Each ends in
// a clean resume or a clear error, nothing at DEST on error, and a clone equal to hg's.

import { execFile, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobContext } from '../../src/main/engine/context/job-context';
import type { RetryEvent, SluiceEvent } from '../../src/shared/events';
import { cloneFromUrl } from '../../src/main/engine/operations/clone/clone';
import { startServer, type RunningServer } from '../../src/main/engine/operations/serve/http-server';
import { PartialStore } from '../../src/main/engine/downloads/partial-store';
import { CHANGED_ON_SERVER } from '../../src/main/engine/downloads/resumable-download';
import {
  ROOT,
  expectSameClone,
  hgStreamReference,
  type CloneView,
  hgAsync,
  missing,
  removeDir,
  skipNote,
  startNginx,
  tempDir,
  type Nginx,
} from './wire-support';

const MiB = 1 << 20;
const SLUICE_BIN = join(ROOT, 'bin', 'sluice.cjs');

/** What the proxy does to the bundle's responses; offsets are positions in the file. */
interface FaultPlan {
  /** close each response after this many body bytes */
  cutEvery?: number;
  /** close any response on reaching this offset (a bundle that is never served past it) */
  cutAt?: number;
  /** stop sending (connection kept open) on reaching this offset */
  holdAt?: number;
  /** cut only the first response (cutEvery) */
  once?: boolean;
  /** run once, when the first cut happens */
  onCut?: () => void;
}

interface FaultProxy {
  url: string;
  served: number;
  requests: string[];
  plan: FaultPlan;
  close(): void;
}

/** A proxy in front of nginx that passes Range and If-Range and applies `plan` to the bodies. */
async function startFaultProxy(upstream: string): Promise<FaultProxy> {
  const held = new Set<http.ServerResponse>();
  const proxy: FaultProxy = { url: '', served: 0, requests: [], plan: {}, close: () => undefined };
  const server = http.createServer((req, res) => {
    proxy.requests.push(`${req.headers.range ?? '-'} if-range=${req.headers['if-range'] ?? '-'}`);
    const headers: http.OutgoingHttpHeaders = {};
    if (req.headers.range) headers.range = req.headers.range;
    if (req.headers['if-range']) headers['if-range'] = String(req.headers['if-range']);
    const up = http.get(`${upstream}${req.url}`, { headers }, (ur) => {
      res.writeHead(ur.statusCode ?? 502, ur.headers);
      res.flushHeaders();
      const from = Number(/^bytes (\d+)-/.exec(String(ur.headers['content-range'] ?? ''))?.[1] ?? 0);
      let sent = 0;
      let stopped = false;
      ur.on('data', (c: Buffer) => {
        if (stopped) return;
        const plan = proxy.plan;
        const at = from + sent;
        const limits = [
          plan.cutEvery !== undefined ? plan.cutEvery - sent : Infinity,
          plan.cutAt !== undefined ? plan.cutAt - at : Infinity,
          plan.holdAt !== undefined ? plan.holdAt - at : Infinity,
        ];
        const room = Math.max(0, Math.min(...limits));
        const part = c.subarray(0, room);
        sent += part.length;
        proxy.served += part.length;
        if (part.length === c.length) return void res.write(part);
        stopped = true;
        ur.destroy();
        if (plan.holdAt !== undefined && room === limits[2]) {
          res.write(part);
          return void held.add(res);
        }
        const onCut = plan.onCut;
        plan.onCut = undefined;
        if (plan.once) plan.cutEvery = undefined;
        onCut?.();
        // a FIN after the bytes written (a destroy could reset the connection and lose bytes in flight)
        res.write(part, () => res.socket?.end());
      });
      ur.on('end', () => stopped || res.end());
    });
    up.on('error', () => res.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.close = () => {
    for (const r of held) r.socket?.destroy();
    server.closeAllConnections();
    server.close();
  };
  return proxy;
}

/** A server whose Content-Length and Content-Range totals promise 1000 bytes more than it has. */
async function startShortServer(file: string): Promise<{ url: string; close(): void }> {
  const body = readFileSync(file);
  const claimed = body.length + 1000;
  const server = http.createServer((req, res) => {
    const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    const from = m ? Number(m[1]) : 0;
    if (from >= body.length) {
      res.writeHead(416, { 'content-range': `bytes */${claimed}` });
      return void res.end();
    }
    const common = { etag: '"short-1"', 'accept-ranges': 'bytes' };
    if (m)
      res.writeHead(206, {
        ...common,
        'content-length': claimed - from,
        'content-range': `bytes ${from}-${claimed - 1}/${claimed}`,
      });
    else res.writeHead(200, { ...common, 'content-length': claimed });
    res.write(body.subarray(from), () => res.socket?.end());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

describe.skipIf(missing('hg', 'nginx'))(
  `clone bundle downloads that resume${skipNote('hg', 'nginx')}`,
  () => {
    let work = '';
    let repo = '';
    let www = '';
    let bundle = '';
    let bundleSize = 0;
    let reference = '';
    let refView: CloneView;
    let nginx: Nginx | null = null;
    let proxy: FaultProxy;
    let n = 0;
    const servers: RunningServer[] = [];

    /** A sluice server of the repository whose manifest lists `entry`. */
    async function serverWith(entry: string): Promise<string> {
      const s = await startServer({ repo, cloneBundles: { manifest: `${entry}\n` } });
      servers.push(s);
      return s.url;
    }

    /** A clone with the partial downloads in `downloads`; cancelled on a log line `cancelOn` matches. */
    async function clone(
      url: string,
      downloads: string,
      cancelOn?: RegExp,
    ): Promise<{ dest: string; via: string; logs: string[]; retries: RetryEvent[] }> {
      const dest = join(work, `clone-${n++}`);
      const logs: string[] = [];
      const retries: RetryEvent[] = [];
      const cancel = new AbortController();
      const ctx = new JobContext({
        fileEvents: false,
        signal: cancel.signal,
        downloads: { dir: downloads, maxBytes: 64 * MiB },
        sink: (e: SluiceEvent) => {
          if (e.type === 'log') logs.push(e.message);
          if (e.type === 'log' && cancelOn?.test(e.message)) cancel.abort();
          if (e.type === 'retry') retries.push(e);
        },
      });
      const res = await cloneFromUrl({ kind: 'clone', url, dest, stream: 'auto' }, ctx, {
        downloadRetries: 3,
        downloadRetryDelayMs: 20,
      });
      return { dest, via: res.via, logs, retries };
    }

    const expectSameAsReference = (dest: string): Promise<void> => expectSameClone(dest, reference, refView);

    const partials = (dir: string): string[] =>
      existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.part')) : [];

    beforeAll(async () => {
      work = tempDir('resume');
      repo = join(work, 'repo');
      expect((await hgAsync(['init', repo])).status).toBe(0);
      // incompressible files: the bundle is as large as they are (8 MiB), so MiB offsets mean something
      for (let i = 0; i < 8; i++) writeFileSync(join(repo, `blob${i}.bin`), randomBytes(MiB));
      const commit = await hgAsync(['-R', repo, 'commit', '-A', '-q', '-m', 'blobs', '-u', 'test <t@t>']);
      expect(commit.status, commit.stderr).toBe(0);
      expect((await hgAsync(['-R', repo, 'bookmark', 'main'])).status).toBe(0);
      www = join(work, 'www');
      mkdirSync(www);
      bundle = join(www, 'full.hg');
      const made = await hgAsync(['-R', repo, 'debugcreatestreamclonebundle', bundle]);
      expect(made.status, made.stderr).toBe(0);
      bundleSize = statSync(bundle).size;
      expect(bundleSize).toBeGreaterThan(8 * MiB);
      nginx = await startNginx(www, join(work, 'nginx'));
      proxy = await startFaultProxy(nginx.url);
      reference = join(work, 'reference');
      refView = await hgStreamReference(repo, reference);
    }, 120_000);

    afterAll(async () => {
      for (const s of servers) await s.close();
      proxy?.close();
      nginx?.stop();
      if (work) removeDir(work);
    });

    it('a connection dropped every MiB: resumed in process with backoff events, at most 1.1x the bundle fetched', async () => {
      const downloads = join(work, 'dl-drops');
      proxy.plan = { cutEvery: MiB };
      proxy.served = 0;
      const { dest, via, retries } = await clone(
        await serverWith(`${proxy.url}/full.hg BUNDLESPEC=none-packed1`),
        downloads,
      );
      proxy.plan = {};
      expect(via).toBe('clone-bundle');
      // one wait per cut at least; a cut may lose what the socket held unread (fetched again)
      expect(retries.length).toBeGreaterThanOrEqual(Math.ceil(bundleSize / MiB) - 1);
      // progress between two cuts: every wait is a first attempt with the first delay
      for (const r of retries) expect([r.attempt, r.maxAttempts, r.waitMs]).toEqual([1, 3, 20]);
      for (let i = 1; i < retries.length; i++)
        expect(retries[i]!.bytes).toBeGreaterThan(retries[i - 1]!.bytes);
      expect(proxy.served / bundleSize).toBeLessThanOrEqual(1.1);
      await expectSameAsReference(dest);
      expect(partials(downloads)).toEqual([]);
    });

    it('kill -9 of `sluice clone` at half the bundle, then the same command: continues (≤ 1.1x bytes)', async () => {
      const cache = join(work, 'cache-kill');
      const env = { ...process.env, SLUICE_FROM_SOURCE: '1', SLUICE_CACHE_DIR: cache };
      const url = await serverWith(`${proxy.url}/full.hg BUNDLESPEC=none-packed1`);
      const dest = join(work, 'clone-kill');
      const half = Math.floor(bundleSize / 2);
      proxy.plan = { holdAt: half };
      proxy.served = 0;
      const child = spawn(process.execPath, [SLUICE_BIN, 'clone', '-U', url, dest], { env, stdio: 'ignore' });
      const exited = new Promise((r) => child.on('exit', r));
      // the bytes served are on disk before the kill (a kill loses only what is in flight)
      const dir = join(cache, 'downloads');
      const onDisk = (): number => partials(dir).reduce((s, f) => s + statSync(join(dir, f)).size, 0);
      while (onDisk() < half) {
        expect(child.exitCode).toBeNull();
        await new Promise((r) => setTimeout(r, 50));
      }
      process.kill(child.pid!, 'SIGKILL');
      await exited;
      expect(existsSync(dest)).toBe(false);
      proxy.plan = {};
      const listed = await run(['downloads', 'list', '--json'], env);
      expect(listed.code, listed.stderr).toBe(0);
      const [entry] = JSON.parse(listed.stdout) as { bytes: number; total: number; dest: string }[];
      expect(entry).toMatchObject({ bytes: half, total: bundleSize, dest });

      const again = await run(['clone', '-U', url, dest], env);
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toContain(`resuming the partial download at ${half} of ${bundleSize} bytes`);
      const ratio = proxy.served / bundleSize;
      console.log(`bytes served after a kill at 50% and a second run: ${ratio.toFixed(3)}x the bundle`);
      expect(ratio).toBeLessThanOrEqual(1.1);
      await expectSameAsReference(dest);
      expect(partials(dir)).toEqual([]);
    });

    it('the bundle changed between two ranges: If-Range brings the new one, from zero, and says so', async () => {
      const downloads = join(work, 'dl-changed');
      const later = new Date(Date.now() + 60_000);
      proxy.plan = { cutEvery: 3 * MiB, once: true, onCut: () => utimesSync(bundle, later, later) };
      proxy.served = 0;
      proxy.requests.length = 0;
      const url = await serverWith(`${proxy.url}/full.hg BUNDLESPEC=none-packed1`);
      try {
        const { dest, via, logs } = await clone(url, downloads);
        expect(via).toBe('clone-bundle');
        expect(logs).toContain(CHANGED_ON_SERVER);
        expect(proxy.requests[1]).toMatch(/^bytes=\d+- if-range="/);
        expect(proxy.served).toBe(3 * MiB + bundleSize);
        await expectSameAsReference(dest);
      } finally {
        proxy.plan = {};
      }
    });

    it('a bundle never served past 2 MiB: kept while the fallback fails, swept once the server clones', async () => {
      const downloads = join(work, 'dl-cut');
      const url = await serverWith(`${proxy.url}/full.hg BUNDLESPEC=none-packed1`);
      const store = new PartialStore({ dir: downloads, maxBytes: 64 * MiB });
      proxy.plan = { cutAt: 2 * MiB };
      try {
        // the retries give up; the clone then fails too (cancelled as it turns to the server)
        const falling = /error fetching bundle: .*; falling back to the server/;
        const first = clone(url, downloads, falling);
        await expect(first).rejects.toMatchObject({ code: 'CANCELLED' });
        expect(existsSync(join(work, `clone-${n - 1}`))).toBe(false);
        const kept = await store.list();
        expect(kept.map((p) => [p.bytes, p.total])).toEqual([[2 * MiB, bundleSize]]);

        const { dest, via, logs, retries } = await clone(url, downloads);
        expect(logs).toContain(`resuming the partial download at ${2 * MiB} of ${bundleSize} bytes`);
        // no byte comes any more: three attempts, the delay doubling, then the server stream
        expect(retries.map((r) => [r.attempt, r.waitMs])).toEqual([
          [1, 20],
          [2, 40],
          [3, 80],
        ]);
        expect(logs.join('\n')).toMatch(falling);
        expect(via).not.toBe('clone-bundle');
        await expectSameAsReference(dest);
        expect(await store.list()).toEqual([]);
      } finally {
        proxy.plan = {};
      }
    });

    it('a server that serves fewer bytes than its Content-Range total: a clear warning, the server stream', async () => {
      const short = await startShortServer(bundle);
      const downloads = join(work, 'dl-short');
      try {
        const { dest, via, logs } = await clone(
          await serverWith(`${short.url}/full.hg BUNDLESPEC=none-packed1`),
          downloads,
        );
        expect(via).not.toBe('clone-bundle');
        expect(logs.join('\n')).toMatch(/error fetching bundle: HTTP error fetching bundle: 416/);
        await expectSameAsReference(dest);
        expect(partials(downloads)).toEqual([]);
      } finally {
        short.close();
      }
    });

    it('DIGEST: a mismatch fails the clone (typed, nothing at DEST, no partial); the right digests pass', async () => {
      const bytes = readFileSync(bundle);
      const sha256 = createHash('sha256').update(bytes).digest('hex');
      const sha512 = createHash('sha512').update(bytes).digest('hex');
      const downloads = join(work, 'dl-digest');
      const wrong = `${proxy.url}/full.hg BUNDLESPEC=none-packed1 DIGEST=sha256:${'0'.repeat(64)}`;
      const bad = clone(await serverWith(wrong), downloads);
      await expect(bad).rejects.toMatchObject({ code: 'DIGEST_MISMATCH' });
      expect(existsSync(join(work, `clone-${n - 1}`))).toBe(false);
      expect(partials(downloads)).toEqual([]);
      const right = `${proxy.url}/full.hg BUNDLESPEC=none-packed1 DIGEST=sha256:${sha256},sha512:${sha512}`;
      const { dest, via } = await clone(await serverWith(right), downloads);
      expect(via).toBe('clone-bundle');
      await expectSameAsReference(dest);
    });
  },
);

function run(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [SLUICE_BIN, ...args],
      { env, encoding: 'utf8', timeout: 120_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}
