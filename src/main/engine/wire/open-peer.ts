// The peer for a URL (hg.peer → schemes): ssh:// through the ssh command, http(s):// through an
// HTTP session. Clone and pull start here; everything after works on the WirePeer interface.

import type { ConnectOptions } from '../job/job-context';
import { HttpPeer } from './http-peer';
import { HttpSession, splitUrlCredentials } from './http-client';
import type { WirePeer } from './peer';
import { isSshUrl, resolveSshSettings } from './ssh-command';
import { SshPeer } from './ssh-peer';

export interface OpenPeerOptions extends ConnectOptions {
  /** ssh: the handshake's limit when not interactive (default 30 s); HTTP: the session's */
  connectTimeoutMs?: number;
  /** ssh: no byte for this long while one is awaited (default 60 s); HTTP: the session's */
  idleTimeoutMs?: number;
  /** HTTP: the session (it keeps credentials and counts requests; clone bundles download through it) */
  session: HttpSession;
  signal?: AbortSignal;
  log?: (level: 'debug' | 'info' | 'warn', message: string) => void;
  /** a pull: the local repository, whose [ui] ssh / remotecmd apply */
  repo?: string;
  env?: NodeJS.ProcessEnv;
}

/**
 * Connects to `url` (an http(s) URL without credentials: split them off with
 * `splitPeerUrl` and give them to the session). The caller closes the peer.
 */
export async function openPeer(url: string, o: OpenPeerOptions): Promise<WirePeer> {
  if (!isSshUrl(url)) return HttpPeer.connect(url, o.session, (m) => o.log?.('debug', m));
  const env = o.env ?? process.env;
  const settings = await resolveSshSettings(
    {
      ...(o.sshCommand ? { sshCommand: o.sshCommand } : {}),
      ...(o.remoteCommand ? { remoteCommand: o.remoteCommand } : {}),
    },
    { ...(o.repo ? { repo: o.repo } : {}), env },
  );
  return SshPeer.connect(url, {
    ...settings,
    ...(o.interactive !== undefined ? { interactive: o.interactive } : {}),
    ...(o.signal ? { signal: o.signal } : {}),
    ...(o.connectTimeoutMs !== undefined ? { connectTimeoutMs: o.connectTimeoutMs } : {}),
    ...(o.idleTimeoutMs !== undefined ? { idleTimeoutMs: o.idleTimeoutMs } : {}),
    ...(o.log ? { log: o.log } : {}),
    env,
  });
}

/**
 * A URL as given by the user, split for openPeer: http(s) credentials (user:password@) go to the
 * session, never into the URL that is logged or recorded; an ssh URL is kept as is (its user is
 * ssh's login name, and a password in it is refused when it is opened).
 */
export function splitPeerUrl(raw: string): ReturnType<typeof splitUrlCredentials> {
  return isSshUrl(raw) ? { url: raw } : splitUrlCredentials(raw);
}
