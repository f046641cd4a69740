// The HTTP layer under the wire peer: what hg gets from urllib + its url.py handlers (keep-alive,
// basic and digest auth, proxies, redirects), on node:http/https. One HttpSession per peer: it
// keeps the keep-alive agents, the credentials that worked per origin and the URL the server
// redirected to.
//
// Every failure leaves here as a SluiceError: HTTP (status), AUTH (401 without usable credentials),
// ACCESS_DENIED (401 without a challenge: refused by the server's settings),
// TIMEOUT (connect, idle, or a trickle below throughput-floor.ts's floor), NETWORK (refused, reset, DNS),
// CERTIFICATE (an untrusted TLS certificate: tls-trust.ts), TRUNCATED (body cut short),
// CANCELLED (the AbortSignal fired).

import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import { SluiceError, cancelled } from '../errors';
import { withoutCredentials } from '../../../shared/urls';
import {
  DigestSession,
  basicAuthorization,
  chooseChallenge,
  isStale,
  parseChallenges,
  type Credentials,
} from './http-auth';
import { FLOOR_WINDOW_IDLES, ThroughputFloor } from '../protocol/throughput-floor';
import { failUnlessProgress } from '../protocol/late-timeout';
import { checkPeer, hostTrust, type HostTrust, type TlsTrustOptions } from './tls-trust';

export type { Credentials };

/** Asked when a server answers 401; null = the user declined (the clone fails with AUTH). */
export type CredentialsCallback = (realm: string, url: string) => Promise<Credentials | null>;

export interface ProxyConfig {
  /** http://[user:pass@]host:port of the proxy (for https targets it is used with CONNECT) */
  url: string;
  /** hosts that bypass the proxy: exact names, `.domain`, `*.domain`, `*` */
  noProxy: string[];
}

export interface HttpOptions {
  signal?: AbortSignal;
  /** which certificates https trusts: --ca-file, --insecure, the hgrc's [hostsecurity] */
  tls?: TlsTrustOptions;
  /** warnings a user must see (hg's ui.warn: --insecure, legacy fingerprints) */
  warn?: (message: string) => void;
  /** default 30 s */
  connectTimeoutMs?: number;
  /** no byte received for this long while waiting on a response: TIMEOUT (default 60 s) */
  idleTimeoutMs?: number;
  credentials?: CredentialsCallback;
  /** undefined: from http_proxy/https_proxy/no_proxy like hg; null: never */
  proxy?: ProxyConfig | null;
  maxRedirects?: number;
  userAgent?: string;
  /** debug lines (one per request) */
  log?: (message: string) => void;
}

export interface HttpRequest {
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: Buffer;
}

export interface HttpResponse {
  status: number;
  statusMessage: string;
  headers: http.IncomingHttpHeaders;
  /** final URL after redirects */
  url: string;
  body: AsyncIterable<Uint8Array>;
  /** reads the whole body (at most `limit` bytes, else LIMIT) */
  readAll(limit?: number): Promise<Buffer>;
  /**
   * The body's first `limit` bytes, or fewer when it ends (or fails) sooner; the rest is never read
   * (the connection is closed). For messages: a long error body keeps its start.
   */
  readHead(limit: number): Promise<Buffer>;
  /** drops the body (the socket is closed unless already consumed) */
  discard(): void;
}

const DEFAULT_CONNECT_TIMEOUT = 30_000;
const DEFAULT_IDLE_TIMEOUT = 60_000;
const SMALL_BODY_LIMIT = 64 << 20;

export const USER_AGENT = 'mercurial/proto-1.0 (Mercurial 6.3.2; Sluice)';

/** Splits user:password out of a URL; the returned URL has none (it is what logs and hgrc see). */
export function splitUrlCredentials(raw: string): { url: string; credentials?: Credentials } {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new SluiceError('USAGE', `not a valid URL: ${withoutCredentials(raw)}`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    throw new SluiceError('USAGE', `unsupported URL scheme ${u.protocol} (only http and https)`);
  }
  let credentials: Credentials | undefined;
  if (u.username || u.password) {
    credentials = { user: unquoteLoose(u.username), password: unquoteLoose(u.password) };
    u.username = '';
    u.password = '';
  }
  return { url: u.toString(), ...(credentials ? { credentials } : {}) };
}

