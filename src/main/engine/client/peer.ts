// A remote repository as the wire protocol v1 client sees it, independent of the transport
// (wireprotov1peer.wirepeer): its capabilities, one command with arguments (a small reply read
// whole, or a streamed reply), batch, and the commands a clone or pull uses on top of those.
// HttpPeer (http-peer.ts) and SshPeer (ssh-peer.ts) implement the transport part.

import { SluiceError } from '../errors';
import type { Capabilities } from '../protocol/capabilities';
import {
  byteCompare,
  decodeKeys,
  decodeNodeList,
  encodeBatchCommands,
  encodeNodeList,
  latin1,
  unescapeBatchArg,
  unquote,
} from '../protocol/wire-encoding';

/** Largest plain (non-stream) command response Sluice reads into memory. */
const SMALL_RESPONSE_LIMIT = 64 << 20;

export type GetbundleArgs = {
  heads?: string[];
  common?: string[];
  bundlecaps?: string[];
  listkeys?: string[];
  bookmarks?: boolean;
  phases?: boolean;
  cg?: boolean;
  cbattempted?: boolean;
  stream?: boolean;
  obsmarkers?: boolean;
};

/** wireprotov1peer.getbundle: the argument encodings of wireprototypes.GETBUNDLE_ARGUMENTS. */
export function encodeGetbundleArgs(a: GetbundleArgs): Record<string, string> {
  const out: Record<string, string> = {};
  const bool = (b: boolean): string => (b ? '1' : '0');
  if (a.heads) out.heads = encodeNodeList(a.heads);
  if (a.common) out.common = encodeNodeList(a.common);
  if (a.bundlecaps) out.bundlecaps = [...a.bundlecaps].sort(byteCompare).join(',');
  if (a.listkeys) out.listkeys = a.listkeys.join(',');
  for (const k of ['bookmarks', 'phases', 'cg', 'cbattempted', 'stream', 'obsmarkers'] as const) {
    if (a[k] !== undefined) out[k] = bool(a[k]!);
  }
  return out;
}

export interface PeerResponse {
  /** `0.1` or `0.2` over HTTP; `ssh` over ssh (never compressed there) */
  mediaType: string;
  /** wire compression engine the body was decoded from */
  engine: string;
  /** decoded body */
  body: AsyncIterable<Uint8Array>;
  /** gives up the rest of the body (the transport may have to close the connection) */
  discard(): void;
}

export async function readSmall(src: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Buffer[] = [];
  let n = 0;
  for await (const c of src) {
    n += c.length;
    if (n > SMALL_RESPONSE_LIMIT)
      throw new SluiceError('LIMIT', `response larger than ${SMALL_RESPONSE_LIMIT} bytes`);
    parts.push(Buffer.from(c.buffer, c.byteOffset, c.byteLength));
  }
  return Buffer.concat(parts, n);
}

export abstract class WirePeer {
  /** where the repository is, safe to show and to record as the clone's default path */
  abstract readonly url: string;
  abstract readonly caps: Capabilities;
  /** commands sent so far (HTTP: requests made by the session, downloads included) */
  abstract readonly requests: number;

  /**
   * _callstream: the decoded reply of one command. `compressible`: the server may compress it
   * (a streamres over HTTP); replies are never compressed over ssh.
   */
  /**
   * One command's streamed reply. `readAhead`: bytes of the reply the transport may read ahead
   * of the consumer (client/read-ahead.ts; the HTTP transport does, before decompression).
   */
  abstract callStream(
    cmd: string,
    args?: Record<string, string>,
    compressible?: boolean,
    readAhead?: number,
  ): Promise<PeerResponse>;

  /** Ends the connection (ssh: the child process); idempotent. */
  abstract close(): Promise<void>;

  capable(name: string): string | undefined {
    return this.caps.get(name);
  }

  /** _call: a small response read whole, as a latin1 byte string. */
  async call(cmd: string, args: Record<string, string> = {}): Promise<string> {
    const r = await this.callStream(cmd, args);
    return latin1(await readSmall(r.body));
  }

