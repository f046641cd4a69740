// Smoke test of the web host: the built renderer loads with the bridge, window.sluice speaks the
// SluiceApi (invoke, on, pathForFile), the host validates what it receives, and nothing is served
// without the token.
import { readFile, stat } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test, expect, SAMPLE_BUNDLE } from './fixtures';

// window.sluice is typed by src/preload/index.d.ts.

test('the page loads and window.sluice answers', async ({ sluicePage: page, webHost }) => {
  const shape = await page.evaluate(() => ({
    keys: Object.keys(window.sluice).sort(),
    frozen: Object.isFrozen(window.sluice),
    types: [
      typeof window.sluice.invoke,
      typeof window.sluice.on,
      typeof window.sluice.pathForFile,
      typeof window.sluice.downloadLog,
    ],
  }));
  // the web bridge adds downloadLog (a job's log as a browser download) to the preload's API
  expect(shape).toEqual({
    keys: ['downloadLog', 'invoke', 'on', 'pathForFile'],
    frozen: true,
    types: ['function', 'function', 'function', 'function'],
  });

  const info = await page.evaluate(() => window.sluice.invoke('app:info'));
  expect(info).toMatchObject({ host: 'web', platform: process.platform, defaultCloneDir: webHost.cloneDir });
  // The web host is shared by the specs of a worker: other specs' jobs may be listed.
  const jobs = await page.evaluate(() => window.sluice.invoke('job:list'));
  expect(Array.isArray(jobs)).toBe(true);
  expect(await page.evaluate(() => window.sluice.invoke('dialog:pickDirectory'))).toBeNull();
});

test('the host refuses invalid calls with a code the UI understands', async ({ sluicePage: page }) => {
  const refused = await page.evaluate(async () => {
    const attempt = async (f: () => Promise<unknown>) => {
      try {
        await f();
        return null;
      } catch (e) {
        return { code: (e as { code?: string }).code, message: (e as Error).message };
      }
    };
    const api = window.sluice as unknown as { invoke(channel: string, ...args: unknown[]): Promise<unknown> };
    return {
      relative: await attempt(() => api.invoke('bundle:inspect', 'relative/x.hg')),
      scheme: await attempt(() => api.invoke('server:probe', 'ftp://hg.example.org/repo')),
      channel: await attempt(() => api.invoke('fs:readFile', '/etc/passwd')),
      shape: await attempt(() =>
        api.invoke('job:start', { kind: 'apply', bundlePath: '/b.hg', dest: '/r', evil: true }),
      ),
    };
  });
  expect(refused.relative).toMatchObject({
    code: 'USAGE',
    message: expect.stringContaining('not an absolute path'),
  });
  expect(refused.scheme).toMatchObject({
    code: 'USAGE',
    message: expect.stringContaining('only http and https'),
  });
  expect(refused.channel).toMatchObject({
    code: 'USAGE',
    message: expect.stringContaining('unknown channel'),
  });
  expect(refused.shape).toMatchObject({
    code: 'USAGE',
    message: expect.stringContaining('unknown field "evil"'),
  });
});

test('pathForFile uploads a dropped file and returns its path on the host', async ({
  sluicePage: page,
  webHost,
}) => {
  const path = await page.evaluate(() =>
    window.sluice.pathForFile(
      new File([new Uint8Array([0x48, 0x47, 0x32, 0x30, 1, 2, 3])], 'dropped bundle.hg'),
    ),
  );
  expect(path.startsWith(webHost.dataDir)).toBe(true);
  expect(path.endsWith('dropped bundle.hg')).toBe(true);
  expect([...(await readFile(path))]).toEqual([0x48, 0x47, 0x32, 0x30, 1, 2, 3]);
});

test("the host's data folder is the user's alone", async ({ webHost }) => {
  test.skip(process.platform === 'win32', 'Windows: per-user ACLs of %APPDATA%, no mode bits');
  // job logs, history and uploaded bundles: no other local user may read them
  expect((await stat(webHost.dataDir)).mode & 0o777).toBe(0o700);
});

test('a bad or missing token is refused, for the page, its assets and the WebSocket', async ({
  page,
  webHost,
  request,
}) => {
  const bad = await page.goto(`${webHost.origin}/?token=not-the-token`);
  expect(bad!.status()).toBe(403);
  expect(await page.evaluate(() => typeof (window as { sluice?: unknown }).sluice)).toBe('undefined');

  const noToken = await request.get(`${webHost.origin}/`, { failOnStatusCode: false });
  expect(noToken.status()).toBe(403);
  const bridge = await request.get(`${webHost.origin}/bridge.js`, { failOnStatusCode: false });
  expect(bridge.status()).toBe(403);
  expect(await bridge.text()).not.toContain(webHost.token);

  // A page of the same origin without the token cannot open the socket either.
  const socket = await page.evaluate(
    (origin) =>
      new Promise<string>((resolve) => {
        const ws = new WebSocket(`${origin.replace('http', 'ws')}/ws?token=wrong`);
        ws.onopen = () => resolve('open');
        ws.onerror = () => resolve('refused');
      }),
    webHost.origin,
  );
  expect(socket).toBe('refused');
});

test('responses carry the CSP, and the renderer runs under it without violations', async ({
  page,
  webHost,
}) => {
  const violations: string[] = [];
  page.on('console', (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text());
  });
  const res = await page.goto(webHost.url);
  expect(res!.headers()['content-security-policy']).toContain("script-src 'self'");
  await page.waitForFunction(() => typeof (window as { sluice?: unknown }).sluice === 'object');
  await page.waitForLoadState('networkidle');
  expect(violations).toEqual([]);
});

test('a job runs end to end through the bridge: events and states are pushed, then the history has it', async ({
  sluicePage: page,
  webHost,
}) => {
  const dest = `${webHost.cloneDir}/smoke-apply`;
  const outcome = await page.evaluate(
    async ({ bundlePath, dest }) => {
      const events: { type: string }[] = [];
      const states: string[] = [];
      const ended = new Promise<void>((resolve) => {
        window.sluice.on('job:state', (s) => {
          states.push(s.state);
          if (s.state === 'done' || s.state === 'failed' || s.state === 'cancelled') resolve();
        });
      });
      window.sluice.on('job:events', (batch) => {
        events.push(...batch.events);
      });
      const { jobId } = await window.sluice.invoke('job:start', { kind: 'apply', bundlePath, dest }, 'smoke');
      await ended;
      // the last batch (with done) and the history record are written before the final state
      const history = await window.sluice.invoke('history:list');
      return { jobId, states, types: events.map((e) => e.type), history };
    },
    { bundlePath: SAMPLE_BUNDLE, dest },
  );
  expect(outcome.states).toEqual(['queued', 'running', 'done']);
  expect(outcome.types[0]).toBe('start');
  expect(outcome.types.at(-1)).toBe('done');
  expect(outcome.history[0]).toMatchObject({
    jobId: outcome.jobId,
    label: 'smoke',
    state: 'done',
    done: { files: 28, result: dest },
  });
});

test('sample:get returns the sample repository by its local path, a source that lasts', async ({
  sluicePage: page,
  webHost,
}) => {
  const sample = await page.evaluate(() => window.sluice.invoke('sample:get'));
  expect(sample).toEqual({ name: 'sample', files: 28, url: join(webHost.dataDir, 'sample', 'sample') });
  expect(existsSync(join(sample.url, '.hg', 'requires'))).toBe(true);
});
