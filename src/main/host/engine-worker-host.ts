// The one class that touches a raw engine worker (VS Code's utilityProcess wrapper, in small):
// it starts the thread, types its messages, turns the thread's ways of ending into three events
// and owns its disposal. The rest of the host sees `message`, `exit` and `crash`, never a Worker.
//
// Why worker_threads and not Electron's utilityProcess: the same class then runs under Electron
// main, the web host (plain Node) and the unit tests, so the code path users run is the one the
// tests run on this machine (which has no Electron binary); the engine is pure Node and needs
// nothing from a separate process; a worker's heap can be capped (resourceLimits) so an engine bug
// that allocates without bound ends the job, not the app; and the engine's event loop, GC pauses
// and CPU work are off the main thread either way. Electron >= 17.3 loads worker scripts from
// app.asar. What a thread does not give is isolation from native crashes, and the engine has no
// native code.

import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { workerEnvWithCompileCache } from '../compile-cache';
import { TypedEmitter } from './typed-emitter';
import type { HostToWorker, WorkerStartData, WorkerToHost } from './worker-protocol';

export interface EngineWorkerEvents {
  message: [message: WorkerToHost];
  /** the thread ended; `code` is its exit code (1 after terminate() or a crash) */
  exit: [code: number];
  /** an uncaught error or a heap limit hit inside the worker; `exit` follows */
  crash: [error: Error];
}

export interface EngineWorkerOptions {
  /** the worker script: out/main/engine-worker.js in a build, the .ts source under tests */
  script: string | URL;
  /**
   * Runs `script` (a TypeScript source) through tsx: tests and dev scripts pass
   * SOURCE_WORKER.bootstrap (source-worker.ts) here; builds leave it unset.
   */
  bootstrap?: string | URL;
  /** heap cap for the engine; the engine streams, so its heap stays small whatever the repository size */
  maxOldGenerationSizeMb?: number;
}

/** What the job registry needs from a worker; tests substitute a fake. */
export interface EngineWorkerLike {
  on<K extends keyof EngineWorkerEvents>(
    event: K,
    listener: (...args: EngineWorkerEvents[K]) => void,
  ): () => void;
  send(message: HostToWorker): void;
  terminate(): Promise<void>;
  dispose(): void;
}

/**
 * The engine thread's young generation (MB). The engine's garbage is short-lived (chunks, texts,
 * manifest lines), so a larger one mostly holds memory; at 4 a stream apply spent measurably more
 * CPU in scavenges than at 8, which costs verify a few MB of peak RSS and matches V8's default in
 * CPU (docs/benchmarks/analysis.md, "The app").
 */
const ENGINE_YOUNG_GENERATION_MB = 8;

/**
 * The engine thread's heap cap (MB): an engine bug that allocates without bound ends the job, not
 * the app. Under a cap below 2 GiB (Node without pointer compression; 1 GiB in Electron, which
 * has it) V8 treats the heap as memory-constrained and grows the old generation in small steps,
 * each a full mark-compact: at 1024 a stream apply ran several where V8's default ran one.
 */
const ENGINE_OLD_GENERATION_MB = 2048;

export class EngineWorkerHost implements EngineWorkerLike {
  private readonly events = new TypedEmitter<EngineWorkerEvents>();
  private readonly worker: Worker;
  private exited = false;

  constructor(start: WorkerStartData, options: EngineWorkerOptions) {
    const entry = options.script instanceof URL ? options.script : pathToFileURL(options.script);
    this.worker = new Worker(options.bootstrap ?? entry, {
      workerData: options.bootstrap ? { ...start, __entry: entry.href } : start,
      env: workerEnvWithCompileCache(),
      resourceLimits: {
        maxOldGenerationSizeMb: options.maxOldGenerationSizeMb ?? ENGINE_OLD_GENERATION_MB,
        maxYoungGenerationSizeMb: ENGINE_YOUNG_GENERATION_MB,
      },
      // The engine writes no console output of its own in the app; if it does, keep it visible.
      stdout: false,
      stderr: false,
    });
    this.worker.on('message', (message: WorkerToHost) => this.events.emit('message', message));
    this.worker.on('error', (error) => this.events.emit('crash', error));
    this.worker.on('messageerror', (error) => this.events.emit('crash', error));
    this.worker.on('exit', (code) => {
      this.exited = true;
      this.events.emit('exit', code);
      this.events.removeAll();
    });
  }

  on<K extends keyof EngineWorkerEvents>(
    event: K,
    listener: (...args: EngineWorkerEvents[K]) => void,
  ): () => void {
    return this.events.on(event, listener);
  }

  send(message: HostToWorker): void {
    if (!this.exited) this.worker.postMessage(message);
  }

  /** Stops the thread now (the engine gets no chance to clean up; see JobRegistry.cancel). */
  async terminate(): Promise<void> {
    if (this.exited) return;
    await this.worker.terminate();
  }

  dispose(): void {
    void this.terminate();
  }
}
