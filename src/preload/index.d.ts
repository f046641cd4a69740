// What the preload adds to the renderer's global scope (and the web host's bridge defines too).
import type { SluiceApi } from '../shared/ipc';

declare global {
  interface Window {
    readonly sluice: SluiceApi;
  }
}

export {};
