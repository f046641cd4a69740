// `sluice serve`: a read-only server of one repository speaking hg's HTTP wire protocol v1 the way
// hg serve does (wireprotoserver.py `handlewsgirequest` / `_callhttp`). This module is the HTTP
// transport: routing, access control, argument decoding (query string, X-HgArg-N headers, POST
// body) and rendering a command's response (media type and compression negotiation, hg-error).
// The commands themselves are transport-independent (commands.ts), the reply writers are
// http-replies.ts, the stream bodies server-streams.ts.
//
// Every request is independent and streamed with backpressure, so many clients are served at once.

import http from 'node:http';
import { isIP, type AddressInfo } from 'node:net';
import { SluiceError } from '../../errors';
import { SERVER_WIRE_ENGINES, compressWire, type WireEngine } from '../../protocol/compression-engines';
import { recyclePiece } from '../../changegroup/out-writer';
import {
  BadRequest,
  dispatchCommand,
  type CommandCall,
  type CommandEnv,
  type CommandResponse,
} from './commands';
import { sendBody, sendFile, sendStream } from './http-replies';
import { ServedRepo } from './repo-state';
import { BundleRefresher } from './bundle-refresher';
import { ServedCloneBundles, type CloneBundleFile } from './served-clone-bundles';
import {
  REQUEST_ARGS_COUNT_MAX,
  REQUEST_ARGS_MAX,
  REQUEST_HEADERS_MAX,
  SERVER_IDLE_TIMEOUT_MS,
} from './server-limits';
import { parseQs } from '../../protocol/wire-encoding';

export type { CloneBundleFile } from './served-clone-bundles';

const HGTYPE = 'application/mercurial-0.1';
const HGTYPE2 = 'application/mercurial-0.2';
const HGERRTYPE = 'application/hg-error';

export interface ServerOptions {
  repo: string;
  /** default 127.0.0.1 */
  address?: string;
  /** default 0: any free port */
  port?: number;
  /** server.uncompressed=false: no stream clone at all */
  uncompressed?: boolean;
  /** server.bundle2.stream=false: only the legacy v1 stream_out */
  streamV2?: boolean;
  /** advertise `stream-preferred` so plain `hg clone URL` streams (default true: nothing else is served) */
  preferUncompressed?: boolean;
  /** override phases.publish of the repository */
  publishing?: boolean;
  /** bundle2 payload chunk size (default 32768; 4096 reproduces pre-4.5 hg) */
  chunkSize?: number;
  /** server.maxhttpheaderlen (default 1024) */
  httpHeaderLimit?: number;
  /** advertise experimental.httppostargs */
  httpPostArgs?: boolean;
  /** clone bundles: a manifest text to advertise as is, and/or bundle files this server serves itself */
  cloneBundles?: { manifest?: string; files?: CloneBundleFile[] };
  /**
   * the URL clients reach this server at (a DNS name, a reverse proxy's URL): the served clone
   * bundles' URLs are made from it. Default: the address the request's connection came in on
   * (never the client's Host header: see ownBaseUrl).
   */
  publicUrl?: string;
  /**
   * the `sluice bundles refresh` command line run in the background when the repository's
   * `[clone-bundles] auto-generate.on-change` is set (without it, on-change is not honoured)
   */
  bundleRefreshCommand?: readonly string[];
  /** one line per request (default: none) */
  log?: (line: string) => void;
  /**
   * a connection with nothing read or written for this long is closed, and a request must arrive
   * whole within it (default SERVER_IDLE_TIMEOUT_MS, 300 s): a client
   * that stops reading a reply, a request whose headers or body never end (a lying Content-Length)
   */
  idleTimeoutMs?: number;
  /** requests answered at once (default 64); more get 503 until one ends */
  maxActiveRequests?: number;
  /** open connections (default 4 × maxActiveRequests); more are closed on arrival */
  maxConnections?: number;
}

