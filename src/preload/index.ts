// The preload of Sluice's window (sandboxed, context-isolated). It exposes exactly the SluiceApi of
// src/shared/ipc.ts as window.sluice and nothing else: invoke() only on INVOKE_CHANNELS, on() only
// on PUSH_CHANNELS, pathForFile() through webUtils. The renderer never sees ipcRenderer, an event
// object or a channel outside the contract. Main validates every payload again (validate.ts).

import { contextBridge, ipcRenderer, webUtils, type IpcRendererEvent } from 'electron';
import {
  INVOKE_CHANNELS,
  PUSH_CHANNELS,
  type InvokeChannel,
  type InvokeMap,
  type PushChannel,
  type PushMap,
  type SluiceApi,
} from '../shared/ipc';

const invokeChannels = new Set<string>(INVOKE_CHANNELS);
const pushChannels = new Set<string>(PUSH_CHANNELS);

/** Main rejects with "[CODE] message"; give the renderer the code as a field as well (toUiError reads both). */
function rendererError(e: unknown): Error {
  const raw = e instanceof Error ? e.message : String(e);
  const message = raw.replace(/^Error invoking remote method '[^']*':\s*(Error:\s*)?/, '');
  const m = /^\[([A-Z_]+)\]\s*(.*)$/s.exec(message);
  const error = new Error(message) as Error & { code?: string };
  if (m) error.code = m[1];
  return error;
}

const api: SluiceApi = {
  invoke<C extends InvokeChannel>(
    channel: C,
    ...args: InvokeMap[C]['args']
  ): Promise<InvokeMap[C]['result']> {
    if (!invokeChannels.has(channel))
      return Promise.reject(new Error(`[USAGE] unknown channel ${String(channel)}`));
    return ipcRenderer.invoke(channel, ...args).catch((e: unknown) => {
      throw rendererError(e);
    }) as Promise<InvokeMap[C]['result']>;
  },
  on<C extends PushChannel>(channel: C, listener: (payload: PushMap[C]) => void): () => void {
    if (!pushChannels.has(channel)) throw new Error(`[USAGE] unknown push channel ${String(channel)}`);
    // Wrap: the renderer gets the payload only, never the IpcRendererEvent (it has `sender`).
    const wrapped = (_event: IpcRendererEvent, payload: PushMap[C]) => listener(payload);
    ipcRenderer.on(channel, wrapped);
    return () => void ipcRenderer.removeListener(channel, wrapped);
  },
  async pathForFile(file: File): Promise<string> {
    const path = webUtils.getPathForFile(file);
    if (!path)
      throw Object.assign(
        new Error('[USAGE] this file has no path on disk (dragged from another application?)'),
        { code: 'USAGE' },
      );
    return path;
  },
};

contextBridge.exposeInMainWorld('sluice', api);
