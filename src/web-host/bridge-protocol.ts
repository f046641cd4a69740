// The web host's WebSocket messages (JSON text frames), both directions. The bridge in the page
// (bridge-client.ts) and the server (web-host.ts) share these types.

import type { PushChannel, PushMap } from '../shared/ipc';

export type BridgeToHost = { t: 'invoke'; id: number; channel: string; args: unknown[] };

export type HostToBridge =
  | { t: 'result'; id: number; ok: true; value: unknown }
  | { t: 'result'; id: number; ok: false; error: { code: string; message: string } }
  | { [C in PushChannel]: { t: 'push'; channel: C; payload: PushMap[C] } }[PushChannel];
