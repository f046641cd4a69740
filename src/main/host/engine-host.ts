// Everything a Sluice host does, minus the platform: the job registry, the history, the sample
// repository and one handler per invoke channel. Electron main and the web host are thin adapters
// around one EngineHost: they deliver `invoke` calls from their renderer (after checking who sent
// them), forward `onPush` messages to it, and supply a HostPlatform for dialogs and the shell.

import { dirname, isAbsolute, join } from 'node:path';
import * as engine from './engine-api';
import { EngineWorkerHost, type EngineWorkerLike, type EngineWorkerOptions } from './engine-worker-host';
import { HistoryStore } from './history-store';
import { JobLogStore } from './job-log-store';
import { destinationOf, JobRegistry, type PushMessage } from './job-registry';
import { SampleRepository } from './sample-repository';
import { validateInvoke } from './validate';
import { isSluiceError } from '../engine/errors';
import type { WorkerStartData } from './worker-protocol';
import type { AppInfo, InvokeChannel, InvokeMap } from '../../shared/ipc';

/** What differs between Electron and the web host. */
export interface HostPlatform {
  readonly host: AppInfo['host'];
  readonly version: string;
  readonly platform: string;
  readonly defaultCloneDir: string;
  pickDirectory(defaultPath?: string): Promise<string | null>;
  pickBundle(): Promise<string | null>;
  openPath(path: string): Promise<void>;
  openExternal(url: string): Promise<void>;
  /** saves an export (log, comparison); returns where, or null when the user cancelled */
  writeText(suggestedName: string, text: string): Promise<string | null>;
  /** the platform's rule for absolute paths (win32 on Windows) */
  isAbsolutePath?(path: string): boolean;
}

export interface EngineHostOptions {
  platform: HostPlatform;
  /** per-user data: history.json, the sample repository */
  dataDir: string;
  /** the shipped sample bundle (build/sample/sample.hg, or resources/sample/sample.hg when packaged) */
  sampleBundle: string;
  worker: EngineWorkerOptions;
  /** tests replace the engine's entry points and the worker */
  engine?: Partial<Pick<typeof engine, 'inspectBundle' | 'probeServer' | 'startServer' | 'cleanStaleTemporaries' | 'sweepDeadTemporaries'>>;
  createWorker?: (start: WorkerStartData) => EngineWorkerLike;
  maxConcurrentJobs?: number;
  cancelGraceMs?: number;
}

export type InvokeHandlers = { [C in InvokeChannel]: (...args: InvokeMap[C]['args']) => Promise<InvokeMap[C]['result']> };

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
  private readonly handlers: InvokeHandlers;
  private readonly isAbsolutePath: (p: string) => boolean;
  private readonly api: typeof engine;

  constructor(readonly options: EngineHostOptions) {
    const api = (this.api = { ...engine, ...options.engine });
    const createWorker = options.createWorker ?? ((start: WorkerStartData) => new EngineWorkerHost(start, options.worker));
    this.isAbsolutePath = options.platform.isAbsolutePath ?? isAbsolute;
    this.history = new HistoryStore(join(options.dataDir, 'history.json'));
    this.logs = new JobLogStore(join(options.dataDir, 'logs'));
    this.jobs = new JobRegistry({
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
      startServer: api.startServer,
    });
    const p = options.platform;
    this.handlers = {
      'app:info': async () => ({
        version: p.version,
        platform: p.platform,
        host: p.host,
        defaultCloneDir: p.defaultCloneDir,
        emulatedCloseLatency: emulatedCloseLatency(process.env),
      }),
      'job:start': async (request, label) => this.jobs.start(request, label),
      'job:cancel': async (jobId) => this.jobs.cancel(jobId),
      'job:list': async () => this.jobs.list(),
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
      'shell:openPath': (path) => p.openPath(path),
      'shell:openExternal': (url) => p.openExternal(url),
      'file:writeText': (name, text) => p.writeText(name, text),
      'credentials:answer': async (requestId, answer) => this.jobs.answerCredentials(requestId, answer),
    };
  }

  /**
   * Background work at start: starts the engine worker and prepares the sample repository (so the
   * first click is quick), and sweeps temporaries that jobs of a previous run (killed, crashed)
   * left beside their destinations.
   */
  warmUp(): void {
    this.jobs.warmUp();
    this.sample.get().catch((e: unknown) => console.warn((e as Error).message));
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
    return this.jobs.onPush(listener);
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
    await this.jobs.dispose();
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
    if (typeof o.code === 'string' && /^[A-Z][A-Z_]+$/.test(o.code) && !isErrno) return new InvokeFailure(o.code, message);
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
