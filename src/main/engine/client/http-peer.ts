// The client side of hg's HTTP wire protocol v1 (httppeer.py, wireprotov1peer.py): handshake,
// argument transport (POST / X-HgArg-N headers / query string, as the server advertises),
// media-type and compression negotiation (X-HgProto-1). The commands themselves are WirePeer's.

import { SluiceError } from '../errors';
import { Capabilities } from '../protocol/capabilities';
import { CLIENT_WIRE_ENGINES, decompressWire } from '../protocol/compression-engines';
import { readAhead } from './read-ahead';
import type { HttpResponse, HttpSession } from './http-client';
import { redactUrl } from './http-client';
import { WirePeer, readSmall, type PeerResponse } from './peer';
import { byteCompare, latin1, sortedPairs, urlencode } from '../protocol/wire-encoding';

/** httppeer.encodevalueinheaders: `X-HgArg-N: value`, each header line at most `limit` bytes. */
export function encodeValueInHeaders(value: string, header: string, limit: number): [string, string][] {
  const valueLen = limit - `${header}-000`.length - ': \r\n'.length;
  if (valueLen <= 0) throw new SluiceError('PROTOCOL', `server header limit ${limit} is too small`);
  const out: [string, string][] = [];
  for (let i = 0, n = 1; i < value.length; i += valueLen, n++)
    out.push([`${header}-${n}`, value.slice(i, i + valueLen)]);
  return out;
}

/** Reads `n` bytes off the front of an async byte stream and hands back the rest as a stream. */
async function takePrefix(
  src: AsyncIterable<Uint8Array>,
  n: number,
): Promise<{ prefix: Buffer; rest: AsyncIterable<Uint8Array> }> {
  const it = src[Symbol.asyncIterator]();
  const parts: Buffer[] = [];
  let have = 0;
  let leftover: Uint8Array | null = null;
  while (have < n) {
    const r = await it.next();
    if (r.done)
      throw new SluiceError('TRUNCATED', `response ended after ${have} bytes, inside the media-type header`);
    const b = Buffer.from(r.value.buffer, r.value.byteOffset, r.value.byteLength);
    const need = n - have;
    if (b.length > need) {
      parts.push(b.subarray(0, need));
      leftover = b.subarray(need);
      have = n;
    } else {
      parts.push(b);
      have += b.length;
    }
  }
  const prefix = Buffer.concat(parts, n);
  async function* rest(): AsyncGenerator<Uint8Array> {
    if (leftover) yield leftover;
    for (;;) {
      const r = await it.next();
      if (r.done) return;
      yield r.value;
    }
  }
  return { prefix, rest: rest() };
}

export class HttpPeer extends WirePeer {
  private constructor(
    readonly session: HttpSession,
    /** repository base URL (no query), updated when the server redirects */
    public url: string,
    readonly caps: Capabilities,
    readonly log?: (message: string) => void,
  ) {
    super();
  }

  get requests(): number {
    return this.session.requests;
  }

  /** The session belongs to whoever made it (it also downloads clone bundles). */
  async close(): Promise<void> {}

  /** performhandshake: `capabilities` with no X-Hg* headers; follows a redirect that drops the query. */
  static async connect(url: string, session: HttpSession, log?: (m: string) => void): Promise<HttpPeer> {
    const u = new URL(url);
    if (u.search || u.hash)
      throw new SluiceError('USAGE', `unsupported URL component: "${(u.search || u.hash).slice(1)}"`);
    let base = u.toString();
    let res = await session.request(HttpPeer.commandUrl(base, 'capabilities', []), { headers: {} });
    let respUrl = HttpPeer.stripQuery(res.url, '?cmd=capabilities');
    const ct = String(res.headers['content-type'] ?? '');
    if (
      respUrl.qsDropped &&
      respUrl.base.replace(/\/$/, '') !== base.replace(/\/$/, '') &&
      !ct.startsWith('application/mercurial-')
    ) {
      // a redirect that lost ?cmd=capabilities (issue 5860): ask the new URL again
      res.discard();
      base = respUrl.base;
      res = await session.request(HttpPeer.commandUrl(base, 'capabilities', []), { headers: {} });
      respUrl = HttpPeer.stripQuery(res.url, '?cmd=capabilities');
    }
    const parsed = await HttpPeer.checkResponse(res, base, false);
    const raw = latin1(await readSmall(parsed.body));
    const caps = new Capabilities(raw);
    if (respUrl.base.replace(/\/$/, '') !== base.replace(/\/$/, ''))
      log?.(`real URL is ${redactUrl(respUrl.base)}`);
    return new HttpPeer(session, respUrl.qsDropped ? base : respUrl.base, caps, log);
  }

  /**
   * A peer for a server whose capabilities were read earlier (`connect`'s base URL and raw
   * reply): no request until the first command. A caller that keeps them must drop them and
   * connect again when a command fails.
   */
  static withCapabilities(
    base: string,
    rawCaps: string,
    session: HttpSession,
    log?: (m: string) => void,
  ): HttpPeer {
    return new HttpPeer(session, base, new Capabilities(rawCaps), log);
  }

  private static commandUrl(base: string, cmd: string, queryArgs: [string, string][]): string {
    return `${base}?${urlencode([['cmd', cmd], ...queryArgs])}`;
  }

  private static stripQuery(finalUrl: string, qs: string): { base: string; qsDropped: boolean } {
    if (finalUrl.endsWith(qs)) return { base: finalUrl.slice(0, -qs.length), qsDropped: false };
    const u = new URL(finalUrl);
    u.search = '';
    return { base: u.toString(), qsDropped: true };
  }