/** decodeURIComponent, or the text as typed when one of its escapes is malformed (never a URIError). */
function unquoteLoose(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** Basic credentials from a proxy URL's user and password (a malformed escape kept as typed). */
function proxyAuthorization(proxy: URL): string {
  return basicAuthorization({ user: unquoteLoose(proxy.username), password: unquoteLoose(proxy.password) });
}

export function redactUrl(raw: string): string {
  try {
    const u = new URL(raw);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return raw;
  }
}

function origin(u: URL): string {
  return `${u.protocol}//${u.host}`;
}

/** url.py proxyhandler: localhost and 127.0.0.1 always bypass an environment proxy. */
export function proxyFromEnvironment(target: URL, env: NodeJS.ProcessEnv = process.env): ProxyConfig | null {
  const pick = (...names: string[]): string | undefined => {
    for (const n of names) if (env[n]) return env[n];
    return undefined;
  };
  const raw =
    target.protocol === 'https:'
      ? pick('https_proxy', 'HTTPS_PROXY', 'http_proxy', 'HTTP_PROXY')
      : pick('http_proxy', 'HTTP_PROXY');
  if (!raw) return null;
  const noProxy = ['localhost', '127.0.0.1', '::1'];
  for (const p of (pick('no_proxy', 'NO_PROXY') ?? '').split(','))
    if (p.trim()) noProxy.push(p.trim().toLowerCase());
  const url = /^https?:\/\//i.test(raw) ? raw : `http://${raw}`;
  return { url, noProxy };
}

export function bypassesProxy(host: string, noProxy: string[]): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '');
  for (const e of noProxy) {
    const entry = e.replace(/:\d+$/, '');
    if (entry === '*' || h === entry) return true;
    if (entry.startsWith('*.') && h.endsWith(entry.slice(1))) return true;
    if (entry.startsWith('.') && h.endsWith(entry)) return true;
    // curl's convention: `example.com` also covers its subdomains
    if (!entry.startsWith('.') && h.endsWith('.' + entry)) return true;
  }
  return false;
}

function networkError(e: unknown, what: string): SluiceError {
  if (e instanceof SluiceError) return e;
  const err = e as NodeJS.ErrnoException;
  const code = err?.code ?? '';
  if (code === 'ABORT_ERR') return cancelled();
  if (code === 'ECONNRESET' || err?.message === 'aborted') {
    return new SluiceError('NETWORK', `${what}: connection reset by the server`, { errno: code });
  }
  const msg = err?.message ?? String(e);
  if (/certificate|self.signed|SSL|TLS/i.test(msg) || code.startsWith('ERR_TLS') || code.includes('CERT')) {
    return new SluiceError('NETWORK', `${what}: TLS error: ${msg}`, { errno: code });
  }
  return new SluiceError('NETWORK', `${what}: ${msg}`, { errno: code });
}

/** Connections kept per origin. */
const MAX_SOCKETS = 8;

/** A reset or early close on a socket that came from the keep-alive pool, before any response. */
function staleSocketFailure(err: SluiceError, r: http.ClientRequest): boolean {
  const errno = err.details?.errno;
  return r.reusedSocket && err.code === 'NETWORK' && (errno === 'ECONNRESET' || errno === 'EPIPE');
}

function withDetail(err: SluiceError, extra: Record<string, unknown>): SluiceError {
  return new SluiceError(err.code, err.message, { ...err.details, ...extra });
}

