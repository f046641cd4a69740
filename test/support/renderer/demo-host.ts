// A simulated Sluice host for looking at the UI without an engine: jobs progress on timers, some
// paths fail or stall on purpose. Bundled into an IIFE (esbuild) and served in place of the web
// host's bridge.js by the screenshot spec (e2e/ui-gallery.spec.ts), so every state of every screen
// can be captured deterministically. Never part of the app bundle.

import type { SluiceEvent } from '../../../src/shared/events';
import { JobLogLines } from '../../../src/shared/job-log-lines';
import type {
  HistoryRecord,
  InvokeChannel,
  InvokeMap,
  JobSummary,
  PushChannel,
  PushMap,
  SluiceApi,
} from '../../../src/shared/ipc';
import type { BundleInfo, JobRequest } from '../../../src/shared/jobs';
import { DEFAULT_LIBRARY_SETTINGS, type RepoRow } from '../../../src/shared/library';
import type { AppState } from '../../../src/shared/app-state';

type Listener = (payload: never) => void;

interface SimJob {
  summary: JobSummary;
  timer?: ReturnType<typeof setInterval>;
  cancelled: boolean;
}

const HOME = '/home/ada/Sluice';

function hostError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

/** What the simulated host holds: its jobs, history, library, saved state, and how it pushes. */
interface DemoWorld {
  speed: number;
  jobs: Map<string, SimJob>;
  history: HistoryRecord[];
  savedState: AppState;
  library: Map<string, RepoRow>;
  seq: number;
  push: <C extends PushChannel>(channel: C, payload: PushMap[C]) => void;
  pushEvents: (jobId: string, events: SluiceEvent[]) => void;
  logOf: (jobId: string) => { lines: string[]; format: JobLogLines };
}

export function createDemoHost(
  options: { speed?: number } = {},
): SluiceApi & { emitHistory(records: HistoryRecord[]): void } {
  const listeners = new Map<PushChannel, Set<Listener>>();

  const push = <C extends PushChannel>(channel: C, payload: PushMap[C]) => {
    for (const l of listeners.get(channel) ?? []) (l as (p: PushMap[C]) => void)(payload);
  };
  // Like the real host: debug-log lines stay here, the renderer gets their count and asks for pages.
  const logs = new Map<string, { lines: string[]; format: JobLogLines }>();
  const logOf = (jobId: string) => {
    let log = logs.get(jobId);
    if (!log) logs.set(jobId, (log = { lines: [], format: new JobLogLines() }));
    return log;
  };
  const pushEvents = (jobId: string, events: SluiceEvent[]) => {
    const log = logOf(jobId);
    for (const e of events) log.format.add(e);
    for (const line of log.format.takeLines()) log.lines.push(line);
    push('job:events', {
      jobId,
      events: events.filter((e) => e.type !== 'files'),
      log: { total: log.lines.length, dropped: 0 },
    });
  };
  const w: DemoWorld = {
    speed: options.speed ?? 1,
    jobs: new Map(),
    history: seedHistory(),
    savedState: {},
    library: new Map(seedLibrary().map((r) => [r.path, r])),
    seq: 0,
    push,
    pushEvents,
    logOf,
  };
  const handlers = demoHandlers(w);

  return {
    invoke: ((channel: InvokeChannel, ...args: unknown[]) =>
      (handlers[channel] as (...a: unknown[]) => Promise<unknown>)(...args)) as SluiceApi['invoke'],
    on: ((channel: PushChannel, listener: Listener) => {
      let set = listeners.get(channel);
      if (!set) listeners.set(channel, (set = new Set()));
      set.add(listener);
      return () => set!.delete(listener);
    }) as SluiceApi['on'],
    pathForFile: async (file: File) => `${HOME}/uploads/${file.name}`,
    emitHistory(records) {
      w.history = records;
    },
  };
}

