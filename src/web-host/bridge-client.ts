// The browser side of the web host: defines window.sluice with exactly the SluiceApi the Electron
// preload exposes, over the loopback WebSocket. Built by electron.vite.config.ts into
// out/main/bridge.js (an IIFE); the web host serves it as /bridge.js with the session token
// prepended as self.__sluiceBridgeConfig. Imports only types.

import type { InvokeChannel, InvokeMap, PushChannel, PushMap, SluiceApi } from '../shared/ipc';
import type { BridgeToHost, HostToBridge } from './bridge-protocol';

interface BridgeConfig {
  token: string;
}

/** the host may push these as soon as the page connects, before the renderer subscribes */
const HELD_CHANNELS: ReadonlySet<PushChannel> = new Set<PushChannel>(['link:opened', 'bundle:opened']);

type Pending = { resolve: (value: unknown) => void; reject: (error: Error) => void };

/** An invoke failure as the renderer's toUiError() expects it: `code` plus the engine's message. */
class HostError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'HostError';
  }
}

function installSluiceBridge(config: BridgeConfig): void {
  const pending = new Map<number, Pending>();
  const listeners = new Map<PushChannel, Set<(payload: never) => void>>();
  let nextId = 1;
  let socket: WebSocket | null = null;
  let opened: Promise<WebSocket> | null = null;
  let retryMs = 250;
  /** the connection was open once and then lost: the page is told when it is back */
  let lost = false;
  /** the web host's /open redirected here with the id of a checked link, taken on the first connect */
  let openId = /^#open=([A-Za-z0-9_-]{22})$/.exec(location.hash)?.[1];
  if (openId) history.replaceState(history.state, '', location.pathname + location.search);
  /** pushes that only make sense once (a link, a bundle to open), held until the page listens */
  const held: { channel: PushChannel; payload: unknown }[] = [];

  function connect(): Promise<WebSocket> {
    if (opened) return opened;
    opened = new Promise<WebSocket>((resolve, reject) => {
      const url = new URL('./ws', location.href);
      url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
      url.search = `?token=${encodeURIComponent(config.token)}`;
      if (openId) url.searchParams.set('open', openId);
      openId = undefined;
      const ws = new WebSocket(url);
      ws.onopen = () => {
        socket = ws;
        retryMs = 250;
        resolve(ws);
        if (lost) {
          lost = false;
          deliver('host:connection', { connected: true });
        }
      };
      ws.onmessage = (ev) => receive(JSON.parse(String(ev.data)) as HostToBridge);
      ws.onclose = () => {
        const wasOpen = socket === ws;
        socket = null;
        opened = null;
        for (const p of pending.values())
          p.reject(new HostError('NETWORK', 'the connection to the Sluice host was lost'));
        pending.clear();
        if (!wasOpen) reject(new HostError('NETWORK', 'cannot connect to the Sluice host'));
        // said at once, not at the user's next action: the host stopped or the network dropped
        if (wasOpen && !lost) {
          lost = true;
          deliver('host:connection', { connected: false });
        }
        // Pushes (job progress) only arrive over an open socket: reconnect in the background.
        setTimeout(() => void connect().catch(() => {}), retryMs);
        retryMs = Math.min(retryMs * 2, 5000);
      };
    });
    return opened;
  }

  function receive(message: HostToBridge): void {
    if (message.t === 'result') {
      const p = pending.get(message.id);
      if (!p) return;
      pending.delete(message.id);
      if (message.ok) p.resolve(message.value);
      else p.reject(new HostError(message.error.code, message.error.message));
    } else if (message.t === 'push') {
      deliver(message.channel, message.payload);
    }
  }

  function deliver<C extends PushChannel>(channel: C, payload: PushMap[C]): void {
    if (!listeners.get(channel)?.size && HELD_CHANNELS.has(channel)) {
      if (held.length < 16) held.push({ channel, payload });
      return;
    }
    for (const listener of listeners.get(channel) ?? []) {
      try {
        (listener as (payload: unknown) => void)(payload);
      } catch (e) {
        console.error(`sluice: a "${channel}" listener threw`, e);
      }
    }
  }

  async function invoke<C extends InvokeChannel>(
    channel: C,
    ...args: InvokeMap[C]['args']
  ): Promise<InvokeMap[C]['result']> {
    const ws = socket ?? (await connect());
    const id = nextId++;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      ws.send(JSON.stringify({ t: 'invoke', id, channel, args } satisfies BridgeToHost));
    });
  }

  function on<C extends PushChannel>(channel: C, listener: (payload: PushMap[C]) => void): () => void {
    let set = listeners.get(channel);
    if (!set) listeners.set(channel, (set = new Set()));
    set.add(listener as (payload: never) => void);
    const waiting = held.filter((h) => h.channel === channel);
    held.splice(0, held.length, ...held.filter((h) => h.channel !== channel));
    for (const h of waiting) queueMicrotask(() => deliver(channel, h.payload as PushMap[C]));
    void connect().catch(() => {});
    return () => void set.delete(listener as (payload: never) => void);
  }

  async function pathForFile(file: File): Promise<string> {
    const url = new URL('./upload', location.href);
    url.search = `?name=${encodeURIComponent(file.name)}`;
    const res = await fetch(url, {
      method: 'PUT',
      headers: { 'X-Sluice-Token': config.token, 'Content-Type': 'application/octet-stream' },
      body: file,
    });
    if (!res.ok)
      throw new HostError(
        res.status === 413 ? 'LIMIT' : 'IO',
        `upload of ${file.name} failed: ${res.status} ${await res.text()}`,
      );
    return ((await res.json()) as { path: string }).path;
  }

  function downloadLog(jobId: string, suggestedName: string, header: string): void {
    const url = new URL('./download/log', location.href);
    // the token in the query: the page's cookie admits only the renderer's files
    url.search = new URLSearchParams({
      token: config.token,
      job: jobId,
      name: suggestedName,
      header,
    }).toString();
    const a = document.createElement('a');
    a.href = url.href;
    a.download = suggestedName;
    document.body.append(a);
    a.click();
    a.remove();
  }

  const api: SluiceApi = { invoke, on, pathForFile, downloadLog };
  Object.defineProperty(window, 'sluice', {
    value: Object.freeze(api),
    writable: false,
    configurable: false,
    enumerable: true,
  });
  void connect().catch(() => {});
}

const holder = self as unknown as { __sluiceBridgeConfig?: BridgeConfig };
const config = holder.__sluiceBridgeConfig;
delete holder.__sluiceBridgeConfig;
if (config) installSluiceBridge(config);
else console.error('sluice: bridge.js loaded without its configuration');
