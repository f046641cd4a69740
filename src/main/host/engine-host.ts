// Everything a Sluice host does, minus the platform: the job registry, the history, the sample
// repository and one handler per invoke channel. Electron main and the web host are thin adapters
// around one EngineHost: they deliver `invoke` calls from their renderer (after checking who sent
// them), forward `onPush` messages to it, and supply a HostPlatform for dialogs and the shell.

import { lstat, rm } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import * as engine from './engine-api';
import { EngineWorkerHost, type EngineWorkerLike, type EngineWorkerOptions } from './engine-worker-host';
import { AppStateStore } from './app-state-store';
import { ComparisonFolders } from './comparison-folders';
import { HistoryStore } from './history-store';
import { JobLogStore } from './job-log-store';
import { destinationOf, JobRegistry, type PushMessage } from './job-registry';
import { SampleRepository } from './sample-repository';
import { validateInvoke, warmUpValidation } from './validate';
import { checkDestination } from './destination-check';
import { RepoLibrary, type RepoLibraryOptions } from './repo-library';
import {
  FetchScheduler,
  type FetchSchedulerOptions,
  type IncomingNotifier,
  type PowerState,
} from './fetch-scheduler';
import { CredentialStore, type CredentialCipher } from './credential-store';
import { changeDirectoryCommand } from './terminal';
import { TypedEmitter } from './typed-emitter';
import { isSluiceError, SluiceError } from '../engine/errors';
import type { WorkerStartData } from './worker-protocol';
import type { AppInfo, InvokeChannel, InvokeMap, JobSummary } from '../../shared/ipc';
import type { JobRequest } from '../../shared/jobs';

/** What differs between Electron and the web host. */
export interface HostPlatform {
  readonly host: AppInfo['host'];
  readonly version: string;
  readonly platform: string;
  readonly defaultCloneDir: string;
  pickDirectory(defaultPath?: string): Promise<string | null>;
  pickBundle(): Promise<string | null>;
  /** opens a folder in the file manager (only folders: see EngineHost's shell:openPath) */
  openPath(path: string): Promise<void>;
  /** shows a file in its folder, selected, without opening it; absent where there is no file manager */
  showItemInFolder?(path: string): Promise<void>;
  openExternal(url: string): Promise<void>;
  /** saves an export (log, comparison); returns where, or null when the user cancelled */
  writeText(suggestedName: string, text: string): Promise<string | null>;
  /** the platform's rule for absolute paths (win32 on Windows) */
  isAbsolutePath?(path: string): boolean;
  /** moves a file or folder to the system trash; absent where there is none (web host) */
  trashItem?(path: string): Promise<void>;
  /** starts a terminal in `dir`; false when none could be started; absent = the host does not start programs */
  openTerminal?(dir: string): Promise<boolean>;
  /** writes the system clipboard; absent = the renderer copies (web host: navigator.clipboard) */
  writeClipboard?(text: string): Promise<void>;
  /** encrypts remembered credentials (Electron's safeStorage); absent or null = never stored, for `credentialsUnavailableReason` */
  credentialCipher?: CredentialCipher | null;
  credentialsUnavailableReason?: string;
}

export interface EngineHostOptions {
  platform: HostPlatform;
  /** per-user data: history.json, the sample repository */
  dataDir: string;
  /** the shipped sample bundle (build/sample/sample.hg, or resources/sample/sample.hg when packaged) */
  sampleBundle: string;
  worker: EngineWorkerOptions;
  /** tests replace the engine's entry points and the worker */
  engine?: Partial<
    Pick<typeof engine, 'inspectBundle' | 'probeServer' | 'cleanStaleTemporaries' | 'sweepDeadTemporaries'>
  >;
  createWorker?: (start: WorkerStartData) => EngineWorkerLike;
  maxConcurrentJobs?: number;
  cancelGraceMs?: number;
  /** tests: the library's readers and watcher timings */
  library?: Pick<RepoLibraryOptions, 'read' | 'readWorkingCopy' | 'watch' | 'batchMs'>;
  /** battery and network state for the background fetch (Electron's powerMonitor); default: on AC, online */
  power?: PowerState;
  /** changesets arrived on a background fetch (Electron: a system notification); default: a `library:incoming` push */
  notifyIncoming?: IncomingNotifier;
  /** tests: the background fetch's clock */
  fetchClock?: FetchSchedulerOptions['clock'];
}