/** One request's settle-once state (HttpSession.attempt). */
interface Attempt {
  url: URL;
  settled: boolean;
  /** the first failure (a later error event reports it, not its own) */
  failure: SluiceError | null;
  /** the request in flight (the CONNECT, then the request itself) */
  req: http.ClientRequest | null;
  connectTimer: NodeJS.Timeout | null;
  headersTimer: NodeJS.Timeout | null;
  fail(e: SluiceError): void;
  succeed(res: http.IncomingMessage): void;
}

export class HttpSession {
  private readonly agents = new Map<string, http.Agent>();
  /** per origin: the credentials that worked, and the digest state when the server wants Digest */
  private readonly auth = new Map<string, { creds: Credentials; digest?: DigestSession }>();
  private readonly urlCredentials = new Map<string, Credentials>();
  private readonly triedUrlCredentials = new Set<string>();
  /** per host name: sslutil._hostsettings, made on its first https request */
  private readonly trust = new Map<string, HostTrust>();
  private readonly warned = new Set<string>();
  readonly connectTimeoutMs: number;
  readonly idleTimeoutMs: number;
  requests = 0;
  receivedBytes = 0;
  /** a server answered 401 at least once */
  authChallenged = false;

  constructor(private readonly opts: HttpOptions = {}) {
    this.connectTimeoutMs = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT;
    this.idleTimeoutMs = opts.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT;
  }

  private trustFor(host: string): HostTrust {
    let t = this.trust.get(host);
    if (!t) this.trust.set(host, (t = hostTrust(host, this.opts.tls ?? {})));
    return t;
  }

  /** validatesocket, once per TLS connection, before it carries a response. */
  private checkOnSecure(socket: tls.TLSSocket, trust: HostTrust): void {
    socket.once('secureConnect', () => {
      const refused = checkPeer(socket, trust, (m) => {
        if (this.warned.has(m)) return;
        this.warned.add(m);
        this.opts.warn?.(m);
      });
      if (refused) socket.destroy(refused);
    });
  }

  /** Credentials from the URL the user typed: offered to that origin after its first 401. */
  setUrlCredentials(url: string, c: Credentials): void {
    this.urlCredentials.set(origin(new URL(url)), c);
  }

  get signal(): AbortSignal | undefined {
    return this.opts.signal;
  }

  close(): void {
    for (const a of this.agents.values()) a.destroy();
    this.agents.clear();
  }