/** Plays a job's events on a timer, as the engine would send them. */
function simulateJob(w: DemoWorld, job: SimJob): void {
  const { jobId, request } = job.summary;
  const label = 'url' in request ? request.url : 'bundlePath' in request ? request.bundlePath : request.repo;
  const stall = /stall|slow/.test(label);
  const fail = /fail|broken/.test(label);
  const totalFiles = /big/.test(label) ? 250_000 : 4200;
  const totalBytes = totalFiles * 21_000;
  const durationMs = (/big/.test(label) ? 20_000 : 6_000) / w.speed;
  const dest = 'dest' in request ? request.dest : 'out' in request ? request.out : undefined;
  const kind = request.kind;
  const t0 = Date.now();
  let filesSent = 0;
  job.summary = { ...job.summary, state: 'running', startedAt: t0 };
  w.push('job:state', { ...job.summary });
  const events: SluiceEvent[] = [
    {
      type: 'start',
      jobId,
      time: t0,
      kind,
      format: kind === 'clone' ? 'stream-v2' : 'packed1',
      files: totalFiles,
      bytes: totalBytes,
      requirements: ['dotencode', 'fncache', 'generaldelta', 'revlogv1', 'sparserevlog', 'store'],
      source: label,
      ...(dest ? { dest } : {}),
    },
    { type: 'phase', jobId, time: t0, phase: kind === 'clone' ? 'connect' : 'write' },
  ];
  w.pushEvents(jobId, events);
  if (kind === 'clone')
    setTimeout(() => w.pushEvents(jobId, [{ type: 'phase', jobId, time: Date.now(), phase: 'write' }]), 200);
  job.timer = setInterval(() => {
    const now = Date.now();
    const elapsed = now - t0;
    let frac = Math.min(1, elapsed / durationMs);
    if (stall && frac > 0.42) frac = 0.42;
    // an uneven rate, so sparklines have a shape
    const wobble = 0.75 + 0.25 * Math.sin(elapsed / 400) + 0.1 * Math.sin(elapsed / 97);
    const files = Math.floor(frac * totalFiles);
    const bytes = Math.floor(frac * totalBytes);
    const evs: SluiceEvent[] = [];
    if (files > filesSent) {
      const entries = [];
      for (let i = filesSent; i < files; i++)
        entries.push({
          vfs: 's' as const,
          name: i % 2 ? `data/src/module${i >> 1}.py.i` : `data/src/module${i >> 1}.py.d`,
          size: 400 + ((i * 7919) % 90_000),
        });
      filesSent = files;
      evs.push({ type: 'files', jobId, time: now, entries });
    }
    const rate = stall && frac >= 0.42 ? 0 : (totalBytes / durationMs) * 1000 * wobble;
    evs.push({
      type: 'progress',
      jobId,
      time: now,
      bytes,
      files,
      totalBytes,
      totalFiles,
      bytesPerSec: rate,
      elapsedMs: elapsed,
      ...(rate > 0 ? { etaMs: ((totalBytes - bytes) / rate) * 1000 } : {}),
    });
    if (fail && frac > 0.6) {
      evs.push({
        type: 'error',
        jobId,
        time: now,
        code: 'NETWORK',
        message: 'connection reset by peer (127.0.0.1:8000) after 52.4 MB',
      });
      finishJob(w, job, 'failed', evs);
      return;
    }
    if (frac >= 1) {
      evs.push({ type: 'phase', jobId, time: now, phase: 'finalize' });
      evs.push({
        type: 'done',
        jobId,
        time: now,
        wallMs: elapsed,
        userCpuMs: elapsed * 0.42,
        systemCpuMs: elapsed * 0.18,
        bytes: totalBytes,
        files: totalFiles,
        close: {
          background: true,
          threads: 4,
          backgroundClosed: totalFiles - 12,
          syncClosed: 12,
          writerWaitMs: 31,
        },
        ...(dest ? { result: dest } : {}),
      });
      finishJob(w, job, 'done', evs);
      return;
    }
    w.pushEvents(jobId, evs);
  }, 100);
}

/** A job's end: its last events, its state, its library row and history record. */
function finishJob(
  w: DemoWorld,
  job: SimJob,
  state: 'done' | 'failed' | 'cancelled',
  events: SluiceEvent[],
): void {
  clearInterval(job.timer);
  w.pushEvents(job.summary.jobId, events);
  job.summary = { ...job.summary, state, endedAt: Date.now() };
  w.push('job:state', { ...job.summary });
  const done = events.find((e) => e.type === 'done') as Extract<SluiceEvent, { type: 'done' }> | undefined;
  const error = events.find((e) => e.type === 'error') as Extract<SluiceEvent, { type: 'error' }> | undefined;
  const request = job.summary.request;
  if (state === 'done' && (request.kind === 'clone' || request.kind === 'apply')) {
    const row = demoRow(request.dest, request.kind, request.kind === 'clone' ? request.url : undefined);
    w.library.set(row.path, row);
    w.push('library:update', { rows: [row], removed: [] });
  }
  w.history = [
    {
      jobId: job.summary.jobId,
      request: job.summary.request,
      state,
      startedAt: job.summary.startedAt,
      endedAt: Date.now(),
      ...(done ? { done } : {}),
      ...(error ? { error: { code: error.code, message: error.message } } : {}),
    },
    ...w.history,
  ];
}

