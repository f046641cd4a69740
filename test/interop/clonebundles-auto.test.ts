// Automatic clone bundles (hg 6.5's clonebundles extension, `[clone-bundles]`): Sluice generates
// them, publishes them through upload-command (a folder served by a small static HTTP server) or
// the built-in S3 uploader (a real s3rver on 127.0.0.1), and hg 6.3.2 and Sluice clone through the
// manifest sluice serve advertises. Triggers, idempotence, clear, on-change under sluice serve.

import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { createReadStream, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobContext } from '../../src/main/engine/context/job-context';
import { cloneFromUrl } from '../../src/main/engine/operations/clone/clone';
import { pyQuote } from '../../src/main/engine/operations/clone-bundles/auto-gen-state';
import {
  clearCloneBundles,
  refreshCloneBundles,
} from '../../src/main/engine/operations/clone-bundles/refresh';
import { lockHostPrefix } from '../../src/main/engine/repo/lock';
import { startServer, type RunningServer } from '../../src/main/engine/operations/serve/http-server';
import { describeClone, hgAsync, hgSync, missing, removeDir, ROOT, skipNote, tempDir } from './wire-support';

interface S3rverLike {
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
}
const S3rver = createRequire(import.meta.url)('s3rver') as new (o: object) => S3rverLike;

