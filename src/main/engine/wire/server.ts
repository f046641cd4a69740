// `sluice serve`: a read-only server of one repository speaking hg's HTTP wire protocol v1 the way
// hg serve does (wireprotoserver.py `handlewsgirequest` / `_callhttp`, wireprotov1server.py), so
// that `hg clone --stream` and Sluice's client can clone from it. Only stream clones are served:
// v2 through getbundle (stream2 + bookmarks + listkeys [+ phase-heads]) and v1 through
// stream_out (plus the follow-up getbundle for phases and bookmarks). Anything that needs a
// changegroup gets an error:abort part with a message that says so.
//
// Streams are produced lazily with backpressure (bounded memory per client), every request is
// independent, so many clients are served at once.

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { SluiceError } from '../errors';
import type { Bundle2OutPart } from '../format/bundle2';
import { bundle2Reply, bundle2ReplyLength, type ReplyPart } from './bundle2-reply';
import { stream2Params } from '../format/stream2';
import { inspectBundleFile } from '../format/bundle-file';
import { decodeBundle2Caps, encodeBundle2Caps, serverBundle2Caps } from './capabilities';
import { SERVER_WIRE_ENGINES, compressWire, type WireEngine } from './codec';
import { ServedRepo, type RepoSnapshot } from './repo-state';
import { StoreLocked, serverStream2, serverStreamOut } from './server-streams';
import { branchMapOf } from './branchmap';
import {
  decodeNodeList,
  encodeKeys,
  escapeBatchArg,
  isHexNode,
  parseQs,
  quote,
  unescapeBatchArg,
  unquote,
} from './wire-encoding';

const HGTYPE = 'application/mercurial-0.1';
const HGTYPE2 = 'application/mercurial-0.2';
const HGERRTYPE = 'application/hg-error';
const BUNDLE2_REQUIRED =
  'incompatible Mercurial client; bundle2 required\n(see https://www.mercurial-scm.org/wiki/IncompatibleClient)\n';
const ONLY_STREAM = 'sluice serve only serves stream clones';
/** corked bytes before a flush */
const FLUSH_BYTES = 256 * 1024;
const ONLY_STREAM_HINT = 'clone with hg clone --stream (pulls and non-stream clones need hg serve)';

export interface CloneBundleFile {
  path: string;
  /** BUNDLESPEC; default: derived from the file (none-packed1;requirements=… / none-v2;stream=v2;…) */
  spec?: string;
}

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
  /** one line per request (default: none) */
  log?: (line: string) => void;
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

class WireError extends Error {
  constructor(
    readonly status: number,
    readonly contentType: string,
    readonly body: string,
  ) {
    super(body);
  }
}

/** An Abort raised inside a command: becomes an error:abort part (bundle2) or hg-error text. */
class CommandAbort extends Error {
  constructor(
    message: string,
    readonly hint?: string,
  ) {
    super(message);
  }
}

interface Request {
  /** fires when the client goes away before the response ended */
  signal: AbortSignal;
  req: http.IncomingMessage;
  res: http.ServerResponse;
  args: Map<string, string>;
  protoCaps: Set<string>;
  snap: RepoSnapshot;
  baseUrl: string;
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
    if (n > limit) throw new WireError(413, 'text/plain', 'request body too large\n');
    parts.push(c);
  }
  return Buffer.concat(parts, n);
}

function specFor(info: Awaited<ReturnType<typeof inspectBundleFile>>): string {
  const reqs = `requirements%3D${quote(info.requirements.join(','), '')}`;
  if (info.type === 'packed1') return `none-packed1;${reqs}`;
  const comp =
    info.compression === 'UN'
      ? 'none'
      : info.compression === 'ZS'
        ? 'zstd'
        : info.compression === 'GZ'
          ? 'gzip'
          : 'bzip2';
  return `${comp}-v2;stream=v2;${reqs}`;
}