export interface RunningServer {
  /** http://address:port/ */
  url: string;
  address: string;
  port: number;
  /** stops listening, ends idle keep-alive connections, waits for running responses to end */
  close(): Promise<void>;
  /** requests answered so far */
  readonly requests: number;
}

/** A reply with a status other than 200 (bad request, body too large). */
class HttpFailure extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super(body);
  }
}

/**
 * A query string's arguments (the URL's, X-HgArg headers', a POST body's), refused (400) past
 * REQUEST_ARGS_COUNT_MAX before anything is split. `seen`: arguments already taken from elsewhere.
 */
function parseArgs(qs: string, seen = 0): Map<string, string[]> {
  let n = seen;
  for (let i = qs.indexOf('&'); i >= 0; i = qs.indexOf('&', i + 1))
    if (++n >= REQUEST_ARGS_COUNT_MAX)
      throw new HttpFailure(400, `too many arguments (at most ${REQUEST_ARGS_COUNT_MAX})\n`);
  return parseQs(qs);
}

/** wireprotoserver.decodevaluefromheaders */
function headerValue(req: http.IncomingMessage, prefix: string): string {
  let out = '';
  for (let i = 1; ; i++) {
    const v = req.headers[`${prefix.toLowerCase()}-${i}`];
    if (v === undefined) return out;
    out += Array.isArray(v) ? v.join('') : v;
  }
}

async function readBody(req: http.IncomingMessage, limit: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let n = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    n += c.length;
    if (n > limit) throw new HttpFailure(413, 'request body too large\n');
    parts.push(c);
  }
  return Buffer.concat(parts, n);
}

/**
 * A body no argument is read from: discarded up to `limit` bytes while the command runs, and the
 * connection closed after the reply (Node would otherwise read the rest, however long, to keep
 * the connection alive).
 */
function discardBody(req: http.IncomingMessage, res: http.ServerResponse, limit: number): void {
  const te = req.headers['transfer-encoding'];
  const cl = req.headers['content-length'];
  if (te === undefined && (cl === undefined || cl === '0')) return;
  res.shouldKeepAlive = false;
  let n = 0;
  req.on('data', (c: Buffer) => {
    n += c.length;
    if (n > limit) req.socket.destroy();
  });
  req.resume();
}

/** The server options that override the repository's own [server]/[phases] settings. */
function repoOverrides(opts: ServerOptions): ConstructorParameters<typeof ServedRepo>[1] {
  return {
    ...(opts.uncompressed !== undefined ? { uncompressed: opts.uncompressed } : {}),
    ...(opts.streamV2 !== undefined ? { bundle2Stream: opts.streamV2 } : {}),
    preferUncompressed: opts.preferUncompressed ?? true,
    ...(opts.publishing !== undefined ? { publishing: opts.publishing } : {}),
  };
}

/** _httpresponsetype: (media type, engine) for a streamres */
function responseType(
  protoCaps: Set<string>,
  preferUncompressed: boolean,
): { mediaType: string; engine: WireEngine } {
  if (protoCaps.has('0.2')) {
    if (preferUncompressed) return { mediaType: HGTYPE2, engine: 'none' };
    let client = ['zlib', 'none'];
    for (const c of protoCaps) if (c.startsWith('comp=')) client = c.slice(5).split(',');
    for (const e of SERVER_WIRE_ENGINES) if (client.includes(e)) return { mediaType: HGTYPE2, engine: e };
  }
  return { mediaType: HGTYPE, engine: 'zlib' };
}

/** genversion2: the 0.2 engine header, then the engine's stream. */
async function* framed(
  mediaType: string,
  engine: WireEngine,
  src: AsyncIterable<Uint8Array>,
): AsyncGenerator<Uint8Array> {
  if (mediaType === HGTYPE2)
    yield Buffer.concat([Buffer.from([engine.length]), Buffer.from(engine, 'latin1')]);
  // the changegroup's framed output pieces go back to its writer once compressed
  yield* compressWire(engine, src, recyclePiece);
}