describe.skipIf(missing('hg'))(`automatic clone bundles${skipNote('hg')}`, () => {
  let work = '';
  let repo = '';
  let www = '';
  let wwwUrl = '';
  let staticServer: http.Server;
  let s3: S3rverLike;
  let s3Url = '';
  let sluice: RunningServer | null = null;
  let n = 0;
  const savedEnv = { ...process.env };

  const commit = (count: number): void => {
    for (let i = 0; i < count; i++) {
      writeFileSync(join(repo, `f${n}`), `file ${n}\n`.repeat(n + 1));
      hgSync(['-R', repo, 'commit', '-qA', '-m', `c${n++}`, '-u', 'test', '-d', '0 0']);
    }
    hgSync(['-R', repo, 'phase', '-p', 'tip']);
  };
  const setConfig = (lines: string): void =>
    writeFileSync(join(repo, '.hg', 'hgrc'), `[clone-bundles]\n${lines}\n`);
  const commandConfig = (extra = ''): void =>
    setConfig(`auto-generate.formats = zstd-v2, none-v2;stream=v2
upload-command = cp "$HGCB_BUNDLE_PATH" "${www}/$HGCB_BASENAME"
delete-command = rm -f "${www}/$HGCB_BASENAME"
url-template = ${wwwUrl}/{basename}
${extra}`);
  const manifest = (): string => readFileSync(join(repo, '.hg', 'clonebundles.manifest'), 'latin1');
  const bundleFiles = (): string[] =>
    readdirSync(www)
      .filter((f) => f.endsWith('.hg'))
      .sort();

  beforeAll(async () => {
    work = tempDir('cbauto');
    repo = join(work, 'repo');
    www = join(work, 'www');
    hgSync(['init', repo]);
    mkdirSync(www);
    commit(20);
    staticServer = http.createServer((req, res) => {
      const name = decodeURIComponent((req.url ?? '/').slice(1));
      const path = join(www, name);
      if (!/^[\w.-]+$/.test(name) || !existsSync(path)) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      createReadStream(path).pipe(res);
    });
    await new Promise<void>((r) => staticServer.listen(0, '127.0.0.1', r));
    wwwUrl = `http://127.0.0.1:${(staticServer.address() as AddressInfo).port}`;
    s3 = new S3rver({
      address: '127.0.0.1',
      port: 0,
      silent: true,
      directory: join(work, 's3'),
      configureBuckets: [{ name: 'cb' }],
    });
    const addr = await s3.run();
    s3Url = `http://127.0.0.1:${addr.port}`;
    Object.assign(process.env, {
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
      AWS_REGION: 'us-east-1',
      AWS_ENDPOINT_URL_S3: s3Url,
    });
  }, 120_000);

  afterAll(async () => {
    process.env = savedEnv;
    await sluice?.close();
    staticServer?.close();
    await s3?.close();
    if (work) removeDir(work);
  });

  async function serve(): Promise<string> {
    sluice ??= await startServer({
      repo,
      address: '127.0.0.1',
      port: 0,
      bundleRefreshCommand: [
        process.execPath,
        join(ROOT, 'bin', 'sluice.cjs'),
        'bundles',
        'refresh',
        '-q',
        repo,
      ],
    });
    return sluice.url;
  }

  async function expectHgCloneThroughBundle(url: string, args: string[] = []): Promise<string> {
    const dest = join(work, `clone-${n++}`);
    const r = await hgAsync(['clone', '-U', ...args, url, dest]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('applying clone bundle from');
    const view = await describeClone(dest);
    expect(view.verify.status, view.verify.stderr).toBe(0);
    expect(view.log).toBe((await describeClone(repo)).log);
    return r.stdout;
  }

  it('publishes through upload-command; hg and Sluice clone through the manifest', async () => {
    commandConfig();
    const res = await refreshCloneBundles(repo);
    expect(res.generated.map((b) => b.spec)).toEqual(['zstd-v2', 'none-v2;stream=v2']);
    const lines = manifest().trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      /^http:\/\/127\.0\.0\.1:\d+\/full-zstd-v2-20_revs-[0-9a-f]{12}_tip-\w+\.hg BUNDLESPEC=zstd-v2 DIGEST=sha256:[0-9a-f]{64}$/,
    );
    expect(lines[1]).toContain('BUNDLESPEC=none-v2;stream=v2;requirements%3D');
    expect(readdirSync(www).filter((f) => f.endsWith('.hg'))).toHaveLength(2);
    const url = await serve();
    // a plain clone takes the changegroup bundle, --stream the stream one
    expect(await expectHgCloneThroughBundle(url)).toContain('full-zstd-v2');
    expect(await expectHgCloneThroughBundle(url, ['--stream'])).toContain('full-none-v2-stream-v2');
    const dest = join(work, `clone-${n++}`);
    const out = await cloneFromUrl({ kind: 'clone', url, dest }, new JobContext({ fileEvents: false }));
    expect(out.via).toBe('clone-bundle');
    expect((await describeClone(dest)).verify.status).toBe(0);
  }, 180_000);

  it('answers clonebundles_manifest as clonebundles', async () => {
    const url = await serve();
    const [a, b] = await Promise.all(
      ['clonebundles', 'clonebundles_manifest'].map(async (cmd) => (await fetch(`${url}?cmd=${cmd}`)).text()),
    );
    expect(b).toBe(a);
    expect(a).toBe(manifest());
  });

  it('is idempotent, and regenerates past the triggers; outdated bundles go at the next refresh', async () => {
    expect((await refreshCloneBundles(repo)).generated).toEqual([]);
    commit(1); // 21 revs: 20 > max(21 × 0.95, 21 − 1000)
    expect((await refreshCloneBundles(repo)).generated).toEqual([]);
    commandConfig('trigger.revs = 0\ntrigger.below-bundled-ratio = 0');
    const first = bundleFiles();
    const res = await refreshCloneBundles(repo);
    expect(res.generated.map((b) => b.revs)).toEqual([21, 21]);
    // as hg: the bundles a client may just have been sent stay in the storage, out of the manifest
    expect(res.deleted).toEqual([]);
    expect(bundleFiles()).toEqual([...first, ...res.generated.map((b) => b.basename)].sort());
    expect(manifest()).toContain('21_revs');
    expect(manifest()).not.toContain('20_revs');
    // hg 6.5's state file: DONE-v1 TYPE REVS TIP_REV TIP_NODE QUOTED_URL BASENAME, sorted
    const tip = hgSync(['-R', repo, 'log', '-r', 'tip', '-T', '{node}']).stdout;
    const state = readFileSync(join(repo, '.hg', 'clonebundles.auto-gen'), 'latin1');
    const quoted = wwwUrl.replace(':', '%3A').replace(/:(\d+)$/, '%3A$1');
    expect(state).toContain(
      `DONE-v1 zstd-v2 21 20 ${tip} ${quoted}/${res.generated[0]!.basename} ${res.generated[0]!.basename}\n`,
    );
    expect(state.split('\n').filter(Boolean)).toHaveLength(4);
    commit(1);
    commandConfig('trigger.below-bundled-ratio = 1.0');
    const next = await refreshCloneBundles(repo);
    expect(next.generated.map((b) => b.revs)).toEqual([22, 22]);
    expect(next.deleted.map((b) => b.basename).sort()).toEqual(first);
    expect(bundleFiles()).toEqual([...res.generated, ...next.generated].map((b) => b.basename).sort());
    await expectHgCloneThroughBundle(await serve());
  }, 180_000);

  it("drops this machine's dead generations from the state, keeps other machines' ones", async () => {
    const statePath = join(repo, '.hg', 'clonebundles.auto-gen');
    const dead = spawnSync('true').pid!; // exited: its pid names no process now
    const node = 'c'.repeat(40);
    const orphan = join(repo, '.hg', 'tmp-bundles', 'orphan.hg');
    writeFileSync(orphan, 'half a bundle');
    const mine = `PENDING-v1 gzip-v2 3 2 ${node} ${pyQuote(lockHostPrefix())} ${dead} ${pyQuote(orphan)}\n`;
    const theirs = `PENDING-v1 gzip-v2 3 2 ${node} other-host 1 /elsewhere/x.hg\n`;
    writeFileSync(statePath, readFileSync(statePath, 'latin1') + mine + theirs);
    commandConfig(); // default triggers: the 22-rev bundles are enough, the 21-rev ones outdated
    const res = await refreshCloneBundles(repo);
    expect(res.generated).toEqual([]);
    expect(res.deleted.map((b) => b.revs)).toEqual([21, 21]);
    const state = readFileSync(statePath, 'latin1');
    expect(state).not.toContain(` ${dead} `);
    expect(state).toContain(theirs);
    expect(existsSync(orphan)).toBe(false);
  });

  it('clear deletes every bundle and the manifest', async () => {
    const res = await clearCloneBundles(repo);
    expect(res.deleted.map((b) => b.revs)).toEqual([22, 22]);
    expect(bundleFiles()).toEqual([]);
    expect(existsSync(join(repo, '.hg', 'clonebundles.manifest'))).toBe(false);
  });

  it('uploads to S3 (s3rver); a refused upload leaves the manifest as it was', async () => {
    setConfig(
      `auto-generate.formats = gzip-v2\nupload-url = s3://cb/bundles\nurl-template = ${s3Url}/cb/bundles/{basename}`,
    );
    const res = await refreshCloneBundles(repo);
    expect(res.generated).toHaveLength(1);
    expect(manifest()).toMatch(/\/cb\/bundles\/full-gzip-v2-22_revs-.* BUNDLESPEC=gzip-v2 DIGEST=sha256:/);
    await expectHgCloneThroughBundle(await serve());
    const published = manifest();
    setConfig(
      `auto-generate.formats = zstd-v2\nupload-url = s3://no-such-bucket/x\nurl-template = ${s3Url}/no-such-bucket/x/{basename}`,
    );
    await expect(refreshCloneBundles(repo)).rejects.toMatchObject({
      code: 'UPLOAD_FAILED',
      message: expect.stringContaining('NoSuchBucket'),
    });
    expect(manifest()).toBe(published);
    expect(readdirSync(join(repo, '.hg', 'tmp-bundles'))).toEqual([]);
  }, 180_000);

  it('regenerates on change under sluice serve, which keeps serving meanwhile', async () => {
    const url = await serve();
    // a slow upload: the refresh child is still running while a clone is answered
    commandConfig(
      `auto-generate.on-change = yes\ntrigger.below-bundled-ratio = 1.0\nupload-command = sleep 4; cp "$HGCB_BUNDLE_PATH" "${www}/$HGCB_BASENAME"`,
    );
    const published = manifest();
    commit(2);
    await new Promise((r) => setTimeout(r, 2500)); // the server's next look at the repository
    const dest = join(work, `clone-${n++}`);
    const r = await hgAsync(['clone', '-U', '--config', 'ui.clonebundles=false', url, dest]);
    expect(r.status, r.stderr).toBe(0);
    expect(manifest()).toBe(published); // not yet uploaded: not yet published
    const deadline = Date.now() + 90_000;
    while (!manifest().includes('24_revs') && Date.now() < deadline)
      await new Promise((res) => setTimeout(res, 500));
    expect(manifest()).toContain('24_revs');
    await expectHgCloneThroughBundle(url);
  }, 180_000);
});