  /** _submitbatch: results in order, unescaped. */
  async batch(cmds: { op: string; args: Record<string, string> }[]): Promise<string[]> {
    if (!this.caps.has('batch')) {
      const out: string[] = [];
      for (const c of cmds) out.push(await this.call(c.op, c.args));
      return out;
    }
    const raw = await this.call('batch', { cmds: encodeBatchCommands(cmds) });
    const results = raw.split(';').map(unescapeBatchArg);
    if (results.length !== cmds.length) {
      throw new SluiceError('PROTOCOL', `batch: expected ${cmds.length} results, got ${results.length}`);
    }
    return results;
  }

  static decodeHeads(d: string): string[] {
    if (!d.endsWith('\n'))
      throw new SluiceError('PROTOCOL', `unexpected response to heads: ${JSON.stringify(d.slice(0, 80))}`);
    return decodeNodeList(d.slice(0, -1), 'heads');
  }

  static decodeKnown(d: string, count: number): boolean[] {
    if (d.length !== count || /[^01]/.test(d))
      throw new SluiceError('PROTOCOL', `unexpected response to known: ${JSON.stringify(d.slice(0, 80))}`);
    return [...d].map((c) => c === '1');
  }

  /** `heads ;known nodes=` in one batch, as setdiscovery does before a clone. */
  async headsAndKnown(nodes: string[] = []): Promise<{ heads: string[]; known: boolean[] }> {
    const [h, k] = await this.batch([
      { op: 'heads', args: {} },
      { op: 'known', args: { nodes: encodeNodeList(nodes) } },
    ]);
    return { heads: WirePeer.decodeHeads(h!), known: WirePeer.decodeKnown(k!, nodes.length) };
  }

  async heads(): Promise<string[]> {
    return WirePeer.decodeHeads(await this.call('heads'));
  }

  async branchmap(): Promise<Map<string, string[]>> {
    const d = await this.call('branchmap');
    const out = new Map<string, string[]>();
    for (const line of d.split('\n')) {
      if (!line) continue;
      const sp = line.indexOf(' ');
      if (sp < 0)
        throw new SluiceError(
          'PROTOCOL',
          `unexpected response to branchmap: ${JSON.stringify(line.slice(0, 80))}`,
        );
      out.set(unquote(line.slice(0, sp)), decodeNodeList(line.slice(sp + 1), 'branchmap'));
    }
    return out;
  }

  async listkeys(namespace: string): Promise<Map<string, string>> {
    if (!this.caps.has('pushkey')) return new Map();
    return decodeKeys(await this.call('listkeys', { namespace }));
  }

  /**
   * wireprotov1peer.lookup: the server resolves `key` as `hg update` would (revsymbol); its
   * answer is `1 NODE` or `0 MESSAGE` (hg's RepoLookupError text, e.g. `unknown revision 'x'`).
   */
  async lookup(key: string): Promise<{ node: string } | { error: string }> {
    const d = (await this.call('lookup', { key })).replace(/\n$/, '');
    const ok = d.startsWith('1 ');
    if (!ok && !d.startsWith('0 '))
      throw new SluiceError('PROTOCOL', `unexpected response to lookup: ${JSON.stringify(d.slice(0, 80))}`);
    const rest = d.slice(2);
    if (!ok) return { error: rest.slice(0, 500) };
    if (!/^[0-9a-f]{40}$/.test(rest))
      throw new SluiceError('PROTOCOL', `unexpected node in lookup: ${JSON.stringify(rest.slice(0, 80))}`);
    return { node: rest };
  }

  async clonebundles(): Promise<string> {
    return this.call('clonebundles');
  }

  /** stream_out: never compressed (streamreslegacy). */
  async streamOut(): Promise<PeerResponse> {
    return this.callStream('stream_out');
  }

  async getbundle(args: GetbundleArgs, opts: { readAhead?: number } = {}): Promise<PeerResponse> {
    if (!this.caps.has('getbundle'))
      throw new SluiceError('PROTOCOL', 'the server does not support getbundle');
    return this.callStream('getbundle', encodeGetbundleArgs(args), true, opts.readAhead);
  }
}