/** `--public-url`: an http(s) URL without credentials, query or fragment, ending in `/`. */
export function checkPublicUrl(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new SluiceError('USAGE', `public URL is not a URL: ${raw}`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new SluiceError('USAGE', `public URL must be http:// or https:// (got ${raw})`);
  if (u.username || u.password || u.search || u.hash)
    throw new SluiceError('USAGE', `public URL must have no credentials, query or fragment (got ${raw})`);
  return u.href.endsWith('/') ? u.href : `${u.href}/`;
}

/** An IP address as a URL's host: IPv6 in brackets, an IPv4-mapped IPv6 address as IPv4. */
function urlHost(ip: string): string {
  const v4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (v4) return v4[1]!;
  // a zone (fe80::1%eth0) is %25 in a URL (RFC 6874)
  return isIP(ip) === 6 ? `[${ip.replace('%', '%25')}]` : ip;
}

/**
 * The URL this server's own routes (the served clone bundles) are advertised under, for one
 * request. The Host header is the client's word: reflected into a clonebundles manifest it would
 * hand a client, or a cache in front of the server and every client after it, bundle URLs on a
 * host of the sender's choosing (hg's own manifest is static text written by the admin). So the
 * URL is the configured public URL, else the address the connection came in on (the interface
 * and port the client reached: this server's own, whatever it is bound to, 0.0.0.0 included);
 * the Host header is kept only as `localhost:PORT` on a loopback connection, which names this
 * server too.
 */
function ownBaseUrl(req: http.IncomingMessage, publicUrl: string | undefined): string {
  if (publicUrl) return publicUrl;
  const { localAddress, localPort } = req.socket;
  const own = `${urlHost(localAddress ?? '127.0.0.1')}:${localPort ?? 80}`.toLowerCase();
  const host = (req.headers.host ?? '').toLowerCase();
  const loopback = /^(127\.|::1$|::ffff:127\.)/.test(localAddress ?? '');
  if (loopback && host === `localhost:${localPort}`) return `http://${host}/`;
  return `http://${own}/`;
}

/** What a request's handling needs of the running server. */
interface ServeState {
  repo: ServedRepo;
  cloneBundles: ServedCloneBundles;
  env: CommandEnv;
  /** wireprotoserver.httpv1protocolhandler.addcapabilities */
  transportCaps: string[];
  publicUrl: string | undefined;
  idleMs: number;
  logLine: (req: http.IncomingMessage, status: number, bytes: number, t0: number, err?: string) => void;
}

/** A request's outcome, for the access log. */
interface Served {
  status: number;
  bytes: number;
}

async function handle(s: ServeState, req: http.IncomingMessage, res: http.ServerResponse): Promise<Served> {
  const raw = req.url ?? '/';
  const q = raw.indexOf('?');
  const path = q < 0 ? raw : raw.slice(0, q);
  const query = parseArgs(q < 0 ? '' : Buffer.from(raw.slice(q + 1), 'latin1').toString('latin1'));
  const baseUrl = ownBaseUrl(req, s.publicUrl);

  // hgweb's access control ([web] deny_read, allow_read, allow-pull of the repository's hgrc):
  // 401 with the reason as status text and hg's `0\n<reason>\n` body; hg's client then says
  // "authorization failed". Served clone bundles count as pulls.
  const cmd = query.get('cmd')?.[0];
  const bundle = s.cloneBundles.files.find((b) => b.route === path);
  const snap = await s.repo.snapshot();
  const refused = snap.accessProblem(cmd !== undefined || bundle ? 'pull' : 'read');
  if (refused) {
    req.resume();
    const body = Buffer.from(`0\n${refused}\n`, 'latin1');
    res.writeHead(401, refused, { 'Content-Length': String(body.length) });
    res.end(body);
    return { status: 401, bytes: body.length };
  }
  if (bundle && (req.method === 'GET' || req.method === 'HEAD')) {
    return { status: req.headers.range ? 206 : 200, bytes: await sendFile(req, res, bundle.path, s.idleMs) };
  }
  if (cmd === undefined) {
    const text = `sluice serve: read-only Mercurial repository for stream clones\nclone it with: hg clone --stream ${baseUrl}\n`;
    const status = path === '/' ? 200 : 404;
    return { status, bytes: await sendBody(res, status, 'text/plain; charset=utf-8', text) };
  }
  if (path !== '/') {
    // the `cmd` query argument is only valid on the repository root (hg sends 404 + this body)
    return { status: 404, bytes: await sendBody(res, 404, HGTYPE, '0\nNot Found\n') };
  }
  const args = await commandArgs(req, res, query);
  const gone = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) gone.abort();
  });
  const call: CommandCall = { snap, args, signal: gone.signal, transportCaps: s.transportCaps, baseUrl };
  let rsp;
  try {
    rsp = await dispatchCommand(s.env, cmd, call);
  } catch (e) {
    if (e instanceof BadRequest) throw new HttpFailure(400, `${e.message}\n`);
    throw e;
  }
  if (!rsp) return { status: 400, bytes: await sendBody(res, 400, 'text/plain', `no such method: ${cmd}\n`) };
  return sendResponse(s, req, res, rsp);
}