  private agentFor(u: URL): http.Agent {
    const key = u.protocol;
    let a = this.agents.get(key);
    if (!a) {
      a =
        u.protocol === 'https:'
          ? new https.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS })
          : new http.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS });
      this.agents.set(key, a);
    }
    return a;
  }

  private proxyFor(u: URL): URL | null {
    const cfg = this.opts.proxy === undefined ? proxyFromEnvironment(u) : this.opts.proxy;
    if (!cfg) return null;
    if (bypassesProxy(u.hostname, cfg.noProxy)) return null;
    try {
      return new URL(cfg.url);
    } catch {
      throw new SluiceError('USAGE', `invalid proxy URL: ${redactUrl(cfg.url)}`);
    }
  }

  /** One request with redirects and 401 handling; resolves once the response headers are in. */
  async request(rawUrl: string, req: HttpRequest = {}): Promise<HttpResponse> {
    let url = new URL(rawUrl);
    const maxRedirects = this.opts.maxRedirects ?? 10;
    let authAttempts = 0;
    let staleRetries = 0;
    for (let hop = 0; ;) {
      this.checkCancel();
      const org = origin(url);
      const headers: Record<string, string> = {
        'User-Agent': this.opts.userAgent ?? USER_AGENT,
        Accept: 'application/mercurial-0.1',
        'Accept-Encoding': 'identity',
        ...(req.headers ?? {}),
      };
      const method = req.method ?? 'GET';
      const known = this.auth.get(org);
      if (known) {
        headers.Authorization = known.digest
          ? known.digest.authorization(method, this.requestTarget(url))
          : basicAuthorization(known.creds);
      }
      let res: http.IncomingMessage;
      try {
        res = await this.once(url, method, headers, req.body);
      } catch (e) {
        // A kept-alive socket the server closed while it sat in the pool fails before any
        // response (the server's keep-alive timer races our next request). Every wire command
        // Sluice sends is read-only, so it is resent, as browsers and curl do; each retry uses up
        // one stale pooled socket, so this ends after at most the pool's size.
        if (e instanceof SluiceError && e.details?.reusedSocket === true && staleRetries++ < MAX_SOCKETS) {
          this.opts.log?.(`the server had closed a kept-alive connection; resending on another one`);
          continue;
        }
        throw e;
      }
      const status = res.statusCode ?? 0;
      if ([301, 302, 303, 307, 308].includes(status) && res.headers.location) {
        res.resume();
        if (++hop > maxRedirects)
          throw new SluiceError('HTTP', `too many redirects (last: ${redactUrl(url.toString())})`);
        let next: URL;
        try {
          next = new URL(res.headers.location, url);
        } catch {
          throw new SluiceError(
            'HTTP',
            `redirect to an invalid URL: ${JSON.stringify(res.headers.location.slice(0, 200))}`,
          );
        }
        if (next.protocol !== 'http:' && next.protocol !== 'https:') {
          throw new SluiceError('HTTP', `redirect to an unsupported URL: ${redactUrl(next.toString())}`);
        }
        this.opts.log?.(`redirected to ${redactUrl(next.toString())}`);
        url = next;
        continue;
      }
      if (status === 407) {
        res.resume();
        throw new SluiceError(
          'AUTH',
          `proxy authentication required (407 from the proxy for ${redactUrl(url.toString())})`,
        );
      }
      if (status === 401) {
        res.resume();
        const challenge = res.headers['www-authenticate'] as string | undefined;
        if (challenge === undefined) {
          // No challenge: credentials cannot help (hgweb refusing by its [web] settings, like
          // `pull not authorized`); hg's client fails at once too, without prompting.
          const reason =
            res.statusMessage && res.statusMessage !== 'Unauthorized' ? `: ${res.statusMessage}` : '';
          throw new SluiceError('ACCESS_DENIED', `authorization failed${reason}`, { status });
        }
        this.authChallenged = true;
        const offered = parseChallenges(challenge);
        const chosen = chooseChallenge(offered);
        if (!chosen) {
          const schemes = [...new Set(offered.map((c) => c.scheme))].join(', ') || challenge;
          throw new SluiceError(
            'AUTH',
            `authorization failed: the server wants ${schemes} authentication (Sluice speaks Basic and Digest)`,
          );
        }
        const realm = chosen.params.get('realm') ?? '';
        // stale=true: the digest was right but the nonce expired; answer the new one, no prompt
        if (known?.digest && isStale(chosen) && ++authAttempts <= 4) {
          this.auth.set(org, { creds: known.creds, digest: new DigestSession(chosen, known.creds) });
          continue;
        }
        const next = await this.nextCredentials(org, realm, url);
        if (!next || ++authAttempts > 4) {
          throw new SluiceError('AUTH', 'authorization failed', { status, realm });
        }
        this.auth.set(
          org,
          chosen.scheme === 'digest'
            ? { creds: next, digest: new DigestSession(chosen, next) }
            : { creds: next },
        );
        continue;
      }
      // Accept-Encoding: identity was asked for; a gzip or deflate body is never inflated (a 64 KB
      // bomb would be 64 MiB), nor misread as hg's bytes (urllib under hg does not decode it either)
      const encoding = String(res.headers['content-encoding'] ?? 'identity')
        .trim()
        .toLowerCase();
      if (status >= 200 && status < 300 && encoding !== 'identity' && encoding !== '') {
        res.destroy();
        throw new SluiceError(
          'PROTOCOL',
          `the server sent ${redactUrl(url.toString())} with Content-Encoding: ${encoding.slice(0, 40)}, which Sluice did not ask for (Accept-Encoding: identity)`,
        );
      }
      return this.wrap(res, url);
    }
  }

  /** What the request line carries (and Digest signs): the absolute URL through an http proxy. */
  private requestTarget(url: URL): string {
    return this.proxyFor(url) && url.protocol === 'http:' ? url.toString() : url.pathname + url.search;
  }

  private async nextCredentials(org: string, realm: string, url: URL): Promise<Credentials | null> {
    const fromUrl = this.urlCredentials.get(org);
    if (fromUrl && !this.triedUrlCredentials.has(org)) {
      this.triedUrlCredentials.add(org);
      return fromUrl;
    }
    if (!this.opts.credentials) return null;
    const plain = new URL(url.toString());
    plain.search = '';
    const c = await this.opts.credentials(realm, plain.toString());
    this.checkCancel();
    return c;
  }

  private checkCancel(): void {
    if (this.opts.signal?.aborted) throw cancelled();
  }

  private once(
    url: URL,
    method: string,
    headers: Record<string, string>,
    body?: Buffer,
  ): Promise<http.IncomingMessage> {
    const proxy = this.proxyFor(url);
    const isHttps = url.protocol === 'https:';
    const trust = isHttps ? this.trustFor(url.hostname.replace(/^\[|\]$/g, '')) : undefined;
    if (body) headers['Content-Length'] = String(body.length);
    this.requests++;
    this.opts.log?.(`${method} ${redactUrl(url.toString())}${proxy ? ` via proxy ${proxy.host}` : ''}`);
    return new Promise<http.IncomingMessage>((resolve, reject) => {
      const a = this.attempt(url, resolve, reject);
      const send = (socket?: net.Socket): void => {
        const options = this.requestOptions(url, method, headers, proxy, trust, socket);
        this.send(a, options, isHttps, trust, socket, body);
      };
      if (proxy && isHttps) this.tunnel(a, url, proxy, send);
      else send();
    });
  }

  /** A request's settle-once state: it resolves or fails once, its timers cleared either way. */
  private attempt(
    url: URL,
    resolve: (res: http.IncomingMessage) => void,
    reject: (e: SluiceError) => void,
  ): Attempt {
    const signal = this.opts.signal;
    const onAbort = (): void => a.fail(cancelled());
    const clearTimers = (): void => {
      if (a.connectTimer) clearTimeout(a.connectTimer);
      if (a.headersTimer) clearTimeout(a.headersTimer);
    };
    const a: Attempt = {
      url,
      settled: false,
      failure: null,
      req: null,
      connectTimer: null,
      headersTimer: null,
      fail: (e) => {
        if (!a.failure) a.failure = e;
        clearTimers();
        a.req?.destroy(e);
        if (!a.settled) {
          a.settled = true;
          signal?.removeEventListener('abort', onAbort);
          reject(e);
        }
      },
      succeed: (res) => {
        clearTimers();
        if (a.settled) {
          res.destroy();
          return;
        }
        a.settled = true;
        signal?.removeEventListener('abort', onAbort);
        resolve(res);
      },
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    a.connectTimer = setTimeout(
      () =>
        a.fail(
          new SluiceError('TIMEOUT', `connecting to ${url.host} timed out after ${this.connectTimeoutMs} ms`),
        ),
      this.connectTimeoutMs,
    );
    return a;
  }

  /**
   * The request's options: direct, through an http proxy (the absolute URL as the path), or over
   * a CONNECT tunnel's socket (TLS over it, one connection per request).
   */
  private requestOptions(
    url: URL,
    method: string,
    headers: Record<string, string>,
    proxy: URL | null,
    trust: HostTrust | undefined,
    socket: net.Socket | undefined,
  ): http.RequestOptions {
    const isHttps = url.protocol === 'https:';
    const common: http.RequestOptions = {
      method,
      headers,
      host: url.hostname.replace(/^\[|\]$/g, ''),
      port: url.port || (isHttps ? 443 : 80),
      path: url.pathname + url.search,
      // the check is checkPeer's (hg's rules, a typed error), made before any response is read
      ...(trust ? { secureContext: trust.context, rejectUnauthorized: false } : {}),
    };
    if (socket) {
      // a one-off agent: with `agent: false` node would ignore createConnection and dial direct
      const tunnel = new https.Agent({ keepAlive: false });
      const servername = net.isIP(url.hostname.replace(/^\[|\]$/g, '')) ? undefined : url.hostname;
      (tunnel as unknown as { createConnection: () => net.Socket }).createConnection = () => {
        const secure = tls.connect({
          socket,
          ...(servername ? { servername } : {}),
          secureContext: trust!.context,
          rejectUnauthorized: false,
        });
        this.checkOnSecure(secure, trust!);
        return secure;
      };
      common.agent = tunnel;
    } else if (proxy && !isHttps) {
      common.host = proxy.hostname;
      common.port = proxy.port || 80;
      common.path = url.toString();
      common.agent = this.agentFor(new URL('http://proxy'));
      if (proxy.username) headers['Proxy-Authorization'] = proxyAuthorization(proxy);
    } else {
      common.agent = this.agentFor(url);
    }
    return common;
  }

  /** Sends the request and settles the attempt with its response or its first failure. */
  private send(
    a: Attempt,
    options: http.RequestOptions,
    isHttps: boolean,
    trust: HostTrust | undefined,
    tunnelSocket: net.Socket | undefined,
    body: Buffer | undefined,
  ): void {
    const host = a.url.host;
    const r = (isHttps ? https : http).request(options);
    a.req = r;
    r.on('socket', (s: net.Socket) => {
      const connecting = (s as net.Socket & { connecting?: boolean }).connecting;
      // a new direct TLS connection (a pooled one was checked when it was made)
      if (trust && !tunnelSocket && connecting) this.checkOnSecure(s as tls.TLSSocket, trust);
      if (connecting) s.once(isHttps && !tunnelSocket ? 'secureConnect' : 'connect', () => this.connected(a));
      else this.connected(a);
    });
    r.setTimeout(this.idleTimeoutMs, () =>
      failUnlessProgress(
        () => r.socket?.bytesRead ?? 0,
        () => a.fail(new SluiceError('TIMEOUT', `no response from ${host} for ${this.idleTimeoutMs} ms`)),
      ),
    );
    r.on('error', (e) => {
      const err = a.failure ?? networkError(e, `request to ${host} failed`);
      a.fail(staleSocketFailure(err, r) ? withDetail(err, { reusedSocket: true }) : err);
    });
    r.on('response', (res) => a.succeed(res));
    r.end(body);
  }

  /**
   * Connected: the connect timeout ends and the headers' starts. The idle timeout misses headers
   * trickled a byte at a time (up to Node's 16 KiB bound: days); they are small, so the
   * throughput floor's window bounds them whole.
   */
  private connected(a: Attempt): void {
    if (a.connectTimer) clearTimeout(a.connectTimer);
    a.connectTimer = null;
    const headersMs = FLOOR_WINDOW_IDLES * this.idleTimeoutMs;
    if (headersMs > 0)
      a.headersTimer ??= setTimeout(
        () =>
          a.fail(
            new SluiceError('TIMEOUT', `the response headers from ${a.url.host} took over ${headersMs} ms`, {
              trickle: true,
            }),
          ),
        headersMs,
      );
  }

  /** An https request through an http proxy: a CONNECT tunnel, then `send` over its socket. */
  private tunnel(a: Attempt, url: URL, proxy: URL, send: (socket: net.Socket) => void): void {
    const connectHeaders: Record<string, string> = { Host: `${url.hostname}:${url.port || 443}` };
    if (proxy.username) connectHeaders['Proxy-Authorization'] = proxyAuthorization(proxy);
    const creq = http.request({
      host: proxy.hostname,
      port: proxy.port || 80,
      method: 'CONNECT',
      path: `${url.hostname}:${url.port || 443}`,
      headers: connectHeaders,
      agent: false,
    });
    a.req = creq;
    creq.on('error', (e) => a.fail(a.failure ?? networkError(e, `proxy ${proxy.host} failed`)));
    creq.on('connect', (res, socket) => {
      if (res.statusCode !== 200) {
        socket.destroy();
        a.fail(
          new SluiceError(
            res.statusCode === 407 ? 'AUTH' : 'NETWORK',
            `proxy CONNECT to ${url.host} refused: ${res.statusCode} ${res.statusMessage}`,
          ),
        );
        return;
      }
      if (a.settled) {
        socket.destroy();
        return;
      }
      send(socket);
    });
    creq.end();
  }

  private wrap(res: http.IncomingMessage, url: URL): HttpResponse {
    const countBytes = (n: number): void => {
      this.receivedBytes += n;
    };
    const signal = this.opts.signal;
    let failure: SluiceError | null = null;
    const socket = res.socket;
    const idleMs = this.idleTimeoutMs;
    const onTimeout = (): void =>
      failUnlessProgress(
        () => socket?.bytesRead ?? 0,
        () => {
          if (res.destroyed) return;
          failure = new SluiceError('TIMEOUT', `the server stopped sending data for ${idleMs} ms`);
          res.destroy(failure);
        },
      );
    const onAbort = (): void => {
      failure = cancelled();
      res.destroy(failure);
    };
    socket?.setTimeout(idleMs);
    socket?.on('timeout', onTimeout);
    signal?.addEventListener('abort', onAbort, { once: true });
    const cleanup = (): void => {
      socket?.off('timeout', onTimeout);
      signal?.removeEventListener('abort', onAbort);
    };
    res.once('close', cleanup);
    let consumed = false;
    const floor = new ThroughputFloor(
      (bytes, ms) =>
        `the server sent only ${bytes} bytes in ${Math.round(ms / 1000)} s of waiting (trickling)`,
    );
    async function* body(): AsyncGenerator<Uint8Array> {
      consumed = true;
      try {
        floor.waiting();
        for await (const chunk of res as AsyncIterable<Buffer>) {
          const slow = floor.arrived(chunk.length, idleMs);
          if (slow) {
            failure = slow;
            throw slow;
          }
          countBytes(chunk.length);
          yield chunk;
          floor.waiting();
        }
        if (!res.complete)
          throw new SluiceError('TRUNCATED', 'the connection closed before the response was complete');
      } catch (e) {
        if (failure) throw failure;
        if (e instanceof SluiceError) throw e;
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'ECONNRESET' || (e as Error).message === 'aborted') {
          throw new SluiceError('TRUNCATED', 'the connection closed before the response was complete');
        }
        throw networkError(e, 'reading the response failed');
      } finally {
        cleanup();
        if (!res.complete) res.destroy();
      }
    }
    const iterable = body();
    return {
      status: res.statusCode ?? 0,
      statusMessage: res.statusMessage ?? '',
      headers: res.headers,
      url: url.toString(),
      body: iterable,
      async readAll(limit = SMALL_BODY_LIMIT): Promise<Buffer> {
        const parts: Buffer[] = [];
        let n = 0;
        for await (const c of iterable) {
          n += c.length;
          if (n > limit) {
            res.destroy();
            throw new SluiceError('LIMIT', `response larger than ${limit} bytes`);
          }
          parts.push(Buffer.from(c.buffer, c.byteOffset, c.byteLength));
        }
        return Buffer.concat(parts, n);
      },
      async readHead(limit: number): Promise<Buffer> {
        const parts: Buffer[] = [];
        let n = 0;
        try {
          for await (const c of iterable) {
            parts.push(Buffer.from(c.buffer, c.byteOffset, c.byteLength));
            n += c.length;
            if (n >= limit) break;
          }
        } catch {
          // only a message is made of it: what arrived before the failure is kept
        }
        if (!res.complete) res.destroy();
        return Buffer.concat(parts, n).subarray(0, limit);
      },
      discard(): void {
        cleanup();
        if (!consumed || !res.complete) res.destroy();
      },
    };
  }
}
