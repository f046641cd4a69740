import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  EngineHost,
  InvokeFailure,
  toInvokeFailure,
  type HostPlatform,
} from '../../../src/main/host/engine-host';
import { workingCopySummary } from '../../../src/main/host/engine-api';
import { TypedEmitter } from '../../../src/main/host/typed-emitter';
import { SluiceError } from '../../../src/main/engine/errors';
import { PartialStore } from '../../../src/main/engine/downloads/partial-store';
import { validateInvoke } from '../../../src/main/host/validate';
import { missing, skipNote } from '../../support/env';
import type { EngineWorkerEvents, EngineWorkerLike } from '../../../src/main/host/engine-worker-host';
import type { HostToWorker, WorkerStartData } from '../../../src/main/host/worker-protocol';
import { textChunk } from '../../../src/shared/job-log-lines';

const fixtures = new URL('../../fixtures/hg/', import.meta.url).pathname;
const sampleBundle = new URL('../../../build/sample/sample.hg', import.meta.url).pathname;
const execFileAsync = promisify(execFile);

/**
 * A worker that "applies" by unpacking the fixture repository the sample bundle was made from, so
 * the sample flow (apply once, mark, serve, reuse) is tested apart from the engine's apply.
 */
class UnpackingWorker implements EngineWorkerLike {
  static runs = 0;
  private readonly events = new TypedEmitter<EngineWorkerEvents>();
  constructor(_start: WorkerStartData) {}
  on<K extends keyof EngineWorkerEvents>(event: K, listener: (...args: EngineWorkerEvents[K]) => void) {
    return this.events.on(event, listener);
  }
  send(message: HostToWorker) {
    if (message.type === 'query' && message.query.kind === 'summary') {
      // the library's status reads: answered by the real engine call, as the real worker does
      const { queryId } = message;
      workingCopySummary(message.query.repo).then(
        (result) => this.events.emit('message', { type: 'answer', queryId, ok: true, result }),
        (e: Error) =>
          this.events.emit('message', {
            type: 'answer',
            queryId,
            ok: false,
            error: { code: 'IO', message: e.message },
          }),
      );
      return;
    }
    if (message.type !== 'start') return;
    UnpackingWorker.runs++;
    const { jobId, request } = message;
    if (request.kind !== 'apply') throw new Error('unexpected request');
    const { dest } = request;
    const unpack = async (): Promise<void> => {
      const made = await mkdir(dest, { recursive: true }).then(
        () => true,
        () => false,
      );
      const r = made
        ? spawnSync('tar', ['-xzf', join(fixtures, 'default', 'repo.tar.gz'), '-C', dest])
        : { status: 1, stderr: `${dest} exists and is not a folder` };
      if (r.status !== 0) {
        this.events.emit('message', {
          type: 'finished',
          jobId,
          ok: false,
          error: { code: 'IO', message: String(r.stderr) },
        });
        return;
      }
      const log = textChunk(['transferred 1 bytes in 0.0 seconds (1 bytes/sec)']);
      this.events.emit('message', {
        type: 'events',
        jobId,
        events: [
          {
            type: 'done',
            jobId,
            time: Date.now(),
            wallMs: 1,
            userCpuMs: 0,
            systemCpuMs: 0,
            bytes: 1,
            files: 28,
          },
        ],
        log,
      });
      this.events.emit('message', { type: 'finished', jobId, ok: true });
    };
    setTimeout(() => void unpack(), 0);
  }
  async terminate() {}
  dispose() {}
}

const platform: HostPlatform = {
  host: 'web',
  version: '9.9.9',
  platform: 'linux',
  defaultCloneDir: '/home/u/Sluice',
  pickDirectory: async () => null,
  pickBundle: async () => null,
  openPath: async () => {},
  openExternal: async () => {},
  writeText: async () => null,
};