/** A command's arguments: the query string's, then the POST body's (X-HgArgs-Post) or X-HgArg-N headers'. */
async function commandArgs(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  query: Map<string, string[]>,
): Promise<Map<string, string>> {
  const args = new Map<string, string>();
  for (const [k, v] of query) if (k !== 'cmd') args.set(k, v[0]!);
  const postLen = Number(req.headers['x-hgargs-post'] ?? 0);
  let extra: Map<string, string[]>;
  if (postLen > 0) {
    const body = await readBody(req, REQUEST_ARGS_MAX);
    extra = parseArgs(body.subarray(0, postLen).toString('latin1'), query.size);
  } else {
    extra = parseArgs(headerValue(req, 'X-HgArg'), query.size);
    discardBody(req, res, REQUEST_ARGS_MAX);
  }
  for (const [k, v] of extra) if (!args.has(k)) args.set(k, v[0]!);
  return args;
}

/** Sends a command's response in the media type and compression the client asked for (X-HgProto). */
async function sendResponse(
  s: ServeState,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  rsp: CommandResponse,
): Promise<Served> {
  switch (rsp.type) {
    case 'bytes':
      return { status: 200, bytes: await sendBody(res, 200, HGTYPE, rsp.data) };
    case 'error':
      return { status: 200, bytes: await sendBody(res, 200, HGERRTYPE, rsp.message) };
    case 'stream-legacy':
      return { status: 200, bytes: await sendStream(res, HGTYPE, rsp.body, rsp.length, s.idleMs) };
    case 'stream': {
      const protoCaps = new Set(headerValue(req, 'X-HgProto').split(' '));
      const { mediaType, engine } = responseType(protoCaps, rsp.preferUncompressed);
      // uncompressed replies have a known size: Content-Length spares both sides the chunked
      // transfer framing (hg's Python client pays per HTTP chunk)
      const length =
        engine === 'none' && rsp.length !== null
          ? rsp.length + (mediaType === HGTYPE2 ? 1 + engine.length : 0)
          : undefined;
      const sent = await sendStream(res, mediaType, framed(mediaType, engine, rsp.body), length, s.idleMs);
      const cut = rsp.interruption();
      if (cut) {
        s.logLine(req, 200, 0, Date.now(), `stream interrupted: ${cut.message}`);
        if (length !== undefined) res.destroy(); // fewer bytes than announced: end the connection
      }
      return { status: 200, bytes: sent };
    }
  }
}

/** The access log's line for a request (nothing without opts.log). */
function accessLog(log: ServerOptions['log']): ServeState['logLine'] {
  return (req, status, bytes, t0, err) => {
    if (!log) return;
    const cmd = (req.url ?? '').slice(0, 200);
    log(
      `${req.socket.remoteAddress ?? '-'} "${req.method} ${cmd} HTTP/${req.httpVersion}" ${status} ${bytes} ${Date.now() - t0}ms${err ? ` error: ${err}` : ''}`,
    );
  };
}