export type InvokeHandlers = {
  [C in InvokeChannel]: (...args: InvokeMap[C]['args']) => Promise<InvokeMap[C]['result']>;
};

/** A failed invoke: `code` is an engine ErrorCode (USAGE for invalid requests), what the renderer's toUiError() reads. */
export class InvokeFailure extends Error {
  override readonly name = 'InvokeFailure';
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export class EngineHost {
  readonly jobs: JobRegistry;
  readonly history: HistoryStore;
  readonly logs: JobLogStore;
  readonly sample: SampleRepository;
  readonly library: RepoLibrary;
  readonly fetches: FetchScheduler;
  readonly credentials: CredentialStore;
  readonly state: AppStateStore;
  readonly comparisonFolders: ComparisonFolders;
  private readonly pushes = new TypedEmitter<{ push: [message: PushMessage] }>();
  /** library updates of ended jobs, in order */
  private noting: Promise<void> = Promise.resolve();
  private readonly handlers: InvokeHandlers;
  private readonly isAbsolutePath: (p: string) => boolean;
  private readonly api: typeof engine;

  constructor(readonly options: EngineHostOptions) {
    const api = (this.api = { ...engine, ...options.engine });
    const createWorker =
      options.createWorker ?? ((start: WorkerStartData) => new EngineWorkerHost(start, options.worker));
    this.isAbsolutePath = options.platform.isAbsolutePath ?? isAbsolute;
    this.history = new HistoryStore(join(options.dataDir, 'history.json'));
    this.logs = new JobLogStore(join(options.dataDir, 'logs'));
    this.state = new AppStateStore(join(options.dataDir, 'state.json'));
    this.comparisonFolders = new ComparisonFolders(join(options.dataDir, 'comparison-folders.json'));
    const p0 = options.platform;
    this.credentials = new CredentialStore(
      join(options.dataDir, 'credentials.enc'),
      p0.credentialCipher ?? null,
      p0.credentialsUnavailableReason ??
        (p0.host === 'web'
          ? 'the web host never stores credentials'
          : 'this system offers no encryption for stored credentials'),
    );
    const store = this.credentials;
    this.jobs = new JobRegistry({
      savedCredentials: {
        lookup: (url) => store.lookup(url),
        remember: (url, c) => store.remember(url, c),
        refused: async (url) => {
          const origin = new URL(url).origin;
          await store.forget(origin);
        },
      },
      createWorker,
      history: this.history,
      logs: this.logs,
      cleanStaleTemporaries: api.cleanStaleTemporaries,
      maxConcurrent: options.maxConcurrentJobs,
      cancelGraceMs: options.cancelGraceMs,
    });
    this.sample = new SampleRepository({
      bundlePath: options.sampleBundle,
      dir: join(options.dataDir, 'sample'),
      createWorker,
    });
    this.library = new RepoLibrary({
      file: join(options.dataDir, 'library.json'),
      onUpdate: (update) => this.pushes.emit('push', { channel: 'library:update', payload: update }),
      // hg status runs on the engine worker: its reads are synchronous and may be many
      readWorkingCopy: (root) => this.jobs.query({ kind: 'summary', repo: root }),
      // a store's size is a stat per file: measured when no job would compete with it
      busy: () => this.jobs.list().some((j) => j.state === 'running' || j.state === 'queued'),
      ...options.library,
    });
    this.fetches = new FetchScheduler({
      library: this.library,
      fetch: (repo, previous, { interactive }) =>
        this.jobs.query({ kind: 'fetch', request: { repo, ...(previous && { previous }) } }, { interactive }),
      ...(options.power && { power: options.power }),
      notify:
        options.notifyIncoming ??
        ((notice) => this.pushes.emit('push', { channel: 'library:incoming', payload: notice })),
      ...(options.fetchClock && { clock: options.fetchClock }),
    });
    this.jobs.onPush((message) => {
      if (message.channel === 'job:state') {
        const summary = message.payload;
        this.noting = this.noting.then(() => this.noteJobEnded(summary));
      }
      this.pushes.emit('push', message);
    });
    const p = options.platform;
    this.handlers = {
      'app:info': async () => ({
        version: p.version,
        platform: p.platform,
        host: p.host,
        defaultCloneDir: p.defaultCloneDir,
        deleteRepository: p.trashItem ? 'trash' : 'permanent',
        emulatedCloseLatency: emulatedCloseLatency(process.env),
      }),
      'job:start': async (request, label) => {
        await this.assertComparisonMakesNew(request);
        return this.jobs.start(request, label);
      },
      'job:cancel': async (jobId) => this.jobs.cancel(jobId),
      'job:list': async () => this.jobs.list(),
      'job:move': async (jobId, position) => this.jobs.move(jobId, position),
      'job:log': (jobId, from, count, query) => this.logs.page(jobId, from, count, query),
      'job:exportLog': async (jobId, name, header) => p.writeText(name, await this.logs.text(jobId, header)),
      'bundle:inspect': (path) => api.inspectBundle(path),
      'server:probe': (url) => api.probeServer(url),
      'sample:get': () => this.sample.get(),
      'history:list': () => this.history.list(),
      'history:clear': async () => {
        await this.history.clear();
        await this.logs.clear();
      },
      'dialog:pickDirectory': (defaultPath) => p.pickDirectory(defaultPath),
      'dialog:pickBundle': () => p.pickBundle(),
      'shell:openPath': (path) => this.openKnownPath(path),
      'shell:openExternal': (url) => p.openExternal(url),
      'file:writeText': (name, text) => p.writeText(name, text),
      'credentials:answer': async (requestId, answer, remember) =>
        this.jobs.answerCredentials(requestId, answer, remember === true && this.credentials.available),
      'credentials:list': async () => ({
        available: this.credentials.available,
        ...(!this.credentials.available && { reason: this.credentials.reason }),
        entries: await this.credentials.list(),
      }),
      'credentials:forget': (origin) => this.credentials.forget(origin),
      'downloads:list': () => api.listPartialDownloads(),
      'downloads:remove': async (key) => ({
        removed:
          key === undefined
            ? await api.clearPartialDownloads()
            : Number(await api.removePartialDownload(key)),
      }),
      'library:list': () => this.library.list(),
      'comparison:removeFolders': async (run) => {
        // a job's end is noted after the page hears of it: its folder must be recorded first
        await this.noting;
        return { removed: await this.comparisonFolders.remove(run) };
      },
      'library:add': (path) => this.library.add(path, 'user'),
      'library:remove': (path) => this.library.remove(path),
      'library:trash': async (path) => {
        this.assertInLibrary(path);
        if (!p.trashItem) {
          throw new SluiceError(
            'USAGE',
            `the web host has no system trash, so Sluice does not delete ${path}; remove it from the list and delete the folder yourself`,
          );
        }
        await p.trashItem(path);
        await this.library.remove(path);
      },
      'library:deleteFolder': async (path, typedName) => {
        this.assertInLibrary(path);
        if (p.trashItem)
          throw new SluiceError(
            'USAGE',
            `this host moves repositories to the trash; ${path} was not deleted`,
          );
        if (typedName !== basename(path))
          throw new SluiceError('USAGE', `type the folder's name, ${basename(path)}, to delete it`);
        // the library's path itself must be a folder: rm would follow nothing, but a link is not the repository
        const st = await lstat(path);
        if (!st.isDirectory()) throw new SluiceError('USAGE', `${path} is not a folder; it was not deleted`);
        await rm(path, { recursive: true, force: true });
        await this.library.remove(path);
      },
      'library:openTerminal': async (path) => {
        this.assertInLibrary(path);
        const command = changeDirectoryCommand(path, p.platform as NodeJS.Platform);
        return { opened: p.openTerminal ? await p.openTerminal(path) : false, command };
      },
      'library:copySource': async (path) => {
        this.assertInLibrary(path);
        const text = this.library.get(path)?.source;
        if (!text) throw new SluiceError('USAGE', `${path} has no source (no paths.default in its .hg/hgrc)`);
        if (!p.writeClipboard) return { text, copied: false };
        await p.writeClipboard(text);
        return { text, copied: true };
      },
      'dest:check': (path) => checkDestination(path),
      'state:get': () => this.state.get(),
      'state:set': (patch) => this.state.set(patch),
      'library:fetch': async (path) => {
        this.assertInLibrary(path);
        void this.fetches.fetchOne(path);
      },
      // the rows show progress (fetching) and results; the call returns once the fetches are queued
      'library:fetchAll': async () => void this.fetches.fetchAll(),
      'library:signIn': async (path) => {
        this.assertInLibrary(path);
        void this.fetches.signIn(path);
      },
      'library:settings': () => this.library.settings(),
      'library:setSettings': async (change) => {
        const settings = await this.library.setSettings(change);
        this.jobs.setMaxConcurrent(settings.maxTransfers);
        await this.fetches.reschedule();
        return settings;
      },
      'library:setFetchInterval': async (path, interval) => {
        this.assertInLibrary(path);
        await this.library.setFetchInterval(path, interval ?? undefined);
        await this.fetches.reschedule();
      },
    };
  }

  /**
   * What the user's first job would otherwise pay for: the engine worker starts (and warms up on
   * its own), and job:start's validation runs once on a request of no consequence, after the
   * current turn so that nothing at start waits for it.
   */
  prepareFirstJob(): void {
    this.jobs.warmUp();
    setImmediate(() => warmUpValidation(this.isAbsolutePath));
  }

  /**
   * Background work at start: starts the engine worker and prepares the sample repository (so the
   * first click is quick), and sweeps temporaries that jobs of a previous run (killed, crashed)
   * left beside their destinations.
   */
  warmUp(): void {
    this.prepareFirstJob();
    this.sample.get().catch((e: unknown) => console.warn((e as Error).message));
    this.library
      .load()
      .then(async () => {
        this.jobs.setMaxConcurrent((await this.library.settings()).maxTransfers);
        await this.fetches.reschedule();
      })
      .catch((e: unknown) => console.warn('library:', (e as Error).message));
    void this.sweepPreviousRuns();
  }

  private async sweepPreviousRuns(): Promise<void> {
    const parents = new Set<string>();
    for (const record of (await this.history.list()).slice(0, 50)) {
      const dest = destinationOf(record.request);
      if (dest) parents.add(dirname(dest));
    }
    for (const parent of parents) await this.api.sweepDeadTemporaries(parent).catch(() => {});
  }

  onPush(listener: (message: PushMessage) => void): () => void {
    return this.pushes.on('push', listener);
  }

  /**
   * A finished clone or apply adds its repository to the library (unless asked not to); a pull
   * records its time; what a comparison job made is recorded for its cleanup.
   */
  private async noteJobEnded(summary: JobSummary): Promise<void> {
    if (summary.state !== 'done') return;
    const request = summary.request;
    try {
      const made = destinationOf(request);
      if ('comparison' in request && request.comparison !== undefined && made !== undefined)
        await this.comparisonFolders.record(request.comparison, made);
      if ((request.kind === 'clone' || request.kind === 'apply') && request.library === false) return;
      if (request.kind === 'clone' || request.kind === 'apply') {
        await this.library.add(
          request.dest,
          request.kind,
          request.kind === 'clone' ? (summary.endedAt ?? Date.now()) : undefined,
        );
      } else if (request.kind === 'pull' && !request.incoming) {
        this.library.notePull(request.repo, summary.endedAt ?? Date.now());
      }
    } catch (e) {
      console.warn(`library: cannot add ${destinationOf(request) ?? ''}:`, (e as Error).message);
    }
  }

  /**
   * A comparison job writes somewhere new: what it made is deleted by the cleanup, so it must never
   * be something that was there before (an existing repository a changegroup apply adds to).
   */
  private async assertComparisonMakesNew(request: JobRequest): Promise<void> {
    if (!('comparison' in request) || request.comparison === undefined) return;
    const made = destinationOf(request);
    if (made !== undefined && (await lstat(made).catch(() => null)))
      throw new SluiceError('DEST_EXISTS', `a comparison job writes a new folder or file; ${made} exists`, {
        dest: made,
      });
  }

  private assertInLibrary(path: string): void {
    if (!this.library.has(path)) throw new SluiceError('USAGE', `${path} is not a repository of the library`);
  }

  /**
   * Opens a folder Sluice knows: a library repository, or where a job that succeeded wrote (its
   * destination or result, and the folder holding it: a comparison's results folder). A file there
   * (a bundle a job wrote) is shown in its folder, never opened (opening runs its handler). Anything
   * else, a failed job's destination included (it can be any existing file), is refused.
   */
  private async openKnownPath(path: string): Promise<void> {
    const target = resolve(path);
    if (!(await this.isKnownPath(target))) {
      throw new SluiceError(
        'USAGE',
        `refused to open ${path}: Sluice opens only library repositories and folders its finished jobs wrote`,
      );
    }
    const isFolder = await lstat(target).then(
      (st) => st.isDirectory(),
      () => false,
    );
    const p = this.options.platform;
    if (isFolder) return p.openPath(target);
    if (!p.showItemInFolder)
      throw new SluiceError('USAGE', `${target} is not a folder; Sluice opens only folders`);
    await p.showItemInFolder(target);
  }

  private async isKnownPath(target: string): Promise<boolean> {
    if (this.library.has(target)) return true;
    const outputs: string[] = [];
    for (const job of this.jobs.list()) {
      const dest = job.state === 'done' ? destinationOf(job.request) : undefined;
      if (dest) outputs.push(dest);
    }
    for (const record of await this.history.list()) {
      if (record.state !== 'done') continue;
      const dest = destinationOf(record.request);
      if (dest) outputs.push(dest);
      if (record.done?.result) outputs.push(record.done.result);
    }
    return outputs.some((out) => {
      const o = resolve(out);
      return o === target || dirname(o) === target;
    });
  }

  /**
   * One call from a renderer: validated first (channel, argument count, shapes, paths, URLs),
   * then handled. Rejects with an InvokeFailure.
   */
  async invoke(channel: unknown, args: unknown): Promise<unknown> {
    let valid: unknown[];
    let name: InvokeChannel;
    try {
      valid = validateInvoke(channel, args, this.isAbsolutePath);
      name = channel as InvokeChannel;
    } catch (e) {
      throw toInvokeFailure(e);
    }
    try {
      const handler = this.handlers[name] as (...a: unknown[]) => Promise<unknown>;
      return await handler(...valid);
    } catch (e) {
      throw toInvokeFailure(e);
    }
  }

  async dispose(): Promise<void> {
    this.fetches.dispose();
    await this.jobs.dispose();
    await this.noting;
    await this.library.dispose();
    await this.credentials.flushed();
    await this.state.flushed();
    await this.comparisonFolders.flushed();
    await this.sample.dispose();
    await this.history.flushed();
  }
}

/** Any error as an InvokeFailure: SluiceErrors keep their code, Node's errno errors become IO. */
export function toInvokeFailure(e: unknown): InvokeFailure {
  if (e instanceof InvokeFailure) return e;
  if (isSluiceError(e)) return new InvokeFailure(e.code, e.message);
  if (e && typeof e === 'object') {
    const o = e as { code?: unknown; message?: unknown };
    const message = typeof o.message === 'string' ? o.message : String(e);
    const isErrno = typeof o.code === 'string' && (/^E[A-Z]+$/.test(o.code) || o.code.startsWith('ERR_'));
    if (typeof o.code === 'string' && /^[A-Z][A-Z_]+$/.test(o.code) && !isErrno)
      return new InvokeFailure(o.code, message);
    return new InvokeFailure('IO', message);
  }
  return new InvokeFailure('IO', String(e));
}

/**
 * When the host runs with ../shared/bench/slowclose.so preloaded (LD_PRELOAD, SLOWCLOSE_PREFIX,
 * SLOWCLOSE_US), closes of files under the prefix are slowed to emulate NTFS; the comparisons view
 * then offers "emulated close latency" runs, labelled as emulated, written under that prefix.
 */
export function emulatedCloseLatency(env: NodeJS.ProcessEnv): AppInfo['emulatedCloseLatency'] {
  const prefix = env.SLOWCLOSE_PREFIX;
  if (!env.LD_PRELOAD?.includes('slowclose') || !prefix) return undefined;
  const closeUs = Number(env.SLOWCLOSE_US ?? 1000);
  return Number.isFinite(closeUs) && closeUs > 0 ? { prefix, closeUs } : undefined;
}