export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  const repo = new ServedRepo(opts.repo, {
    ...(opts.uncompressed !== undefined ? { uncompressed: opts.uncompressed } : {}),
    ...(opts.streamV2 !== undefined ? { bundle2Stream: opts.streamV2 } : {}),
    preferUncompressed: opts.preferUncompressed ?? true,
    ...(opts.publishing !== undefined ? { publishing: opts.publishing } : {}),
  });
  await repo.snapshot(); // fail now (NOT_A_REPO, corrupt changelog) rather than on the first request
  const chunkSize = opts.chunkSize ?? 32768;
  const headerLimit = opts.httpHeaderLimit ?? 1024;

  // clone bundle files served by this server under /.sluice/bundles/<n>/<name>
  const bundleFiles: { route: string; path: string; spec: string }[] = [];
  for (const [i, f] of (opts.cloneBundles?.files ?? []).entries()) {
    const spec = f.spec ?? specFor(await inspectBundleFile(f.path));
    bundleFiles.push({
      route: `/.sluice/bundles/${i}/${encodeURIComponent(basename(f.path))}`,
      path: f.path,
      spec,
    });
  }

  async function manifestText(baseUrl: string): Promise<string> {
    let text = opts.cloneBundles?.manifest ?? '';
    if (opts.cloneBundles?.manifest === undefined) {
      text = (
        await readFile(join(opts.repo, '.hg', 'clonebundles.manifest')).catch(() => Buffer.alloc(0))
      ).toString('latin1');
    }
    const own = bundleFiles
      .map((b) => `${baseUrl.replace(/\/$/, '')}${b.route} BUNDLESPEC=${b.spec}\n`)
      .join('');
    return text + (text && !text.endsWith('\n') && own ? '\n' : '') + own;
  }

  async function hasCloneBundles(): Promise<boolean> {
    if (bundleFiles.length || opts.cloneBundles?.manifest) return true;
    if (opts.cloneBundles?.manifest !== undefined) return false;
    return !!(await stat(join(opts.repo, '.hg', 'clonebundles.manifest')).catch(() => null));
  }

  async function capabilities(r: Request): Promise<string> {
    const snap = r.snap;
    const caps = [
      'batch',
      'getbundle',
      'known',
      'pushkey',
      `httpheader=${headerLimit}`,
      'httpmediatype=0.1rx,0.1tx,0.2tx',
    ];
    if (await branchMapOf(snap)) caps.push('branchmap');
    if (snap.streamAllowed) {
      if (snap.settings.preferUncompressed) caps.push('stream-preferred');
      const reqs = snap.streamRequirements;
      if (reqs.every((x) => x === 'revlogv1')) caps.push('stream');
      else caps.push(`streamreqs=${reqs.join(',')}`);
    }
    // bundle2.getrepocaps checks only the two knobs, not secret changesets (quirk kept)
    const v2 = snap.settings.uncompressed && snap.settings.bundle2Stream;
    caps.push(`bundle2=${quote(encodeBundle2Caps(serverBundle2Caps(v2)))}`);
    if (await hasCloneBundles()) caps.push('clonebundles');
    if (opts.httpPostArgs) caps.push('httppostargs');
    caps.push(`compression=${SERVER_WIRE_ENGINES.join(',')}`);
    return caps.sort().join(' ');
  }

  async function branchmap(snap: RepoSnapshot): Promise<string> {
    const map = await branchMapOf(snap);
    if (!map) throw new CommandAbort('sluice serve cannot read branch names of this repository');
    return [...map].map(([name, nodes]) => `${quote(name)} ${nodes.join(' ')}`).join('\n');
  }

  function heads(snap: RepoSnapshot): string {
    return (
      snap
        .headRevs()
        .map((r) => snap.hex(r))
        .join(' ') + '\n'
    );
  }

  function known(snap: RepoSnapshot, nodes: string): string {
    return decodeOrAbort(nodes)
      .map((n) => (snap.revOfHex(n) !== undefined ? '1' : '0'))
      .join('');
  }

  /** the listkeys command sorts (wireprotov1server.listkeys); the bundle2 part does not */
  function listkeys(snap: RepoSnapshot, namespace: string, sorted = true): string {
    const keys = listkeyPairs(snap, namespace);
    return encodeKeys(sorted ? keys.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)) : keys);
  }

  function listkeyPairs(snap: RepoSnapshot, namespace: string): [string, string][] {
    switch (namespace) {
      case 'bookmarks':
        return snap.servedBookmarks();
      case 'phases':
        return snap.listPhases();
      case 'namespaces':
        return [
          ['bookmarks', ''],
          ['namespaces', ''],
          ['phases', ''],
        ];
      default:
        return [];
    }
  }

  /** The batchable commands (plain bytes results). */
  async function plainCommand(r: Request, cmd: string, args: Map<string, string>): Promise<string> {
    const need = (k: string): string => {
      const v = args.get(k);
      if (v === undefined) throw new WireError(400, 'text/plain', `missing argument ${k} for ${cmd}\n`);
      return v;
    };
    switch (cmd) {
      case 'heads':
        return heads(r.snap);
      case 'known':
        return known(r.snap, need('nodes'));
      case 'branchmap':
        return branchmap(r.snap);
      case 'listkeys':
        return listkeys(r.snap, need('namespace'));
      case 'clonebundles':
        return manifestText(r.baseUrl);
      case 'capabilities':
        return capabilities(r);
      case 'lookup': {
        const key = need('key');
        const rev = lookup(r.snap, key);
        return rev === undefined ? `0 unknown revision '${key}'\n` : `1 ${r.snap.hex(rev)}\n`;
      }
      default:
        throw new CommandAbort(
          `sluice serve does not support the ${cmd} command (read-only, stream clones only)`,
        );
    }
  }

  function decodeOrAbort(nodes: string): string[] {
    try {
      return decodeNodeList(nodes, 'nodes');
    } catch (e) {
      throw new WireError(400, 'text/plain', `${(e as Error).message}\n`);
    }
  }

  async function batch(r: Request): Promise<string> {
    const cmds = r.args.get('cmds') ?? '';
    const out: string[] = [];
    for (const pair of cmds.split(';')) {
      const sp = pair.indexOf(' ');
      const op = sp < 0 ? pair : pair.slice(0, sp);
      const vals = new Map<string, string>();
      for (const a of (sp < 0 ? '' : pair.slice(sp + 1)).split(',')) {
        if (!a) continue;
        const eq = a.indexOf('=');
        if (eq < 0) throw new WireError(400, 'text/plain', 'malformed batch argument\n');
        vals.set(unescapeBatchArg(a.slice(0, eq)), unescapeBatchArg(a.slice(eq + 1)));
      }
      out.push(escapeBatchArg(await plainCommand(r, op, vals)));
    }
    return out.join(';');
  }

  /** _httpresponsetype: (media type, engine) for a streamres */
  function responseType(r: Request, preferUncompressed: boolean): { mediaType: string; engine: WireEngine } {
    if (r.protoCaps.has('0.2')) {
      if (preferUncompressed) return { mediaType: HGTYPE2, engine: 'none' };
      let client = ['zlib', 'none'];
      for (const c of r.protoCaps) if (c.startsWith('comp=')) client = c.slice(5).split(',');
      for (const e of SERVER_WIRE_ENGINES) if (client.includes(e)) return { mediaType: HGTYPE2, engine: e };
    }
    return { mediaType: HGTYPE, engine: 'zlib' };
  }

  async function getbundle(r: Request): Promise<{ parts: ReplyPart[]; preferUncompressed: boolean }> {
    const a = r.args;
    const bool = (k: string, dflt: boolean): boolean =>
      a.has(k) ? a.get(k) !== '0' && a.get(k) !== '' : dflt;
    const bundlecaps = new Set((a.get('bundlecaps') ?? '').split(','));
    const b2caps = new Map<string, string[]>();
    for (const c of bundlecaps)
      if (c.startsWith('bundle2='))
        for (const [k, v] of decodeBundle2Caps(unquote(c.slice(8)))) b2caps.set(k, v);
    const snap = r.snap;
    const parts: ReplyPart[] = [];
    let preferUncompressed = false;

    if (bool('stream', false)) {
      if (!snap.streamAllowed) {
        throw new CommandAbort(
          'stream data requested but server does not allow this feature',
          'well-behaved clients should not be requesting stream data from servers not advertising it; the client may be buggy',
        );
      }
      if (a.get('includepats') || a.get('excludepats'))
        throw new CommandAbort('server does not support narrow stream clones');
      // bundle2.addpartbundlestream2: markers go along only to a client that takes their format
      // version (its bundle2 `obsmarkers=V0,V1` cap); a client with none is refused
      let includeObsmarkers = false;
      if (snap.obsstoreVersion !== null) {
        const versions = (b2caps.get('obsmarkers') ?? [])
          .filter((v) => v.startsWith('V'))
          .map((v) => Number(v.slice(1)));
        if (!versions.length)
          throw new CommandAbort(
            'server has obsolescence markers, but client cannot receive them via stream clone',
          );
        includeObsmarkers = versions.includes(snap.obsstoreVersion);
      }
      const s = await serverStream2(snap, r.signal, includeObsmarkers);
      parts.push({
        type: 'stream2',
        mandatoryParams: stream2Params(s.files, s.bytes, snap.streamRequirements),
        data: s.payload,
        payloadLength: s.payloadLength,
      });
      preferUncompressed = true;
    }
    if (bool('cg', true)) {
      const headsArg = a.has('heads') ? decodeOrAbort(a.get('heads')!) : null;
      const common = a.has('common') ? decodeOrAbort(a.get('common')!) : [];
      const wanted = headsArg ? headsArg.map((h) => snap.revOfHex(h)) : snap.headRevs();
      if (wanted.some((x) => x === undefined)) throw new CommandAbort('unknown revision requested');
      const commonRevs = common.map((h) => snap.revOfHex(h)).filter((x): x is number => x !== undefined);
      const have = snap.graph.ancestors(commonRevs);
      if ((wanted as number[]).some((rev) => !have[rev]))
        throw new CommandAbort(ONLY_STREAM, ONLY_STREAM_HINT);
    }
    if (bool('bookmarks', false)) {
      if (!b2caps.has('bookmarks')) throw new CommandAbort('no common bookmarks exchange method');
      const marks = snap.servedBookmarks();
      const data = Buffer.concat(
        marks.map(([name, hex]) => {
          const nm = Buffer.from(name, 'latin1');
          const head = Buffer.alloc(22);
          Buffer.from(hex, 'hex').copy(head, 0);
          head.writeUInt16BE(nm.length, 20);
          return Buffer.concat([head, nm]);
        }),
      );
      if (data.length) parts.push({ type: 'bookmarks', data });
    }
    for (const ns of a.has('listkeys') ? a.get('listkeys')!.split(',') : []) {
      parts.push({
        type: 'listkeys',
        mandatoryParams: [['namespace', ns]],
        data: Buffer.from(listkeys(snap, ns, false), 'latin1'),
      });
    }
    if (bool('phases', false)) {
      if (!(b2caps.get('phases') ?? []).includes('heads'))
        throw new CommandAbort('no common phases exchange method');
      const headsArg = a.has('heads') ? decodeOrAbort(a.get('heads')!) : null;
      const headRevs = headsArg
        ? headsArg.map((h) => snap.revOfHex(h)).filter((x): x is number => x !== undefined)
        : snap.headRevs();
      const byPhase = snap.phaseHeads(headRevs);
      const entries: Buffer[] = [];
      for (const [phase, revs] of byPhase) {
        for (const rev of revs) {
          const e = Buffer.alloc(24);
          e.writeInt32BE(phase, 0);
          Buffer.from(snap.graph.nodes[rev]!, 'latin1').copy(e, 4);
          entries.push(e);
        }
      }
      parts.push({ type: 'phase-heads', data: Buffer.concat(entries) });
    }
    return { parts, preferUncompressed };
  }

  let requests = 0;
  const active = new Set<http.ServerResponse>();

  async function send(
    res: http.ServerResponse,
    status: number,
    contentType: string,
    body: string | Buffer,
    extra: Record<string, string> = {},
  ): Promise<number> {
    const buf = typeof body === 'string' ? Buffer.from(body, 'latin1') : body;
    res.writeHead(status, status === 200 ? 'Script output follows' : http.STATUS_CODES[status], {
      'Content-Type': contentType,
      'Content-Length': String(buf.length),
      ...extra,
    });
    res.end(buf);
    return buf.length;
  }

  /**
   * A streamed 200 reply with backpressure. Writes are corked and flushed every ~256 KiB so the
   * many small pieces of a framed payload (4-byte headers, views) leave in few writev calls.
   */
  async function sendStream(
    res: http.ServerResponse,
    contentType: string,
    body: AsyncIterable<Uint8Array>,
    contentLength?: number,
  ): Promise<number> {
    res.writeHead(200, 'Script output follows', {
      'Content-Type': contentType,
      ...(contentLength !== undefined ? { 'Content-Length': String(contentLength) } : {}),
    });
    let sent = 0;
    let batched = 0;
    res.cork();
    try {
      for await (const chunk of body) {
        if (res.destroyed) break;
        sent += chunk.length;
        batched += chunk.length;
        const ok = res.write(chunk);
        if (batched >= FLUSH_BYTES || !ok) {
          res.uncork();
          batched = 0;
          if (res.writableNeedDrain) {
            await new Promise<void>((resolve) => {
              const done = (): void => {
                res.off('drain', done);
                res.off('close', done);
                resolve();
              };
              res.on('drain', done);
              res.on('close', done);
            });
          }
          res.cork();
        }
      }
      res.uncork();
      res.end();
    } catch (e) {
      // a producer failure that is not framed in-band: cut the connection so the client sees it
      res.destroy(e as Error);
      throw e;
    }
    return sent;
  }

  async function serveBundleFile(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    path: string,
  ): Promise<number> {
    const st = await stat(path);
    const range = /^bytes=(\d+)-(\d*)$/.exec(String(req.headers.range ?? ''));
    let start = 0;
    let end = st.size - 1;
    let status = 200;
    const headers: Record<string, string> = {
      'Content-Type': 'application/octet-stream',
      'Accept-Ranges': 'bytes',
    };
    if (range) {
      start = Number(range[1]);
      if (range[2]) end = Math.min(end, Number(range[2]));
      if (start >= st.size || start > end) {
        res.writeHead(416, { 'Content-Range': `bytes */${st.size}` });
        res.end();
        return 0;
      }
      status = 206;
      headers['Content-Range'] = `bytes ${start}-${end}/${st.size}`;
    }
    headers['Content-Length'] = String(end - start + 1);
    res.writeHead(status, headers);
    if (req.method === 'HEAD' || st.size === 0) {
      res.end();
      return 0;
    }
    const stream = createReadStream(path, { start, end });
    return sendStreamPlain(res, stream);
  }

  async function sendStreamPlain(res: http.ServerResponse, body: AsyncIterable<Uint8Array>): Promise<number> {
    let sent = 0;
    for await (const chunk of body) {
      if (res.destroyed) break;
      sent += chunk.length;
      if (!res.write(chunk))
        await new Promise((resolve) => res.once('drain', resolve).once('close', resolve));
    }
    res.end();
    return sent;
  }

  async function handle(
    req: http.IncomingMessage,
    res: http.ServerResponse,
  ): Promise<{ status: number; bytes: number }> {
    const raw = req.url ?? '/';
    const q = raw.indexOf('?');
    const path = q < 0 ? raw : raw.slice(0, q);
    const query = parseQs(q < 0 ? '' : Buffer.from(raw.slice(q + 1), 'latin1').toString('latin1'));
    const host = req.headers.host ?? `${opts.address ?? '127.0.0.1'}`;
    const baseUrl = `http://${host}/`;

    // hgweb's access control ([web] deny_read, allow_read, allow-pull of the repository's hgrc):
    // 401 with the reason as status text and hg's `0\n<reason>\n` body; hg's client then says
    // "authorization failed". Served clone bundles count as pulls.
    const cmd = query.get('cmd')?.[0];
    const bundle = bundleFiles.find((b) => b.route === path);
    const snap = await repo.snapshot();
    const refused = snap.accessProblem(cmd !== undefined || bundle ? 'pull' : 'read');
    if (refused) {
      req.resume();
      const body = Buffer.from(`0\n${refused}\n`, 'latin1');
      res.writeHead(401, refused, { 'Content-Length': String(body.length) });
      res.end(body);
      return { status: 401, bytes: body.length };
    }
    if (bundle && (req.method === 'GET' || req.method === 'HEAD')) {
      return { status: req.headers.range ? 206 : 200, bytes: await serveBundleFile(req, res, bundle.path) };
    }
    if (cmd === undefined) {
      const text = `sluice serve: read-only Mercurial repository for stream clones\nclone it with: hg clone --stream ${baseUrl}\n`;
      return {
        status: path === '/' ? 200 : 404,
        bytes: await send(res, path === '/' ? 200 : 404, 'text/plain; charset=utf-8', text),
      };
    }
    if (path !== '/') {
      // the `cmd` query argument is only valid on the repository root (hg sends 404 + this body)
      return { status: 404, bytes: await send(res, 404, HGTYPE, '0\nNot Found\n') };
    }
    // arguments: query string, then POST body (X-HgArgs-Post) or X-HgArg-N headers
    const args = new Map<string, string>();
    for (const [k, v] of query) if (k !== 'cmd') args.set(k, v[0]!);
    const postLen = Number(req.headers['x-hgargs-post'] ?? 0);
    let extra: Map<string, string[]>;
    if (postLen > 0) {
      const body = await readBody(req, 16 << 20);
      extra = parseQs(body.subarray(0, postLen).toString('latin1'));
    } else {
      extra = parseQs(headerValue(req, 'X-HgArg'));
      req.resume();
    }
    for (const [k, v] of extra) if (!args.has(k)) args.set(k, v[0]!);
    const protoCaps = new Set(headerValue(req, 'X-HgProto').split(' '));
    const gone = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) gone.abort();
    });
    const r: Request = {
      signal: gone.signal,
      req,
      res,
      args,
      protoCaps,
      snap,
      baseUrl,
    };

    try {
      switch (cmd) {
        case 'capabilities':
        case 'heads':
        case 'known':
        case 'branchmap':
        case 'listkeys':
        case 'clonebundles':
        case 'lookup':
          return { status: 200, bytes: await send(res, 200, HGTYPE, await plainCommand(r, cmd, args)) };
        case 'batch':
          return { status: 200, bytes: await send(res, 200, HGTYPE, await batch(r)) };
        case 'stream_out': {
          if (!r.snap.streamAllowed) return { status: 200, bytes: await send(res, 200, HGTYPE, '1\n') };
          let out: Awaited<ReturnType<typeof serverStreamOut>>;
          try {
            out = await serverStreamOut(r.snap, r.signal);
          } catch (e) {
            // generatev1wireproto: `2\n` when the repository lock cannot be had
            if (e instanceof StoreLocked) return { status: 200, bytes: await send(res, 200, HGTYPE, '2\n') };
            throw e;
          }
          return { status: 200, bytes: await sendStream(res, HGTYPE, out.body, out.length) };
        }
        case 'getbundle': {
          const caps = (args.get('bundlecaps') ?? '').split(',');
          if (!caps.some((c) => c.startsWith('HG2')))
            return { status: 200, bytes: await send(res, 200, HGERRTYPE, BUNDLE2_REQUIRED) };
          let built: Awaited<ReturnType<typeof getbundle>>;
          try {
            built = await getbundle(r);
          } catch (e) {
            if (!(e instanceof CommandAbort)) throw e;
            const abort: Bundle2OutPart = {
              type: 'error:abort',
              mandatoryParams: [['message', e.message]],
              ...(e.hint ? { advisoryParams: [['hint', e.hint]] } : {}),
            };
            const { mediaType, engine } = responseType(r, true);
            return {
              status: 200,
              bytes: await sendStream(
                res,
                mediaType,
                framed(mediaType, engine, bundle2Reply([abort], chunkSize)),
              ),
            };
          }
          const { mediaType, engine } = responseType(r, built.preferUncompressed);
          let interrupted = false;
          const reply = bundle2Reply(built.parts, chunkSize, (e) => {
            interrupted = true;
            logLine(req, 200, 0, Date.now(), `stream interrupted: ${(e as Error).message}`);
          });
          // uncompressed replies have a known size: Content-Length spares both sides the chunked
          // transfer framing (hg's Python client pays per HTTP chunk)
          const inner = engine === 'none' ? bundle2ReplyLength(built.parts, chunkSize) : null;
          const length = inner === null ? undefined : inner + (mediaType === HGTYPE2 ? 1 + engine.length : 0);
          const sent = await sendStream(res, mediaType, framed(mediaType, engine, reply), length);
          if (interrupted && length !== undefined) res.destroy(); // fewer bytes than announced: end the connection
          return { status: 200, bytes: sent };
        }
        case 'unbundle':
        case 'pushkey':
          return {
            status: 200,
            bytes: await send(res, 200, HGERRTYPE, `sluice serve is read-only: ${cmd} is not supported\n`),
          };
        case 'between':
        case 'branches':
        case 'changegroup':
        case 'changegroupsubset':
        case 'debugwireargs':
        case 'hello':
        case 'protocaps':
          return {
            status: 200,
            bytes: await send(
              res,
              200,
              HGERRTYPE,
              `sluice serve does not support the ${cmd} command; ${ONLY_STREAM}\n`,
            ),
          };
        default:
          return { status: 400, bytes: await send(res, 400, 'text/plain', `no such method: ${cmd}\n`) };
      }
    } catch (e) {
      if (e instanceof CommandAbort) {
        return {
          status: 200,
          bytes: await send(res, 200, HGERRTYPE, `${e.message}\n${e.hint ? `(${e.hint})\n` : ''}`),
        };
      }
      throw e;
    }
  }

  const server = http.createServer((req, res) => {
    const t0 = Date.now();
    requests++;
    active.add(res);
    res.on('close', () => active.delete(res));
    handle(req, res)
      .then(({ status, bytes }) => logLine(req, status, bytes, t0))
      .catch((e: unknown) => {
        let status = 500;
        if (e instanceof WireError) {
          status = e.status;
          if (!res.headersSent) void send(res, e.status, e.contentType, e.body);
        } else if (!res.headersSent) {
          void send(res, 500, 'text/plain', 'Internal Server Error\n');
        } else {
          res.destroy();
        }
        logLine(req, status, 0, t0, e instanceof Error ? e.message : String(e));
      });
  });
  server.keepAliveTimeout = 5000;

  function logLine(req: http.IncomingMessage, status: number, bytes: number, t0: number, err?: string): void {
    if (!opts.log) return;
    const cmd = (req.url ?? '').slice(0, 200);
    opts.log(
      `${req.socket.remoteAddress ?? '-'} "${req.method} ${cmd} HTTP/${req.httpVersion}" ${status} ${bytes} ${Date.now() - t0}ms${err ? ` error: ${err}` : ''}`,
    );
  }

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
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}

/** genversion2: the 0.2 engine header, then the engine's stream. */
async function* framed(
  mediaType: string,
  engine: WireEngine,
  src: AsyncIterable<Uint8Array>,
): AsyncGenerator<Uint8Array> {
  if (mediaType === HGTYPE2)
    yield Buffer.concat([Buffer.from([engine.length]), Buffer.from(engine, 'latin1')]);
  yield* compressWire(engine, src);
}

function lookup(snap: RepoSnapshot, key: string): number | undefined {
  if (key === 'tip') return snap.headRevs().length ? Math.max(...snap.headRevs()) : undefined;
  if (isHexNode(key)) return snap.revOfHex(key);
  for (const [name, hex] of snap.servedBookmarks()) if (name === key) return snap.revOfHex(hex);
  if (/^\d+$/.test(key)) {
    const r = Number(key);
    return r < snap.graph.length && snap.visible(r) ? r : undefined;
  }
  return undefined;
}
