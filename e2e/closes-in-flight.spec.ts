// The closes really in flight equal the closer's setting under every host: the `sluice` command,
// the web host, and the built Electron main's CommonJS entry (out/main/main.cjs, run in plain Node
// with its ES module swapped for a probe, since out/main/index.js needs Electron). "Equal" within
// the pool's 2 reserve threads, which close too when no read is waiting: `threads` to
// `threads + THREADPOOL_RESERVE`; a plan for fewer threads than the pool has is held to its count. Counted at the
// OS boundary by e2e/fixtures/inflight-close.c (an LD_PRELOAD shim that holds each close of a
// file under a prefix for a few ms and records how many overlapped), never by what the closer
// believes. Whether an ES module entry that sets UV_THREADPOOL_SIZE itself is stuck at libuv's
// default 4 depends on whether the runtime's loader touched the pool first (Node 20 here: only
// sometimes), so no test asserts it; the 4-thread web-host case shows the counter sees a cap.
import { spawn, spawnSync } from 'node:child_process';
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import WebSocket from 'ws';
import { test, expect, makeTempDir, PROJECT_ROOT, type TempDir } from './fixtures';
import { WEB_HOST_ENTRY } from './fixtures/paths';
import { missing, skipNote, toolPath } from '../test/support/env';
import { packed1Header } from '../src/main/engine/format/packed1';
import { THREADPOOL_RESERVE, threadpoolSizeFor } from '../src/main/engine/closer/threadpool';

const FILES = 2600; // above the closer's minFileCount (2048)

// LD_PRELOAD is Linux's; elsewhere the platform, not a missing tool, is the reason to skip
const onLinux = process.platform === 'linux';
const noCc = onLinux && missing('cc');

