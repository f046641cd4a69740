// A scripted SluiceApi for unit tests and previews: invoke handlers per channel, pushes on demand,
// and a frame scheduler that runs only when the test says so.

import type { InvokeChannel, InvokeMap, PushChannel, PushMap, SluiceApi } from '../../../src/shared/ipc';
import type { AppState } from '../../../src/shared/app-state';
import type { SavedState } from '../../../src/renderer/src/store/types';
import { validateAppState } from '../../../src/main/host/validate';

type Handler<C extends InvokeChannel> = (
  ...args: InvokeMap[C]['args']
) => InvokeMap[C]['result'] | Promise<InvokeMap[C]['result']>;
export type Handlers = { [C in InvokeChannel]?: Handler<C> };

export class FakeHost implements SluiceApi {
  readonly calls: { channel: InvokeChannel; args: unknown[] }[] = [];
  private listeners = new Map<PushChannel, Set<(payload: never) => void>>();

  constructor(public handlers: Handlers = {}) {}

  async invoke<C extends InvokeChannel>(
    channel: C,
    ...args: InvokeMap[C]['args']
  ): Promise<InvokeMap[C]['result']> {
    this.calls.push({ channel, args });
    const h = this.handlers[channel] as Handler<C> | undefined;
    if (!h) throw Object.assign(new Error(`no handler for ${channel}`), { code: 'USAGE' });
    return h(...args);
  }

  on<C extends PushChannel>(channel: C, listener: (payload: PushMap[C]) => void): () => void {
    let set = this.listeners.get(channel);
    if (!set) this.listeners.set(channel, (set = new Set()));
    set.add(listener as (payload: never) => void);
    return () => set!.delete(listener as (payload: never) => void);
  }

  push<C extends PushChannel>(channel: C, payload: PushMap[C]): void {
    for (const l of this.listeners.get(channel) ?? []) (l as (p: PushMap[C]) => void)(payload);
  }

  async pathForFile(file: File): Promise<string> {
    return `/uploads/${file.name}`;
  }

  callsTo(channel: InvokeChannel): unknown[][] {
    return this.calls.filter((c) => c.channel === channel).map((c) => c.args);
  }
}

/** requestAnimationFrame stand-in: callbacks wait until runFrame(). */
export class ManualScheduler {
  private pending: (() => void)[] = [];
  frames = 0;
  readonly schedule = (cb: () => void): void => {
    this.pending.push(cb);
  };
  get waiting(): number {
    return this.pending.length;
  }
  runFrame(): void {
    const cbs = this.pending;
    this.pending = [];
    if (cbs.length) this.frames++;
    for (const cb of cbs) cb();
  }
}

/**
 * The host's saved state for store tests: each patch goes through the host's own validator
 * (validateAppState, as state:set does), so a shape the host would refuse fails the test.
 * `restart()` is the state a new store gets after a restart.
 */
export class MemorySavedState implements SavedState {
  initial: AppState;
  patches = 0;
  constructor(initial: AppState = {}) {
    this.initial = validateAppState(initial);
  }
  readonly save = (patch: AppState): void => {
    this.initial = { ...this.initial, ...validateAppState(JSON.parse(JSON.stringify(patch)) as unknown) };
    this.patches++;
  };
  restart(): SavedState {
    return { initial: this.initial, save: this.save };
  }
}

/** localStorage stand-in (an app before the host kept its state). */
export class MemoryStorage {
  readonly data = new Map<string, string>();
  getItem(key: string): string | null {
    return this.data.get(key) ?? null;
  }
  setItem(key: string, value: string): void {
    this.data.set(key, value);
  }
}
