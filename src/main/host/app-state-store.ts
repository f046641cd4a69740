// The one store of what a user sets or makes in the app (settings, recent clones, comparison
// results): state.json in the host's data folder, shared by Electron and the web host, written
// atomically through JsonFile. A patch replaces the parts it names.

import { JsonFile } from '../engine/json-file';
import { validateAppState } from './validate';
import type { AppState } from '../../shared/app-state';

export class AppStateStore {
  private readonly file: JsonFile<AppState>;
  private loaded: Promise<AppState> | null = null;

  constructor(path: string) {
    this.file = new JsonFile(path, (v) => validateAppState(v), 'app state');
  }

  get(): Promise<AppState> {
    this.loaded ??= this.file.read().then((v) => v ?? {});
    return this.loaded;
  }

  /** `patch` was validated by the caller (validateInvoke). */
  set(patch: AppState): Promise<void> {
    // chained on the state before it, so patches arriving together all land, in order
    const next = this.get().then((state) => ({ ...state, ...patch }));
    this.loaded = next;
    return next.then((state) => this.file.write(state));
  }

  flushed(): Promise<void> {
    return this.file.flushed();
  }
}