/** The demo's answer to every invoke channel. */
function demoHandlers(w: DemoWorld): {
  [C in InvokeChannel]: (...args: InvokeMap[C]['args']) => Promise<InvokeMap[C]['result']>;
} {
  const settings = { ...DEFAULT_LIBRARY_SETTINGS };
  const handlers: {
    [C in InvokeChannel]: (...args: InvokeMap[C]['args']) => Promise<InvokeMap[C]['result']>;
  } = {
    'app:info': async () => ({
      version: '0.1.0',
      platform: 'linux',
      host: 'web',
      defaultCloneDir: HOME,
      deleteRepository: 'permanent',
    }),
    'job:start': async (request: JobRequest) => {
      const jobId = `demo-${++w.seq}`;
      const job: SimJob = {
        summary: { jobId, request, state: 'queued', startedAt: Date.now() },
        cancelled: false,
      };
      w.jobs.set(jobId, job);
      w.push('job:state', { ...job.summary });
      setTimeout(() => simulateJob(w, job), 50);
      return { jobId };
    },
    'job:cancel': async (jobId) => {
      const job = w.jobs.get(jobId);
      if (
        !job ||
        job.summary.state === 'done' ||
        job.summary.state === 'failed' ||
        job.summary.state === 'cancelled'
      )
        return;
      setTimeout(
        () =>
          finishJob(w, job, 'cancelled', [
            { type: 'phase', jobId, time: Date.now(), phase: 'cleanup' },
            { type: 'error', jobId, time: Date.now(), code: 'CANCELLED', message: 'cancelled' },
          ]),
        300,
      );
    },
    'job:list': async () => [...w.jobs.values()].map((j) => ({ ...j.summary })),
    'job:log': async (jobId, from, count, query) => {
      const all = w.logOf(jobId).lines;
      const needle = (query ?? '').trim().toLowerCase();
      const matching = needle ? all.filter((l) => l.toLowerCase().includes(needle)) : all;
      return {
        from,
        lines: matching.slice(from, from + count),
        total: all.length,
        dropped: 0,
        ...(needle ? { matches: matching.length } : {}),
      };
    },
    'job:exportLog': async (jobId, name, header) =>
      handlers['file:writeText'](
        name,
        `${header}\n${w
          .logOf(jobId)
          .lines.map((l) => `${l}\n`)
          .join('')}`,
      ),
    'bundle:inspect': async (path) => {
      await new Promise((r) => setTimeout(r, 250));
      return demoBundleInfo(path);
    },
    'server:probe': async (url) => {
      await new Promise((r) => setTimeout(r, 400));
      if (/down|refused/.test(url)) throw hostError('NETWORK', `connect ECONNREFUSED ${new URL(url).host}`);
      return {
        url,
        streamV1: true,
        streamV2: true,
        streamRequirements: ['generaldelta', 'revlogv1', 'sparserevlog'],
        compression: ['zstd', 'zlib', 'none'],
        cloneBundles: false,
        heads: 3,
      };
    },
    'sample:get': async () => ({ url: 'http://127.0.0.1:41234/', name: 'sample', files: 4200 }),
    'history:list': async () => w.history,
    'history:clear': async () => {
      w.history = [];
    },
    'dialog:pickDirectory': async () => null,
    'dialog:pickBundle': async () => null,
    'shell:openPath': async () => undefined,
    'shell:openExternal': async () => undefined,
    'file:writeText': async (name, text) => {
      // kept for the specs to read back (the demo has no disk)
      const store = ((globalThis as { __sluiceDemoExports?: Record<string, string> }).__sluiceDemoExports ??=
        {});
      store[name] = text;
      return `${HOME}/exports/${name}`;
    },
    'credentials:answer': async () => undefined,
    'credentials:list': async () => ({
      available: false,
      reason: 'the web host never stores credentials',
      entries: [],
    }),
    'credentials:forget': async () => undefined,
    'downloads:list': async () => [],
    'downloads:remove': async () => ({ removed: 0 }),
    'comparison:removeFolders': async () => ({ removed: 0 }),
    'library:list': async () => [...w.library.values()],
    'library:add': async (path) => {
      if (/not-a-repo|\/tmp$/.test(path))
        throw hostError('NOT_A_REPO', `${path} is not a Mercurial repository (no .hg folder)`);
      const row = w.library.get(path) ?? demoRow(path, 'user');
      w.library.set(path, row);
      w.push('library:update', { rows: [row], removed: [] });
      return row;
    },
    'library:remove': async (path) => {
      w.library.delete(path);
      w.push('library:update', { rows: [], removed: [path] });
    },
    'library:deleteFolder': async (path) => {
      w.library.delete(path);
      w.push('library:update', { rows: [], removed: [path] });
    },
    'library:trash': async (path) => {
      throw hostError(
        'USAGE',
        `the web host has no system trash, so Sluice does not delete ${path}; remove it from the list and delete the folder yourself`,
      );
    },
    'library:openTerminal': async (path) => ({ opened: false, command: `cd '${path}'` }),
    'library:copySource': async (path) => ({ text: w.library.get(path)?.source ?? '', copied: false }),
    'state:get': async () => w.savedState,
    'state:set': async (patch) => {
      w.savedState = { ...w.savedState, ...patch };
    },
    'dest:check': async (path) => {
      if (/\.hg$|file/.test(path)) return { ok: false, reason: 'is a file' };
      if (/full|existing/.test(path) || w.library.has(path)) return { ok: false, reason: 'is not empty' };
      return { ok: true, reason: 'will be created' };
    },
    'job:move': async () => undefined,
    'library:fetch': async () => undefined,
    'library:fetchAll': async () => undefined,
    'library:signIn': async () => undefined,
    'library:settings': async () => ({ ...settings }),
    'library:setSettings': async (change) => Object.assign(settings, change),
    'library:setFetchInterval': async () => undefined,
  };
  return handlers;
}

