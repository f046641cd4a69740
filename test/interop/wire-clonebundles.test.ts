// Clone bundles served by a real nginx (static files, Range support): the manifest advertised by
// sluice serve and by hg serve (clonebundles extension), the bundles made by real hg (the fixture's
// packed1.hg and stream-v2.hg), applied by Sluice's client and by hg's; a download cut mid-body is
// resumed with Range; a stale or missing bundle falls back to the server's stream.

import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobContext } from '../../src/main/engine/context/job-context';
import type { SluiceEvent } from '../../src/shared/events';
import { cloneFromUrl } from '../../src/main/engine/operations/clone/clone';
import { startServer, type RunningServer } from '../../src/main/engine/operations/serve/http-server';
import {
  FIXTURES,
  freePort,
  startNginx,
  type Nginx,
  expectSameClone,
  hgStreamReference,
  type CloneView,
  extractFixture,
  missing,
  skipNote,
  hgAsync,
  removeDir,
  startHgServe,
  tempDir,
  type HgServer,
} from './wire-support';

describe.skipIf(missing('hg', 'nginx'))(`clone bundles over nginx${skipNote('hg', 'nginx')}`, () => {
  let work = '';
  let nginx: Nginx | null = null;
  let nginxUrl = '';
  let repo = '';
  let reference = '';
  let refView: CloneView;
  let sluice: RunningServer;
  let hgServe: HgServer;
  let cutter: http.Server;
  let cutterUrl = '';
  const cutterLog: string[] = [];
  let n = 0;

  beforeAll(async () => {
    work = tempDir('cb');
    const www = join(work, 'www');
    mkdirSync(www);
    copyFileSync(join(FIXTURES, 'default', 'packed1.hg'), join(www, 'full.packed1.hg'));
    copyFileSync(join(FIXTURES, 'default', 'stream-v2.hg'), join(www, 'full.v2.hg'));
    nginx = await startNginx(www, join(work, 'nginx'));
    nginxUrl = nginx.url;

    // in front of nginx: the first request of each bundle is cut after 40 000 bytes
    const cutOnce = new Set<string>();
    cutter = http.createServer((req, res) => {
      cutterLog.push(`${req.url} range=${req.headers.range ?? '-'}`);
      const up = http.get(
        `${nginxUrl}${req.url}`,
        {
          headers: {
            ...(req.headers.range ? { range: req.headers.range } : {}),
            ...(req.headers['if-range'] ? { 'if-range': String(req.headers['if-range']) } : {}),
          },
        },
        (ur) => {
          res.writeHead(ur.statusCode ?? 502, ur.headers);
          if (cutOnce.has(req.url ?? '')) return void ur.pipe(res);
          cutOnce.add(req.url ?? '');
          let sent = 0;
          ur.on('data', (c: Buffer) => {
            if (sent >= 40_000) return;
            const part = c.subarray(0, 40_000 - sent);
            sent += part.length;
            res.write(part);
            if (sent >= 40_000) setTimeout(() => res.socket?.destroy(), 20);
          });
        },
      );
      up.on('error', () => res.destroy());
    });
    await new Promise<void>((r) => cutter.listen(0, '127.0.0.1', () => r()));
    cutterUrl = `http://127.0.0.1:${(cutter.address() as AddressInfo).port}`;

    repo = extractFixture('default', work);
    reference = join(work, 'reference');
    refView = await hgStreamReference(repo, reference);
    // a stale bundle: the repository as of rev 2 (the server has 3 more changesets)
    const partial = join(work, 'partial');
    expect((await hgAsync(['clone', '-q', '-U', '-r', '2', repo, partial])).status).toBe(0);
    expect(
      (await hgAsync(['-R', partial, 'debugcreatestreamclonebundle', join(www, 'stale.packed1.hg')])).status,
    ).toBe(0);
    const spec = (f: string): string => readFileSync(join(FIXTURES, 'default', f), 'utf8').trim();
    writeFileSync(
      join(repo, '.hg', 'clonebundles.manifest'),
      `${nginxUrl}/full.packed1.hg BUNDLESPEC=${spec('packed1.spec')}\n` +
        `${nginxUrl}/full.v2.hg BUNDLESPEC=none-v2;stream=v2\n`,
    );
    sluice = await startServer({ repo });
    hgServe = await startHgServe(repo, ['extensions.clonebundles=']);
  }, 120_000);

  afterAll(async () => {
    await sluice?.close();
    hgServe?.stop();
    cutter?.close();
    nginx?.stop();
    if (work) removeDir(work);
  });

  async function sluiceClone(
    url: string,
    stream: 'auto' | 'v1' | 'v2' = 'auto',
  ): Promise<{ dest: string; via: string; logs: string[] }> {
    const dest = join(work, `clone-${n++}`);
    const logs: string[] = [];
    const ctx = new JobContext({
      fileEvents: false,
      sink: (e: SluiceEvent) => e.type === 'log' && logs.push(e.message),
    });
    const res = await cloneFromUrl({ kind: 'clone', url, dest, stream }, ctx, { downloadRetries: 3 });
    return { dest, via: res.via, logs };
  }

  const expectSameAsReference = (dest: string): Promise<void> => expectSameClone(dest, reference, refView);

  it('sluice client <- sluice serve: applies the first stream bundle of the manifest (packed1)', async () => {
    const { dest, via, logs } = await sluiceClone(sluice.url);
    expect(via).toBe('clone-bundle');
    expect(logs.join('\n')).toContain(`applying clone bundle from ${nginxUrl}/full.packed1.hg`);
    await expectSameAsReference(dest);
  });

  it('--stream v2 takes the v2 stream bundle, --stream v1 the packed1 one', async () => {
    const v2 = await sluiceClone(sluice.url, 'v2');
    expect(v2.logs.join('\n')).toContain('/full.v2.hg');
    await expectSameAsReference(v2.dest);
    const v1 = await sluiceClone(sluice.url, 'v1');
    expect(v1.logs.join('\n')).toContain('/full.packed1.hg');
    await expectSameAsReference(v1.dest);
  });

  it('sluice client <- hg serve with the clonebundles extension', async () => {
    const { dest, via } = await sluiceClone(hgServe.url);
    expect(via).toBe('clone-bundle');
    await expectSameAsReference(dest);
  });

  it('hg client <- sluice serve: hg applies the advertised bundle', async () => {
    const dest = join(work, `hgclone-${n++}`);
    const r = await hgAsync(['clone', '--stream', '-U', sluice.url, dest]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain(`applying clone bundle from ${nginxUrl}/full.packed1.hg`);
    await expectSameAsReference(dest);
  });

  it('a download cut mid-body resumes with Range (nginx answers 206)', async () => {
    const other = await startServer({
      repo,
      cloneBundles: { manifest: `${cutterUrl}/full.v2.hg BUNDLESPEC=none-v2;stream=v2\n` },
    });
    try {
      const { dest, via, logs } = await sluiceClone(other.url);
      expect(via).toBe('clone-bundle');
      expect(logs.join('\n')).toMatch(/interrupted after 40000 bytes.*retrying in/);
      expect(cutterLog).toEqual(['/full.v2.hg range=-', '/full.v2.hg range=bytes=40000-']);
      await expectSameAsReference(dest);
    } finally {
      await other.close();
    }
  });

  it('a stale bundle (lacking the server heads) or a missing one: the server stream instead', async () => {
    const stale = await startServer({
      repo,
      cloneBundles: { manifest: `${nginxUrl}/stale.packed1.hg BUNDLESPEC=none-packed1\n` },
    });
    const missing = await startServer({
      repo,
      cloneBundles: { manifest: `${nginxUrl}/nope.hg BUNDLESPEC=none-packed1\n` },
    });
    try {
      const a = await sluiceClone(stale.url);
      expect(a.via).toBe('stream-v2');
      expect(a.logs.join('\n')).toMatch(/lacks 1 of the server's heads/);
      await expectSameAsReference(a.dest);
      const b = await sluiceClone(missing.url);
      expect(b.via).toBe('stream-v2');
      expect(b.logs.join('\n')).toMatch(/error fetching bundle: HTTP error fetching bundle: 404/);
      await expectSameAsReference(b.dest);
    } finally {
      await stale.close();
      await missing.close();
    }
  });

  it('sluice serve --clone-bundle FILE serves the file itself, with Range', async () => {
    const own = await startServer({
      repo,
      cloneBundles: { manifest: '', files: [{ path: join(FIXTURES, 'default', 'stream-v2.hg') }] },
    });
    try {
      const manifest = await (await fetch(`${own.url}?cmd=clonebundles`)).text();
      expect(manifest).toMatch(
        /^http:\/\/127\.0\.0\.1:\d+\/\.sluice\/bundles\/0\/stream-v2\.hg BUNDLESPEC=none-v2;stream=v2;requirements%3D/,
      );
      const url = manifest.split(' ')[0]!;
      const part = await fetch(url, { headers: { Range: 'bytes=10-19' } });
      expect(part.status).toBe(206);
      expect(Buffer.from(await part.arrayBuffer())).toEqual(
        readFileSync(join(FIXTURES, 'default', 'stream-v2.hg')).subarray(10, 20),
      );
      const { dest, via } = await sluiceClone(own.url);
      expect(via).toBe('clone-bundle');
      await expectSameAsReference(dest);
    } finally {
      await own.close();
    }
  });

  it("hg client <- sluice serve --clone-bundle FILE: the bundle's URL is the server's own address (or --public-url), whatever Host the request named", async () => {
    const file = join(FIXTURES, 'default', 'packed1.hg');
    const own = await startServer({ repo, cloneBundles: { manifest: '', files: [{ path: file }] } });
    const port = await freePort();
    const pub = await startServer({
      repo,
      port,
      publicUrl: `http://localhost:${port}`,
      cloneBundles: { manifest: '', files: [{ path: file }] },
    });
    try {
      const evil = await new Promise<string>((resolve, reject) => {
        http
          .get(`${own.url}?cmd=clonebundles`, { headers: { Host: 'evil.example' } }, (res) => {
            let body = '';
            res.on('data', (c: Buffer) => (body += c.toString('latin1')));
            res.on('end', () => resolve(body));
          })
          .on('error', reject);
      });
      expect(evil).not.toContain('evil');
      expect(evil.startsWith(`${own.url}.sluice/bundles/0/packed1.hg BUNDLESPEC=none-packed1;`)).toBe(true);
      for (const [server, bundleUrl] of [
        [own, `${own.url}.sluice/bundles/0/packed1.hg`],
        [pub, `http://localhost:${port}/.sluice/bundles/0/packed1.hg`],
      ] as const) {
        const dest = join(work, `hgclone-${n++}`);
        const r = await hgAsync(['clone', '--stream', '-U', server.url, dest]);
        expect(r.status, r.stderr).toBe(0);
        expect(r.stdout).toContain(`applying clone bundle from ${bundleUrl}`);
        await expectSameAsReference(dest);
      }
    } finally {
      await own.close();
      await pub.close();
    }
  });
});