test.describe(`closes in flight${onLinux ? skipNote('cc') : ' (skipped: needs Linux, for LD_PRELOAD)'}`, () => {
  test.skip(!onLinux, 'needs Linux (LD_PRELOAD) to count closes with the shim');
  test.skip(noCc, `needs ${skipNote('cc').trim()} to build the counting shim`);
  // processes on a loaded 2-core machine: one at a time
  test.describe.configure({ mode: 'serial', timeout: 120_000 });

  let dir: TempDir;
  let shim: string;
  let bundle: string;
  let n = 0;

  test.beforeAll(async () => {
    dir = await makeTempDir('sluice-inflight-');
    shim = join(dir.path, 'inflight-close.so');
    const cc = spawnSync(
      toolPath('cc')!,
      [
        '-O2',
        '-shared',
        '-fPIC',
        '-o',
        shim,
        join(PROJECT_ROOT, 'e2e', 'fixtures', 'inflight-close.c'),
        '-ldl',
        '-lpthread',
      ],
      { encoding: 'utf8' },
    );
    expect(cc.status, cc.stderr).toBe(0);
    // a packed1 bundle of FILES small revlogs
    const parts: Buffer[] = [];
    let bytes = 0;
    for (let i = 0; i < FILES; i++) {
      const data = Buffer.alloc(64, i % 251);
      parts.push(Buffer.from(`data/f${i}.i\0${data.length}\n`, 'latin1'), data);
      bytes += data.length;
    }
    bundle = join(dir.path, 'many.hg');
    await writeFile(
      bundle,
      Buffer.concat([packed1Header(FILES, bytes, ['generaldelta', 'revlogv1']), ...parts]),
    );
  });
  test.afterAll(() => dir?.remove());

  /**
   * A fresh output area; closes of store files below it are counted, each held `threads`-dependent
   * time: long enough that a loaded writer keeps `threads` of them busy, short enough to be quick.
   */
  async function area(threads = 48): Promise<{ out: string; stats: string; env: NodeJS.ProcessEnv }> {
    const out = join(dir.path, `run-${++n}`);
    await mkdir(out);
    const stats = join(dir.path, `stats-${n}.txt`);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      LD_PRELOAD: shim,
      INFLIGHT_PREFIX: out + '/',
      // the closer's files (the store's data/), not the requirements and markers around them
      INFLIGHT_CONTAINS: '/store/data/',
      INFLIGHT_US: String(threads >= 32 ? 20_000 : 5_000),
      INFLIGHT_STATS: stats,
      UV_USE_IO_URING: '0',
    };
    delete env.UV_THREADPOOL_SIZE; // the entry points size the pool themselves
    delete env.NODE_OPTIONS;
    return { out, stats, env };
  }

  /** The largest count of one process (each process the shim was loaded in appends a line). */
  async function maxInFlight(stats: string): Promise<{ closes: number; max: number }> {
    const lines = (await readFile(stats, 'utf8')).trim().split('\n');
    const parsed = lines.map((l) => ({
      closes: Number(/closes=(\d+)/.exec(l)![1]),
      max: Number(/max_in_flight=(\d+)/.exec(l)![1]),
    }));
    return parsed.reduce((a, b) => (b.closes > a.closes ? b : a));
  }

  for (const threads of [48, 8]) {
    test(`sluice apply --close-threads ${threads}: ${threads} closes in flight`, async () => {
      const { out, stats, env } = await area(threads);
      const dest = join(out, 'repo');
      const r = spawnSync(
        process.execPath,
        [
          join(PROJECT_ROOT, 'bin', 'sluice.cjs'),
          'apply',
          bundle,
          dest,
          '--background-close',
          'on',
          '--close-threads',
          String(threads),
          '--json',
        ],
        { env, encoding: 'utf8', maxBuffer: 1 << 26 },
      );
      expect(r.status, r.stderr).toBe(0);
      const done = JSON.parse(r.stdout.split('\n').find((l) => l.includes('"type":"done"'))!);
      expect(done.close).toMatchObject({ background: true, threads, backgroundClosed: FILES });
      const { closes, max } = await maxInFlight(stats);
      expect(closes).toBeGreaterThanOrEqual(FILES);
      expect(max).toBeLessThanOrEqual(threads + THREADPOOL_RESERVE);
      expect(max).toBeGreaterThanOrEqual(Math.floor(threads * 0.9));
    });
  }

  for (const threads of [48, 4]) {
    test(`the web host: an apply with ${threads} close threads has ${threads} closes in flight`, async () => {
      const { out, stats, env } = await area(threads);
      const child = spawn(
        process.execPath,
        [
          WEB_HOST_ENTRY,
          '--port',
          '0',
          '--data-dir',
          join(dir.path, `data-${n}`),
          '--clone-dir',
          out,
          '--no-sample',
        ],
        { env, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let printed = '';
      child.stdout!.on('data', (d: Buffer) => (printed += d));
      child.stderr!.on('data', (d: Buffer) => (printed += d));
      try {
        await expect.poll(() => /SLUICE_WEB_URL=(\S+)/.test(printed), { timeout: 30_000 }).toBe(true);
        const url = new URL(/SLUICE_WEB_URL=(\S+)/.exec(printed)![1]!);
        const ws = new WebSocket(`ws://${url.host}/ws?token=${url.searchParams.get('token')}`, {
          origin: url.origin,
        });
        await new Promise((resolve, reject) => (ws.once('open', resolve), ws.once('error', reject)));
        const ended = new Promise<string>((resolve) =>
          ws.on('message', (data) => {
            const m = JSON.parse(String(data));
            if (
              m.t === 'push' &&
              m.channel === 'job:state' &&
              ['done', 'failed', 'cancelled'].includes(m.payload.state)
            )
              resolve(m.payload.state);
          }),
        );
        const dest = join(out, 'repo');
        ws.send(
          JSON.stringify({
            t: 'invoke',
            id: 1,
            channel: 'job:start',
            args: [
              {
                kind: 'apply',
                bundlePath: bundle,
                dest,
                closer: { backgroundClose: 'on', closeThreads: threads },
              },
            ],
          }),
        );
        expect(await ended).toBe('done');
        ws.close();
      } finally {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      const { closes, max } = await maxInFlight(stats);
      expect(closes, printed).toBeGreaterThanOrEqual(FILES);
      // the app's pool is the CLI's default one: 48 closes run as in `sluice apply`, 4 are held to 4
      expect(max).toBeLessThanOrEqual(threads === 48 ? threads + THREADPOOL_RESERVE : threads);
      expect(max).toBeGreaterThanOrEqual(Math.floor(threads * 0.9));
    });
  }

  /** A probe ES module: 64 files under `out`, all handed to libuv's pool at once. */
  async function writeProbe(path: string, out: string, lateEnv = false): Promise<void> {
    await writeFile(
      path,
      `${lateEnv ? "process.env.UV_THREADPOOL_SIZE = '66'; // too late: the ES module loader started the pool\n" : ''}` +
        `import { close, mkdirSync, openSync } from 'node:fs';\n` +
        `const dir = ${JSON.stringify(out)} + '/store/data';\n` +
        `mkdirSync(dir, { recursive: true });\n` +
        `const fds = Array.from({ length: 64 }, (_, i) => openSync(dir + '/f' + i, 'w'));\n` +
        `let left = fds.length;\n` +
        `for (const fd of fds) close(fd, () => --left === 0 && console.log('closed'));\n`,
    );
  }

  test("the built Electron main's CommonJS entry sizes the pool before its ES module loads", async () => {
    // out/main/main.cjs and bootstrap.cjs as built, beside a probe in place of index.js
    const { out, stats, env } = await area();
    const app = join(dir.path, 'app-main');
    await mkdir(app, { recursive: true });
    for (const f of ['main.cjs', 'bootstrap.cjs'])
      await copyFile(join(PROJECT_ROOT, 'out', 'main', f), join(app, f));
    expect(await readFile(join(app, 'main.cjs'), 'utf8')).toContain("'index.js'");
    await writeProbe(join(app, 'index.js'), out);
    await writeFile(join(app, 'package.json'), '{"type":"module"}');
    const r = spawnSync(process.execPath, [join(app, 'main.cjs')], { env, encoding: 'utf8' });
    expect(r.stdout + r.stderr).toContain('closed');
    const { closes, max } = await maxInFlight(stats);
    expect(closes).toBe(64);
    // the app's pool: 48 close threads plus the reserve, all closing at once
    expect(max).toBe(threadpoolSizeFor(48));
  });
});