/** What the demo's bundle:inspect says of `path`: its name picks the kind, a refusal, an unsupported one. */
function demoBundleInfo(path: string): BundleInfo {
  if (/notes|bad|\.txt$/.test(path))
    throw hostError('BAD_MAGIC', `${path}: not a stream bundle (starts with "# Rel")`);
  const info: BundleInfo = {
    path,
    type: /packed|hgs1/i.test(path) ? 'packed1' : 'v2',
    compression: /zstd/.test(path) ? 'ZS' : 'UN',
    requirements: [
      'dotencode',
      'fncache',
      'generaldelta',
      'revlogv1',
      'sparserevlog',
      'store',
      ...(/unsupported/.test(path) ? ['exp-rc-dirstate-v2', 'revlog-compression-lz4'] : []),
    ],
    files: 4200,
    bytes: 88_200_000,
    unsupported: /unsupported/.test(path) ? ['exp-rc-dirstate-v2', 'revlog-compression-lz4'] : [],
    sizeOnDisk: 88_950_112,
  };
  return info;
}

function demoRow(path: string, origin: RepoRow['origin'], source?: string): RepoRow {
  const name = path.split('/').pop() || path;
  return {
    path,
    name,
    status: 'ok',
    ...(source ? { source } : {}),
    tip: {
      rev: 4199,
      node: '5f2c9a1b7e04',
      date: Date.UTC(2026, 10, 28, 9, 12),
      tz: 0,
      user: 'Ada <ada@example.com>',
      summary: 'sample: the last change',
      branch: 'default',
      bookmarks: [],
    },
    parent: origin === 'clone' ? null : { node: '5f2c9a1b7e04', rev: 4199, merging: false },
    storeBytes: 88_200_000,
    storeFiles: 4200,
    addedAt: Date.now(),
    origin,
    ...(origin === 'clone' ? { lastPullAt: Date.now() } : {}),
  };
}