describe('EngineHost', () => {
  let dir: string;
  let host: EngineHost;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-enginehost-'));
    UnpackingWorker.runs = 0;
    host = new EngineHost({
      platform,
      dataDir: join(dir, 'data'),
      sampleBundle,
      worker: { script: '/nonexistent' },
      createWorker: (start) => new UnpackingWorker(start),
      engine: {
        inspectBundle: async (path) => {
          throw new SluiceError('BAD_MAGIC', `not a bundle: ${path}`);
        },
      },
    });
  });

  afterEach(async () => {
    await host.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers app:info from the platform', async () => {
    expect(await host.invoke('app:info', [])).toEqual({
      version: '9.9.9',
      platform: 'linux',
      host: 'web',
      defaultCloneDir: '/home/u/Sluice',
      deleteRepository: 'permanent',
    });
  });

  it('lists and removes the partial downloads of the folder the CLI shares', async () => {
    const saved = process.env.SLUICE_CACHE_DIR;
    process.env.SLUICE_CACHE_DIR = join(dir, 'cache');
    try {
      const store = new PartialStore({ dir: join(dir, 'cache', 'downloads'), maxBytes: 1 << 20 });
      const part = (await store.claim('http://h/a.hg', 'http://h/a.hg', '/clones/a'))!;
      await writeFile(part.path, Buffer.alloc(10));
      await part.save({ have: 10, validator: '"e"', total: 20 });
      await part.release();
      expect(await host.invoke('downloads:list', [])).toEqual([
        expect.objectContaining({ key: part.key, url: 'http://h/a.hg', bytes: 10, total: 20, inUse: false }),
      ]);
      await expect(host.invoke('downloads:remove', ['../a'])).rejects.toMatchObject({ code: 'USAGE' });
      expect(await host.invoke('downloads:remove', [part.key])).toEqual({ removed: 1 });
      expect(await host.invoke('downloads:list', [])).toEqual([]);
    } finally {
      if (saved === undefined) delete process.env.SLUICE_CACHE_DIR;
      else process.env.SLUICE_CACHE_DIR = saved;
    }
  });

  it('rejects invalid calls before any handler runs, and keeps engine error codes', async () => {
    await expect(
      host.invoke('job:start', [{ kind: 'apply', bundlePath: 'x.hg', dest: '/r' }]),
    ).rejects.toMatchObject({ code: 'USAGE', message: expect.stringContaining('not an absolute path') });
    expect(host.jobs.list()).toEqual([]);
    await expect(host.invoke('nope', [])).rejects.toBeInstanceOf(InvokeFailure);
    await expect(host.invoke('bundle:inspect', ['/tmp/x.hg'])).rejects.toMatchObject({
      code: 'BAD_MAGIC',
      message: 'not a bundle: /tmp/x.hg',
    });
  });

  it("keeps a finished job's debug log on disk: pages and export survive a new host (a restart)", async () => {
    const exported: { name: string; text: string }[] = [];
    const dataDir = join(dir, 'data');
    const jobId = await startLogged(host, dataDir);
    const page = (await host.invoke('job:log', [jobId, 0, 5])) as { lines: string[]; total: number };
    expect(page.total).toBe(1);
    expect(page.lines).toEqual(['transferred 1 bytes in 0.0 seconds (1 bytes/sec)']);
    await host.dispose();
    host = new EngineHost({
      platform: {
        ...platform,
        writeText: async (name, text) => (exported.push({ name, text }), `/exports/${name}`),
      },
      dataDir,
      sampleBundle,
      worker: { script: '/nonexistent' },
      createWorker: (s) => new UnpackingWorker(s),
    });
    expect(await host.invoke('job:log', [jobId, 0, 5])).toMatchObject({ total: 1, lines: page.lines });
    expect(await host.invoke('job:exportLog', [jobId, 'a-debug.log', '# header'])).toBe(
      '/exports/a-debug.log',
    );
    expect(exported).toEqual([
      { name: 'a-debug.log', text: '# header\ntransferred 1 bytes in 0.0 seconds (1 bytes/sec)\n' },
    ]);
    await expect(host.invoke('job:log', ['../../etc', 0, 5])).rejects.toMatchObject({ code: 'USAGE' });
    // history:clear forgets the logs too
    await host.invoke('history:clear', []);
    expect(await host.invoke('job:log', [jobId, 0, 5])).toMatchObject({ total: 0, lines: [] });
  });

  it('prepares the sample once, offers its local path as the source, and reuses it on the next start', async () => {
    const info = (await host.invoke('sample:get', [])) as { url: string; name: string; files: number };
    expect(info).toEqual({ name: 'sample', files: 28, url: join(dir, 'data', 'sample', 'sample') });
    // a path that lasts: a clone of it records this as paths.default, which pulls after a restart
    expect((await stat(join(info.url, '.hg', 'requires'))).isFile()).toBe(true);
    expect(
      validateInvoke('job:start', [{ kind: 'clone', url: info.url, dest: join(dir, 'c') }]),
    ).toBeTruthy();
    expect(await host.invoke('sample:get', [])).toEqual(info);
    expect(UnpackingWorker.runs).toBe(1);

    await host.dispose();
    host = new EngineHost({
      platform,
      dataDir: join(dir, 'data'),
      sampleBundle,
      worker: { script: '/nonexistent' },
      createWorker: (s) => new UnpackingWorker(s),
    });
    const again = (await host.invoke('sample:get', [])) as { url: string; files: number };
    expect(again).toMatchObject({ files: 28, url: info.url });
    expect(UnpackingWorker.runs).toBe(1);
  }, 30_000);

  it('adds an applied repository to the library when its job is done, and pushes its row', async () => {
    const pushed: unknown[] = [];
    host.onPush((m) => m.channel === 'library:update' && pushed.push(...m.payload.rows));
    const dest = join(dir, 'applied');
    const { jobId } = (await host.invoke('job:start', [
      { kind: 'apply', bundlePath: '/b/sample.hg', dest },
    ])) as { jobId: string };
    await host.jobs.whenEnded(jobId);
    for (let i = 0; i < 200 && !pushed.some((r) => (r as { status: string }).status === 'ok'); i++)
      await new Promise((r) => setTimeout(r, 25));
    const rows = (await host.invoke('library:list', [])) as {
      path: string;
      origin: string;
      status: string;
      tip?: { rev: number };
    }[];
    expect(rows).toMatchObject([{ path: dest, origin: 'apply', status: 'ok' }]);
    expect(rows[0]!.tip?.rev).toBeGreaterThanOrEqual(0);
    await expect(host.invoke('library:add', [dir])).rejects.toMatchObject({ code: 'NOT_A_REPO' });
  }, 30_000);

  it('a comparison job: refused into an existing folder; done, it stays out of the library and its cleanup removes it', async () => {
    const existing = join(dir, 'existing');
    await mkdir(existing);
    await expect(
      host.invoke('job:start', [
        { kind: 'apply', bundlePath: '/b/sample.hg', dest: existing, comparison: 'cmp-1' },
      ]),
    ).rejects.toMatchObject({ code: 'DEST_EXISTS' });
    const dest = join(dir, 'cmp', '01');
    const { jobId } = (await host.invoke('job:start', [
      { kind: 'apply', bundlePath: '/b/sample.hg', dest, comparison: 'cmp-1', library: false },
    ])) as { jobId: string };
    await host.jobs.whenEnded(jobId);
    await expect.poll(async () => (await host.comparisonFolders.list()).length).toBe(1);
    expect(await host.invoke('library:list', [])).toEqual([]);
    expect(await host.invoke('comparison:removeFolders', ['cmp-2'])).toEqual({ removed: 0 });
    expect(await host.invoke('comparison:removeFolders', [])).toEqual({ removed: 1 });
    await expect(stat(dest)).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(stat(existing)).resolves.toBeTruthy();
  }, 30_000);

  it('a comparison cleanup asked for as its job ends (the library still adding an earlier repository) removes it', async () => {
    // the earlier job's library add is still being noted when the comparison job ends
    const kept = join(dir, 'kept');
    const first = (await host.invoke('job:start', [
      { kind: 'apply', bundlePath: '/b/sample.hg', dest: kept },
    ])) as {
      jobId: string;
    };
    const dest = join(dir, 'cmp-race', '01');
    const second = (await host.invoke('job:start', [
      { kind: 'apply', bundlePath: '/b/sample.hg', dest, comparison: 'cmp-race', library: false },
    ])) as { jobId: string };
    await host.jobs.whenEnded(first.jobId);
    await host.jobs.whenEnded(second.jobId);
    // asked at once, as the page does when its run ends: no waiting for the host to note the job
    expect(await host.invoke('comparison:removeFolders', ['cmp-race'])).toEqual({ removed: 1 });
    await expect(stat(dest)).rejects.toMatchObject({ code: 'ENOENT' });
  }, 30_000);

  it('without a trash: says so in app:info, and deletes a library folder only with its name typed', async () => {
    expect(await host.invoke('app:info', [])).toMatchObject({ deleteRepository: 'permanent' });
    const dest = join(dir, 'to-delete');
    const { jobId } = (await host.invoke('job:start', [
      { kind: 'apply', bundlePath: '/b/sample.hg', dest },
    ])) as {
      jobId: string;
    };
    await host.jobs.whenEnded(jobId);
    await expect.poll(() => host.library.has(dest)).toBe(true);
    await expect(host.invoke('library:trash', [dest])).rejects.toMatchObject({ code: 'USAGE' });
    await expect(host.invoke('library:deleteFolder', [dest, 'other'])).rejects.toMatchObject({
      code: 'USAGE',
    });
    await expect(stat(dest)).resolves.toBeTruthy();
    await expect(host.invoke('library:deleteFolder', [dir, 'x'])).rejects.toMatchObject({ code: 'USAGE' });
    await host.invoke('library:deleteFolder', [dest, 'to-delete']);
    await expect(stat(dest)).rejects.toMatchObject({ code: 'ENOENT' });
    expect(host.library.has(dest)).toBe(false);
  }, 30_000);

  it('opens only folders it knows (where jobs that succeeded wrote, the folders holding them, library repositories) and has no trash in the web host', async () => {
    const opened: string[] = [];
    const shown: string[] = [];
    await host.dispose();
    host = new EngineHost({
      platform: {
        ...platform,
        openPath: async (p) => void opened.push(p),
        showItemInFolder: async (p) => void shown.push(p),
      },
      dataDir: join(dir, 'data'),
      sampleBundle,
      worker: { script: '/nonexistent' },
      createWorker: (start) => new UnpackingWorker(start),
    });
    await expect(host.invoke('shell:openPath', ['/etc'])).rejects.toMatchObject({
      code: 'USAGE',
      message: expect.stringContaining('refused'),
    });
    await expect(host.invoke('shell:openPath', [dir])).rejects.toMatchObject({ code: 'USAGE' });
    const dest = join(dir, 'applied');
    const { jobId } = (await host.invoke('job:start', [
      { kind: 'apply', bundlePath: '/b/sample.hg', dest },
    ])) as { jobId: string };
    await host.jobs.whenEnded(jobId);
    await host.invoke('shell:openPath', [dest]);
    await host.invoke('shell:openPath', [dir]);
    for (let i = 0; i < 200 && !host.library.has(dest); i++) await new Promise((r) => setTimeout(r, 25));
    await expect(host.invoke('shell:openPath', [join(dest, '.hg')])).rejects.toMatchObject({ code: 'USAGE' });
    expect(opened).toEqual([dest, dir]);
    // a failed job's destination (here an existing file) is not opened, nor shown
    const file = join(dir, 'notes.txt');
    await writeFile(file, 'x');
    const failed = (await host.invoke('job:start', [
      { kind: 'apply', bundlePath: '/b/sample.hg', dest: file },
    ])) as {
      jobId: string;
    };
    await host.jobs.whenEnded(failed.jobId);
    expect(host.jobs.list().find((j) => j.jobId === failed.jobId)?.state).toBe('failed');
    await expect(host.invoke('shell:openPath', [file])).rejects.toMatchObject({ code: 'USAGE' });
    // what a finished job wrote, once it is no longer a folder, is shown in its folder, never opened
    const other = join(dir, 'other');
    const done = (await host.invoke('job:start', [
      { kind: 'apply', bundlePath: '/b/sample.hg', dest: other },
    ])) as {
      jobId: string;
    };
    await host.jobs.whenEnded(done.jobId);
    await rm(other, { recursive: true });
    await writeFile(other, 'now a file');
    await host.invoke('shell:openPath', [other]);
    expect(shown).toEqual([other]);
    expect(opened).toEqual([dest, dir]);
    await expect(host.invoke('library:trash', [dest])).rejects.toMatchObject({
      code: 'USAGE',
      message: expect.stringContaining('no system trash'),
    });
    await expect(host.invoke('library:openTerminal', ['/etc'])).rejects.toMatchObject({ code: 'USAGE' });
    expect(await host.invoke('library:openTerminal', [dest])).toEqual({
      opened: false,
      command: `cd '${dest}'`,
    });
  }, 30_000);

  it.skipIf(missing('hg'))(
    `offers a sample that real hg clones from its path${skipNote('hg')}`,
    async () => {
      const { url } = (await host.invoke('sample:get', [])) as { url: string };
      const dest = join(dir, 'hg-clone');
      const r = await execFileAsync('hg', ['clone', '--stream', '-U', '-q', url, dest], {
        encoding: 'utf8',
        timeout: 20_000,
        env: { ...process.env, HGPLAIN: '1', HGRCPATH: '' },
      });
      expect(r.stderr).toBe('');
      const log = spawnSync('hg', ['-R', dest, 'log', '-T', '{rev}:{node} {bookmarks}\\n'], {
        encoding: 'utf8',
        env: { ...process.env, HGPLAIN: '1', HGRCPATH: '' },
      });
      // Same changesets and bookmarks as the repository the bundle was made from (phases differ:
      // the applied stream bundle makes them public).
      const expected = (await readFile(join(fixtures, 'default', 'log.txt'), 'utf8')).replace(
        / (public|draft|secret) /g,
        ' ',
      );
      expect(log.stdout).toBe(expected);
    },
    30_000,
  );
});

