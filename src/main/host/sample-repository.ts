// The sample repository a first-time user can clone in one click. The app ships one small stream
// bundle (build/sample/sample.hg, a copy of the golden fixture made by real hg); on first use the
// host applies it with the engine into its data dir (once: a marker records which bundle it came
// from), and clones take it by its local path (served in process, as hg's localpeer). No hg and
// no network needed, and the path lasts: a clone's paths.default still pulls after a restart,
// which a server on a random port would not.

import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { EngineWorkerLike } from './engine-worker-host';
import type { WorkerStartData } from './worker-protocol';
import type { SampleRepoInfo } from '../../shared/ipc';
import type { SluiceEvent } from '../../shared/events';

export interface SampleRepositoryOptions {
  /** the shipped bundle */
  bundlePath: string;
  /** where the sample repository is kept (created if needed) */
  dir: string;
  createWorker: (start: WorkerStartData) => EngineWorkerLike;
}

interface SampleMarker {
  /** identity of the bundle the repository was made from */
  bundle: { size: number; mtimeMs: number };
  files: number;
}

const SAMPLE_NAME = 'sample';

export class SampleRepository {
  private preparing: Promise<SampleRepoInfo> | null = null;

  constructor(private readonly options: SampleRepositoryOptions) {}

  get repoPath(): string {
    return join(this.options.dir, SAMPLE_NAME);
  }

  /** Prepares the sample (once); a failure is reported and retried on the next call. */
  get(): Promise<SampleRepoInfo> {
    if (!this.preparing) {
      this.preparing = this.ensureRepository().then((files) => ({
        url: this.repoPath,
        name: SAMPLE_NAME,
        files,
      }));
      this.preparing.catch(() => (this.preparing = null));
    }
    return this.preparing;
  }

  /** Waits for a preparation under way (its worker writes into the data dir). */
  async dispose(): Promise<void> {
    await this.preparing?.catch(() => {});
  }

  private async ensureRepository(): Promise<number> {
    const bundle = await stat(this.options.bundlePath);
    const identity = { size: bundle.size, mtimeMs: Math.round(bundle.mtimeMs) };
    const markerPath = join(this.options.dir, `${SAMPLE_NAME}.json`);
    try {
      const marker = JSON.parse(await readFile(markerPath, 'utf8')) as SampleMarker;
      await stat(join(this.repoPath, '.hg', 'requires'));
      if (marker.bundle.size === identity.size && marker.bundle.mtimeMs === identity.mtimeMs)
        return marker.files;
    } catch {
      // no marker, or no repository behind it: (re)create below
    }
    await mkdir(this.options.dir, { recursive: true });
    // Only ever our own directory: a half-made sample from an interrupted first start, or an old one.
    await rm(this.repoPath, { recursive: true, force: true });
    await rm(markerPath, { force: true });
    const files = await this.apply();
    const marker: SampleMarker = { bundle: identity, files };
    await writeFile(markerPath, JSON.stringify(marker));
    return files;
  }

  /**
   * Applies the shipped bundle in an engine worker of its own (once per install), like any apply
   * job but not listed as one.
   */
  private apply(): Promise<number> {
    const jobId = 'sample-repository';
    const worker = this.options.createWorker({ batchIntervalMs: 100 });
    worker.send({
      type: 'start',
      jobId,
      request: { kind: 'apply', bundlePath: this.options.bundlePath, dest: this.repoPath },
    });
    return new Promise<number>((resolve, reject) => {
      let files = 0;
      let error: { code: string; message: string } | undefined;
      worker.on('message', (message) => {
        if (message.type === 'events') {
          for (const e of message.events as SluiceEvent[]) {
            if (e.type === 'done') files = e.files;
            if (e.type === 'error') error = { code: e.code, message: e.message };
          }
        } else if (message.type === 'finished') {
          worker.dispose();
          if (message.ok) resolve(files);
          else reject(sampleError(message.error));
        }
      });
      worker.on('exit', (code) =>
        reject(sampleError(error ?? { code: 'IO', message: `the engine worker exited (${code})` })),
      );
    });
  }
}

function sampleError(e: { code: string; message: string } | undefined): Error {
  const err = new Error(`cannot prepare the sample repository: ${e?.message ?? 'unknown error'}`) as Error & {
    code: string;
  };
  err.code = e?.code ?? 'IO';
  return err;
}