function seedLibrary(): RepoRow[] {
  const t = Date.UTC(2026, 10, 29, 14, 30);
  return [
    {
      path: `${HOME}/mozilla-central`,
      name: 'mozilla-central',
      status: 'ok',
      source: 'https://hg.mozilla.org/mozilla-central',
      tip: {
        rev: 812_344,
        node: '9c1e5b2d7a30',
        date: t - 3_600_000,
        tz: -3600,
        user: 'Ada <ada@example.com>',
        summary: 'Bug 1931 - fix the docking of the sidebar',
        branch: 'default',
        bookmarks: ['central'],
      },
      parent: { node: '9c1e5b2d7a30', rev: 812_344, merging: false },
      storeBytes: 3_900_000_000,
      storeFiles: 412_000,
      lastPullAt: t - 1_800_000,
      addedAt: t - 86_400_000 * 3,
      origin: 'clone',
    },
    {
      path: `${HOME}/hg-stable`,
      name: 'hg-stable',
      status: 'ok',
      source: 'https://www.mercurial-scm.org/repo/hg-stable',
      tip: {
        rev: 49_870,
        node: '1d4e0b7f22c9',
        date: t - 86_400_000,
        tz: 0,
        user: 'Bea <bea@example.org>',
        summary: 'rust: speed up the status fast path',
        branch: 'stable',
        bookmarks: [],
      },
      parent: null,
      storeBytes: 190_000_000,
      storeFiles: 7_200,
      lastPullAt: t - 86_400_000 * 2,
      addedAt: t - 86_400_000 * 9,
      origin: 'clone',
    },
    {
      path: '/mnt/usb/old-project',
      name: 'old-project',
      status: 'missing',
      problem: '/mnt/usb/old-project is gone (moved or deleted?)',
      source: 'ssh://hg@example.com/old-project',
      addedAt: t - 86_400_000 * 30,
      origin: 'user',
    },
  ];
}

function seedHistory(): HistoryRecord[] {
  const now = Date.UTC(2026, 10, 29, 14, 30);
  const rec = (
    i: number,
    request: JobRequest,
    state: HistoryRecord['state'],
    wallMs: number,
    bytes: number,
    files: number,
    error?: { code: string; message: string },
  ): HistoryRecord => ({
    jobId: `h${i}`,
    request,
    state,
    startedAt: now - i * 3_600_000 - wallMs,
    endedAt: now - i * 3_600_000,
    ...(state === 'done'
      ? {
          done: {
            type: 'done',
            jobId: `h${i}`,
            time: now - i * 3_600_000,
            wallMs,
            userCpuMs: wallMs * 0.4,
            systemCpuMs: wallMs * 0.2,
            bytes,
            files,
            result: 'dest' in request ? request.dest : undefined,
          },
          samples: Array.from(
            { length: 40 },
            (_, k) =>
              [k * (wallMs / 40), (bytes / wallMs) * 1000 * (0.7 + 0.3 * Math.sin(k / 3 + i))] as [
                number,
                number,
              ],
          ),
        }
      : {}),
    ...(error ? { error } : {}),
  });
  return [
    rec(
      1,
      { kind: 'clone', url: 'https://hg.example.org/mozilla-unified', dest: `${HOME}/mozilla-unified` },
      'done',
      184_000,
      5_400_000_000,
      312_000,
    ),
    rec(
      2,
      { kind: 'apply', bundlePath: '/home/ada/Downloads/stream-v2.hg', dest: `${HOME}/stream-v2` },
      'done',
      2_400,
      88_200_000,
      4200,
    ),
    rec(3, { kind: 'clone', url: 'http://127.0.0.1:8000/', dest: `${HOME}/repo` }, 'failed', 1_200, 0, 0, {
      code: 'NO_STREAM',
      message: 'the server does not allow stream clones (server.uncompressed=false)',
    }),
    rec(
      4,
      { kind: 'bundle', repo: `${HOME}/mozilla-unified`, out: `${HOME}/mu-4k.hg`, chunkSize: 4096 },
      'done',
      41_000,
      5_400_000_000,
      312_000,
    ),
    rec(
      5,
      { kind: 'apply', bundlePath: '/home/ada/Downloads/big.hg', dest: `${HOME}/big` },
      'cancelled',
      8_000,
      0,
      0,
      { code: 'CANCELLED', message: 'cancelled' },
    ),
  ];
}

// As a served script: define window.sluice like the real bridge does.
const w = globalThis as { sluice?: SluiceApi; document?: unknown; __sluiceDemoSpeed?: number };
if (w.document && !w.sluice) {
  Object.defineProperty(globalThis, 'sluice', {
    value: Object.freeze(createDemoHost({ speed: w.__sluiceDemoSpeed ?? 1 })),
    enumerable: true,
  });
}