/** An apply job through the host (the unpacking worker), ended. */
async function startLogged(host: EngineHost, dataDir: string): Promise<string> {
  const { jobId } = (await host.invoke('job:start', [
    { kind: 'apply', bundlePath: sampleBundle, dest: join(dataDir, '..', 'logged') },
  ])) as { jobId: string };
  await host.jobs.whenEnded(jobId);
  return jobId;
}

describe('toInvokeFailure', () => {
  it('keeps SluiceError codes and maps errno errors to IO', () => {
    expect(toInvokeFailure(new SluiceError('DEST_EXISTS', 'x'))).toMatchObject({
      code: 'DEST_EXISTS',
      message: 'x',
    });
    expect(toInvokeFailure(Object.assign(new Error('no such file'), { code: 'ENOENT' }))).toMatchObject({
      code: 'IO',
      message: 'no such file',
    });
    expect(toInvokeFailure(Object.assign(new Error('x'), { code: 'ERR_INVALID_ARG_TYPE' }))).toMatchObject({
      code: 'IO',
    });
    expect(toInvokeFailure('weird')).toMatchObject({ code: 'IO', message: 'weird' });
  });
});

describe('emulatedCloseLatency', () => {
  it('is offered only when slowclose.so is preloaded with a prefix', async () => {
    const { emulatedCloseLatency } = await import('../../../src/main/host/engine-host');
    expect(emulatedCloseLatency({})).toBeUndefined();
    expect(emulatedCloseLatency({ LD_PRELOAD: '/tmp/slowclose.so' })).toBeUndefined();
    expect(emulatedCloseLatency({ SLOWCLOSE_PREFIX: '/dev/shm/x' })).toBeUndefined();
    expect(emulatedCloseLatency({ LD_PRELOAD: '/tmp/slowclose.so', SLOWCLOSE_PREFIX: '/dev/shm/x' })).toEqual(
      {
        prefix: '/dev/shm/x',
        closeUs: 1000,
      },
    );
    expect(
      emulatedCloseLatency({
        LD_PRELOAD: '/tmp/slowclose.so',
        SLOWCLOSE_PREFIX: '/dev/shm/x',
        SLOWCLOSE_US: '250',
      }),
    ).toEqual({ prefix: '/dev/shm/x', closeUs: 250 });
  });
});