  /** parsev1commandresponse: status, content type, 0.1 (zlib when compressible) or 0.2 engine header. */
  private static async checkResponse(
    res: HttpResponse,
    base: string,
    compressible: boolean,
    readAheadBytes = 0,
  ): Promise<PeerResponse> {
    const safe = redactUrl(base);
    if (res.status < 200 || res.status > 299) {
      const text = latin1(await res.readHead(4096));
      res.discard();
      throw new SluiceError(
        'HTTP',
        `HTTP Error ${res.status}: ${res.statusMessage}${text ? ` (${oneLine(text)})` : ''}`,
        {
          status: res.status,
          url: safe,
        },
      );
    }
    const proto = String(res.headers['content-type'] ?? '');
    if (proto.startsWith('application/hg-error')) {
      const text = latin1(await res.readHead(64 * 1024));
      res.discard();
      throw new SluiceError('REMOTE_ABORT', `remote error: ${text.trim()}`);
    }
    if (!proto.startsWith('application/mercurial-')) {
      const head = latin1(await res.readHead(200));
      res.discard();
      throw new SluiceError(
        'PROTOCOL',
        `'${safe}' does not appear to be an hg repository (content type: ${proto || 'none'})${head ? `: ${oneLine(head)}` : ''}`,
      );
    }
    const subtype = proto.slice('application/mercurial-'.length).split(';')[0]!.trim();
    // the reply itself (an error reply above is read whole): read ahead before decompression
    const body = (): AsyncIterable<Uint8Array> =>
      readAheadBytes > 0 ? readAhead(res.body, readAheadBytes) : res.body;
    if (subtype === '0.1') {
      return {
        mediaType: '0.1',
        engine: compressible ? 'zlib' : 'none',
        body: compressible ? decompressWire('zlib', body()) : body(),
        discard: () => res.discard(),
      };
    }
    if (subtype === '0.2') {
      const first = await takePrefix(body(), 1);
      const len = first.prefix[0]!;
      if (len === 0)
        throw new SluiceError(
          'PROTOCOL',
          'empty compression engine name in application/mercurial-0.2 response',
        );
      const named = await takePrefix(first.rest, len);
      const engine = named.prefix.toString('latin1');
      return {
        mediaType: '0.2',
        engine,
        body: decompressWire(engine, named.rest),
        discard: () => res.discard(),
      };
    }
    if (/^\d+(\.\d+)*$/.test(subtype))
      throw new SluiceError('PROTOCOL', `'${safe}' uses newer protocol ${subtype}`);
    throw new SluiceError('PROTOCOL', `'${safe}' sent a broken Content-Type header (${proto})`);
  }

  /** X-HgProto-1 value: sent on every request after the handshake. */
  protoCaps(): string {
    const params = new Set<string>(['partial-pull']);
    const media = this.caps.mediaTypes();
    if (media.length) params.add('0.1');
    if (media.includes('0.2tx')) {
      params.add('0.2');
      if (this.caps.has('compression')) params.add(`comp=${CLIENT_WIRE_ENGINES.join(',')}`);
    }
    return [...params].sort(byteCompare).join(' ');
  }

  /** makev1commandrequest */
  private buildRequest(
    cmd: string,
    args: Record<string, string>,
  ): { url: string; qs: string; method: 'GET' | 'POST'; headers: Record<string, string>; body?: Buffer } {
    const headers: Record<string, string> = {};
    const pairs = sortedPairs(args);
    let queryArgs: [string, string][] = [];
    let body: Buffer | undefined;
    let headerSize = 0;
    if (this.caps.has('httppostargs') && pairs.length) {
      const str = urlencode(pairs);
      body = Buffer.from(str, 'latin1');
      headers['X-HgArgs-Post'] = String(body.length);
      headers['Content-Type'] = 'application/mercurial-0.1';
    } else if (pairs.length) {
      headerSize = this.caps.httpHeaderLimit();
      if (headerSize > 0) {
        for (const [h, v] of encodeValueInHeaders(urlencode(pairs), 'X-HgArg', headerSize)) headers[h] = v;
      } else {
        queryArgs = pairs;
      }
    }
    for (const [h, v] of encodeValueInHeaders(this.protoCaps(), 'X-HgProto', headerSize || 1024))
      headers[h] = v;
    const vary = Object.keys(headers)
      .filter((h) => h.toLowerCase().startsWith('x-hg'))
      .sort(byteCompare);
    if (vary.length) headers.Vary = vary.join(',');
    const qs = `?${urlencode([['cmd', cmd], ...queryArgs])}`;
    return { url: `${this.url}${qs}`, qs, method: body ? 'POST' : 'GET', headers, ...(body ? { body } : {}) };
  }

  /** _callstream: the decoded response body of one command. */
  async callStream(
    cmd: string,
    args: Record<string, string> = {},
    compressible = false,
    readAheadBytes = 0,
  ): Promise<PeerResponse> {
    const r = this.buildRequest(cmd, args);
    this.log?.(`sending ${cmd} command`);
    const res = await this.session.request(r.url, {
      method: r.method,
      headers: r.headers,
      ...(r.body ? { body: r.body } : {}),
    });
    const parsed = await HttpPeer.checkResponse(res, this.url, compressible, readAheadBytes);
    const moved = HttpPeer.stripQuery(res.url, r.qs);
    if (!moved.qsDropped && moved.base !== this.url) {
      this.log?.(`real URL is ${redactUrl(moved.base)}`);
      this.url = moved.base;
    }
    return parsed;
  }
}

function oneLine(s: string): string {
  return s.replace(/\s+/g, ' ').trim().slice(0, 200);
}
