// The renderer's only door to the host. Electron's preload and the web host's WebSocket bridge both
// expose the same SluiceApi as `window.sluice`; everything else in the renderer goes through this
// module so unit tests and previews can inject a fake with setSluiceApi().

import type { InvokeChannel, InvokeMap, PushChannel, PushMap, SluiceApi } from '../../shared/ipc';

let injected: SluiceApi | null = null;

export function setSluiceApi(api: SluiceApi | null): void {
  injected = api;
}

export function hasSluiceApi(): boolean {
  return injected !== null || (globalThis as { sluice?: SluiceApi }).sluice !== undefined;
}

export function sluiceApi(): SluiceApi {
  if (injected) return injected;
  const exposed = (globalThis as { sluice?: SluiceApi }).sluice;
  if (!exposed) throw new Error('window.sluice is missing: the renderer was opened without the Sluice host');
  return exposed;
}

export function invoke<C extends InvokeChannel>(
  channel: C,
  ...args: InvokeMap[C]['args']
): Promise<InvokeMap[C]['result']> {
  return sluiceApi().invoke(channel, ...args);
}

export function onPush<C extends PushChannel>(
  channel: C,
  listener: (payload: PushMap[C]) => void,
): () => void {
  return sluiceApi().on(channel, listener);
}

export function pathForFile(file: File): Promise<string> {
  return sluiceApi().pathForFile(file);
}