/** The HTTP server: at most maxActive requests handled at once, the rest refused with a 503. */
function createHttpServer(s: ServeState, opts: ServerOptions, counted: () => void): http.Server {
  const maxActive = opts.maxActiveRequests ?? 64;
  let active = 0;
  // a request trickled a byte at a time never idles: it must arrive whole within the same time
  // (Node checks every 30 s; its headers within a minute, Node's default)
  const requestTimeouts = { requestTimeout: s.idleMs, headersTimeout: Math.min(60_000, s.idleMs) };
  const server = http.createServer({ maxHeaderSize: REQUEST_HEADERS_MAX, ...requestTimeouts }, (req, res) => {
    const t0 = Date.now();
    counted();
    if (active >= maxActive) {
      // hg's client reports the status ("HTTP Error 503: ..."); nothing of the request is read
      void sendBody(res, 503, 'text/plain', `too many requests at once (${maxActive}); try again\n`, {
        'Retry-After': '5',
        Connection: 'close',
      });
      s.logLine(req, 503, 0, t0);
      return;
    }
    active++;
    res.once('close', () => active--);
    handle(s, req, res)
      .then(({ status, bytes }) => s.logLine(req, status, bytes, t0))
      .catch((e: unknown) => {
        let status = 500;
        if (e instanceof HttpFailure) {
          status = e.status;
          if (!res.headersSent) void sendBody(res, e.status, 'text/plain', e.body);
        } else if (!res.headersSent) {
          void sendBody(res, 500, 'text/plain', 'Internal Server Error\n');
        } else {
          res.destroy();
        }
        s.logLine(req, status, 0, t0, e instanceof Error ? e.message : String(e));
      });
  });
  server.keepAliveTimeout = 5000;
  // socket inactivity (nothing read or written): the socket is destroyed, its request's streams
  // end (a 'close' on the response aborts the command)
  server.timeout = s.idleMs;
  server.maxConnections = opts.maxConnections ?? 4 * maxActive;
  return server;
}

export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  const publicUrl = opts.publicUrl === undefined ? undefined : checkPublicUrl(opts.publicUrl);
  const repo = new ServedRepo(opts.repo, repoOverrides(opts));
  await repo.snapshot(); // fail now (NOT_A_REPO, corrupt changelog) rather than on the first request
  const headerLimit = opts.httpHeaderLimit ?? 1024;
  const cloneBundles = await ServedCloneBundles.create(opts.repo, opts.cloneBundles ?? {});
  const refresher = opts.bundleRefreshCommand
    ? new BundleRefresher({
        repo: opts.repo,
        command: opts.bundleRefreshCommand,
        snapshot: () => repo.snapshot(),
        ...(opts.log ? { log: opts.log } : {}),
      })
    : null;
  refresher?.start();
  const state: ServeState = {
    repo,
    cloneBundles,
    env: { chunkSize: opts.chunkSize ?? 32768, cloneBundles },
    transportCaps: [
      `httpheader=${headerLimit}`,
      'httpmediatype=0.1rx,0.1tx,0.2tx',
      ...(opts.httpPostArgs ? ['httppostargs'] : []),
      `compression=${SERVER_WIRE_ENGINES.join(',')}`,
    ],
    publicUrl,
    idleMs: opts.idleTimeoutMs ?? SERVER_IDLE_TIMEOUT_MS,
    logLine: accessLog(opts.log),
  };
  let requests = 0;
  const server = createHttpServer(state, opts, () => requests++);
  const address = opts.address ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e) =>
      reject(new SluiceError('NETWORK', `cannot listen on ${address}:${opts.port ?? 0}: ${e.message}`)),
    );
    server.listen(opts.port ?? 0, address, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const hostPart = address.includes(':') ? `[${address}]` : address;
  return {
    url: `http://${hostPart}:${port}/`,
    address,
    port,
    get requests() {
      return requests;
    },
    close: () =>
      new Promise<void>((resolve) => {
        refresher?.close();
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
