// The peer for a URL (hg.peer → schemes): ssh:// through the ssh command, http(s):// through an
// HTTP session, a path or file:// URL through serveStdio in process (local-peer.ts). Clone and
// pull start here; everything after works on the WirePeer interface.

import type { ConnectOptions, JobContext } from '../context/job-context';
import { HttpPeer } from '../client/http-peer';
import {
  HttpSession,
  splitUrlCredentials,
  type CredentialsCallback,
  type HttpOptions,
  type ProxyConfig,
} from '../client/http-client';
import { isLocalSource, localSourcePath, openLocalPeer } from './local-peer';
import type { WirePeer } from '../client/peer';
import { isSshUrl, resolveSshSettings } from '../client/ssh-command';
import { SshPeer } from '../client/ssh-peer';
import type { ConfigLookup } from '../client/tls-trust';
import { readUserConfig, type HgConfig } from '../store/hgrc';

export interface OpenPeerOptions extends ConnectOptions {
  /** ssh: the handshake's limit, login and hello (default 60 s); HTTP: the session's connect (30 s) */
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
 * `splitPeerUrl` and give them to the session; a relative local path resolves against the
 * current directory). The caller closes the peer.
 */
export async function openPeer(url: string, o: OpenPeerOptions): Promise<WirePeer> {
  if (isLocalSource(url))
    return openLocalPeer(localSourcePath(url, process.cwd()), {
      ...(o.signal ? { signal: o.signal } : {}),
      ...(o.connectTimeoutMs !== undefined ? { connectTimeoutMs: o.connectTimeoutMs } : {}),
      ...(o.idleTimeoutMs !== undefined ? { idleTimeoutMs: o.idleTimeoutMs } : {}),
      ...(o.log ? { log: o.log } : {}),
    });
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
 * session, never into the URL that is logged or recorded; a local path and an ssh URL are kept
 * as they are (an ssh URL's user is ssh's login name, and a password in it is refused when it is
 * opened).
 */
export function splitPeerUrl(raw: string): ReturnType<typeof splitUrlCredentials> {
  return isSshUrl(raw) || isLocalSource(raw) ? { url: raw } : splitUrlCredentials(raw);
}

/** How a clone, pull or probe connects (the job's ConnectOptions plus what the HTTP session takes). */
export interface SessionOptions extends ConnectOptions {
  /** asked for a user name and password when the server answers 401 */
  credentials?: CredentialsCallback;
  /** HTTP connect (default 30 s), and the ssh handshake (default 60 s) */
  connectTimeoutMs?: number;
  /** no data for this long aborts (default 60 s) */
  idleTimeoutMs?: number;
  /** undefined: http_proxy / https_proxy / no_proxy from the environment; null: no proxy */
  proxy?: ProxyConfig | null;
  /** a pull: the repository's configuration, whose [hostsecurity] layers over the user's */
  repoConfig?: ConfigLookup;
}

/** The user's hg configuration, read when an https host is first contacted (never for http or ssh). */
function lazyUserConfig(): ConfigLookup {
  let config: HgConfig | undefined;
  return { get: (section, key) => (config ??= readUserConfig()).get(section, key) };
}

/** An HTTP session for a job (ctx: its debug log) or a probe (null). */
export function sessionFor(
  req: { caFile?: string; insecure?: boolean },
  ctx: JobContext | null,
  signal: AbortSignal | undefined,
  opts: SessionOptions,
): HttpSession {
  const http: HttpOptions = {
    ...(signal ? { signal } : {}),
    tls: {
      ...(req.caFile ? { caFile: req.caFile } : {}),
      ...(req.insecure ? { insecure: true } : {}),
      config: [lazyUserConfig(), ...(opts.repoConfig ? [opts.repoConfig] : [])],
    },
    ...(ctx ? { warn: (m: string) => ctx.log('warn', m) } : {}),
    ...(opts.credentials ? { credentials: opts.credentials } : {}),
    ...(opts.connectTimeoutMs !== undefined ? { connectTimeoutMs: opts.connectTimeoutMs } : {}),
    ...(opts.idleTimeoutMs !== undefined ? { idleTimeoutMs: opts.idleTimeoutMs } : {}),
    ...(opts.proxy !== undefined ? { proxy: opts.proxy } : {}),
    ...(ctx ? { log: (m: string) => ctx.log('debug', m) } : {}),
  };
  return new HttpSession(http);
}

/**
 * The HTTP session of a clone or pull job: timeouts from the request unless given explicitly,
 * credentials asked through the job context (the CLI's prompt, the app's dialog), and those of
 * the URL itself set aside (never written to hgrc).
 */
export function openSession<O extends SessionOptions>(
  rawUrl: string,
  req: { caFile?: string; insecure?: boolean; connectTimeoutMs?: number; idleTimeoutMs?: number },
  ctx: JobContext,
  explicit: O = {} as O,
): { session: HttpSession; url: string; opts: O } {
  const opts: O = { ...ctx.connect, ...explicit };
  if (opts.connectTimeoutMs === undefined && req.connectTimeoutMs !== undefined)
    opts.connectTimeoutMs = req.connectTimeoutMs;
  if (opts.idleTimeoutMs === undefined && req.idleTimeoutMs !== undefined)
    opts.idleTimeoutMs = req.idleTimeoutMs;
  const ask = ctx.askCredentials;
  if (!opts.credentials && ask) opts.credentials = (realm, url) => ask({ url, realm });
  const { url, credentials } = splitPeerUrl(rawUrl);
  const session = sessionFor(req, ctx, ctx.signal, opts);
  if (credentials) session.setUrlCredentials(url, credentials);
  return { session, url, opts };
}
