// The wire-protocol commands a Sluice server answers (wireprotov1server.py), independent of the
// transport: a table from command name to a handler that takes the decoded arguments and returns
// a response that is bytes, a stream, or an out-of-band error (wireprototypes.bytesresponse,
// streamres, streamreslegacy, ooberror). The HTTP server (server.ts) and the ssh stdio server
// (ssh-server.ts) decode arguments their own way and render these responses their own way.
//
// Read-only: stream clones (v2 through getbundle: stream2 + bookmarks + listkeys [+ phase-heads];
// v1 through stream_out plus the follow-up getbundle for phases and bookmarks) and pulls
// (getbundle with common/heads: a changegroup part, see getbundle-changegroup.ts).

import type { Bundle2OutPart } from '../../format/bundle2';
import { stream2Params } from '../../format/stream2';
import type { WireCommandName } from '../../protocol/command-args';
import { bundle2Reply, bundle2ReplyLength, type ReplyPart } from './bundle2-reply';
import { branchMapOf } from './branchmap';
import { lookupByName } from './lookup-name';
import { changegroupPart } from './getbundle-changegroup';
import { decodeBundle2Caps, encodeBundle2Caps, serverBundle2Caps } from '../../protocol/capabilities';
import type { RepoSnapshot } from './repo-state';
import { encodeMarkersV1, listkeysObsolete, relevantMarkers, sortMarkers } from '../../repo/obsstore';
import type { ServedCloneBundles } from './served-clone-bundles';
import {
  BATCH_MAX_COMMANDS,
  BATCH_MAX_REPLY,
  BETWEEN_MAX_PAIRS,
  GETBUNDLE_MAX_LIST,
  REQUEST_ARGS_COUNT_MAX,
} from './server-limits';
import { StoreLocked, serverStream2, serverStreamOut } from './stream-bodies';
import {
  NULL_HEX,
  decodeNodeList,
  encodeKeys,
  escapeBatchArg,
  isHexNode,
  quote,
  unescapeBatchArg,
  unquote,
} from '../../protocol/wire-encoding';

// What one request may ask for is bounded (server-limits.ts): batch, between, getbundle lists.
const BUNDLE2_REQUIRED =
  'incompatible Mercurial client; bundle2 required\n(see https://www.mercurial-scm.org/wiki/IncompatibleClient)\n';
const SERVED = 'sluice serve answers getbundle pulls and stream clones only';

/** One command invocation, as the transport decoded it. */
export interface CommandCall {
  snap: RepoSnapshot;
  args: Map<string, string>;
  /** fires when the client goes away before the response ended */
  signal: AbortSignal;
  /** capabilities the transport adds (wireprotoserver's proto.addcapabilities) */
  transportCaps: readonly string[];
  /** the URL the client reached the server by; served clone bundle files are listed under it (HTTP) */
  baseUrl?: string;
}

export interface CommandEnv {
  /** bundle2 payload chunk size (32768; 4096 reproduces pre-4.5 hg) */
  chunkSize: number;
  cloneBundles: ServedCloneBundles;
}

/** bytesresponse: a small reply the transport sends whole */
export interface BytesResponse {
  type: 'bytes';
  data: Buffer;
}

/** streamres: a reply the transport may compress (HTTP 0.2 negotiation); ssh sends it as is */
export interface StreamResponse {
  type: 'stream';
  body: AsyncIterable<Uint8Array>;
  /** exact size of `body` when known up front */
  length: number | null;
  /** the body is already compressed or incompressible (a stream clone): do not compress it */
  preferUncompressed: boolean;
  /** the producer failure that interrupted the reply in-band (bundle2 error part), once it happened */
  interruption(): Error | null;
}

/** streamreslegacy: stream_out's body, never compressed */
export interface LegacyStreamResponse {
  type: 'stream-legacy';
  body: AsyncIterable<Uint8Array>;
  length: number;
}

/** ooberror: HTTP sends it as application/hg-error, ssh on stderr */
export interface ErrorResponse {
  type: 'error';
  /** newline-terminated text */
  message: string;
}

export type CommandResponse = BytesResponse | StreamResponse | LegacyStreamResponse | ErrorResponse;

/** A malformed request (missing argument, bad node list): HTTP answers 400. */
export class BadRequest extends Error {}

/** An Abort raised inside a command: becomes an error:abort part (bundle2) or an out-of-band error. */
export class CommandAbort extends Error {
  constructor(
    message: string,
    readonly hint?: string,
  ) {
    super(message);
  }
}

interface WireCommand {
  /** answers with bytes and may run inside `batch` */
  batchable?: boolean;
  run(env: CommandEnv, call: CommandCall, name: string): Promise<CommandResponse>;
}

function bytes(text: string | Buffer): BytesResponse {
  return { type: 'bytes', data: typeof text === 'string' ? Buffer.from(text, 'latin1') : text };
}

function oob(message: string): ErrorResponse {
  return { type: 'error', message };
}

function need(call: CommandCall, cmd: string, k: string): string {
  const v = call.args.get(k);
  if (v === undefined) throw new BadRequest(`missing argument ${k} for ${cmd}`);
  return v;
}

function decodeNodesOrBad(nodes: string): string[] {
  try {
    return decodeNodeList(nodes, 'nodes');
  } catch (e) {
    throw new BadRequest((e as Error).message);
  }
}

async function capabilities(env: CommandEnv, call: CommandCall): Promise<string> {
  const snap = call.snap;
  const caps = ['batch', 'getbundle', 'known', 'lookup', 'pushkey', ...call.transportCaps];
  if (await branchMapOf(snap)) caps.push('branchmap');
  if (snap.streamAllowed) {
    if (snap.settings.preferUncompressed) caps.push('stream-preferred');
    const reqs = snap.streamRequirements;
    if (reqs.every((x) => x === 'revlogv1')) caps.push('stream');
    else caps.push(`streamreqs=${reqs.join(',')}`);
  }
  // bundle2.getrepocaps checks only the two knobs, not secret changesets (quirk kept)
  const v2 = snap.settings.uncompressed && snap.settings.bundle2Stream;
  caps.push(`bundle2=${quote(encodeBundle2Caps(serverBundle2Caps(v2, snap.settings.obsExchange)))}`);
  if (await env.cloneBundles.advertised(call.baseUrl !== undefined)) caps.push('clonebundles');
  return [...new Set(caps)].sort().join(' ');
}

function listkeyPairs(snap: RepoSnapshot, namespace: string): [string, string][] {
  switch (namespace) {
    case 'bookmarks':
      return snap.servedBookmarks();
    case 'phases':
      return snap.listPhases();
    case 'obsolete':
      return listkeysObsolete(snap.obsolescence.markers);
    case 'namespaces': {
      // pushkey._nslist: `obsolete` only where markers are exchanged
      const names: [string, string][] = [
        ['bookmarks', ''],
        ['namespaces', ''],
        ['phases', ''],
      ];
      if (snap.settings.obsExchange) names.push(['obsolete', '']);
      return names;
    }
    default:
      return [];
  }
}

/** the listkeys command sorts (wireprotov1server.listkeys); the bundle2 part does not */
function listkeys(snap: RepoSnapshot, namespace: string, sorted = true): string {
  const keys = listkeyPairs(snap, namespace);
  return encodeKeys(sorted ? keys.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)) : keys);
}

/**
 * repo.heads(): an empty served view has the null node as its one head (hg's changelog.headrevs),
 * which hg's discovery reads as "nothing to pull"; an empty answer made it ask for a changegroup.
 */
function servedHeadHexes(snap: RepoSnapshot): string[] {
  const heads = snap.headRevs();
  return heads.length ? heads.map((r) => snap.hex(r)) : [NULL_HEX];
}

/** The visible rev `key` names; -1 for the null revision (`tip` of an empty view, the null node). */
function lookup(snap: RepoSnapshot, key: string): number | undefined {
  if (key === 'tip') return snap.headRevs()[0] ?? -1; // rev descending: the highest visible rev
  if (key === NULL_HEX) return -1;
  if (isHexNode(key)) return snap.revOfHex(key);
  for (const [name, hex] of snap.servedBookmarks()) if (name === key) return snap.revOfHex(hex);
  if (/^\d+$/.test(key)) {
    const r = Number(key);
    if (r < snap.graph.length && snap.visible(r)) return r;
  }
  // an unambiguous node prefix (clone -r 8fbb0e6e)
  if (/^[0-9a-f]{1,39}$/.test(key)) return snap.revOfPrefix(key);
  return undefined;
}

/** localrepo.between: first-parent nodes at distances 1, 2, 4, … below `top`, stopping at `bottom` */
function between(snap: RepoSnapshot, pairs: string): string {
  const out: string[] = [];
  if (countOf(pairs, ' ', BETWEEN_MAX_PAIRS) >= BETWEEN_MAX_PAIRS)
    throw new CommandAbort(`too many between pairs (at most ${BETWEEN_MAX_PAIRS} per call)`);
  for (const pair of pairs.split(' ')) {
    if (!pair) continue;
    const [top, bottom, ...rest] = pair.split('-');
    if (top === undefined || bottom === undefined || rest.length || !isHexNode(top) || !isHexNode(bottom))
      throw new BadRequest('malformed between pair');
    const found: string[] = [];
    let rev = top === NULL_HEX ? -1 : snap.revOfHex(top);
    if (rev === undefined) throw new CommandAbort(`unknown revision '${top}'`);
    for (let i = 0, f = 1; rev >= 0 && snap.hex(rev) !== bottom; i++) {
      if (i === f) {
        found.push(snap.hex(rev));
        f *= 2;
      }
      rev = snap.graph.p1[rev]!;
    }
    out.push(`${found.join(' ')}\n`);
  }
  return out.join('');
}

async function getbundleParts(
  call: CommandCall,
  /** the reply's bundle2 frame size */
  chunkSize: number,
): Promise<{ parts: ReplyPart[]; preferUncompressed: boolean }> {
  const a = call.args;
  const bool = (k: string, dflt: boolean): boolean => (a.has(k) ? a.get(k) !== '0' && a.get(k) !== '' : dflt);
  for (const k of ['bundlecaps', 'listkeys'])
    if (countOf(a.get(k) ?? '', ',', GETBUNDLE_MAX_LIST) >= GETBUNDLE_MAX_LIST)
      throw new CommandAbort(`too many ${k} entries (at most ${GETBUNDLE_MAX_LIST})`);
  const bundlecaps = new Set((a.get('bundlecaps') ?? '').split(','));
  const b2caps = new Map<string, string[]>();
  for (const c of bundlecaps)
    if (c.startsWith('bundle2='))
      for (const [k, v] of decodeBundle2Caps(unquote(c.slice(8)))) b2caps.set(k, v);
  const snap = call.snap;
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
    const s = await serverStream2(snap, call.signal, includeObsmarkers);
    parts.push({
      type: 'stream2',
      mandatoryParams: stream2Params(s.files, s.bytes, snap.streamRequirements),
      data: s.payload,
      payloadLength: s.payloadLength,
    });
    preferUncompressed = true;
  }
  // _getbundlechangegrouppart: no changegroup for a client without bundle2 caps (quirk kept)
  if (bool('cg', true) && b2caps.size) {
    const cg = changegroupPart(
      snap,
      {
        heads: a.has('heads') ? decodeNodesOrBad(a.get('heads')!) : null,
        common: a.has('common') ? decodeNodesOrBad(a.get('common')!) : [],
        b2caps,
      },
      call.signal,
      chunkSize,
    );
    if ('abort' in cg) throw new CommandAbort(cg.abort, cg.hint);
    if (cg.part) parts.push(cg.part);
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
  if (bool('obsmarkers', false)) {
    // exchange._getbundleobsmarkerpart: the markers relevant to ::heads, sorted, in the newest
    // format both sides know (bundle2.buildobsmarkerspart); none: no part
    const headRevs = a.has('heads')
      ? decodeNodesOrBad(a.get('heads')!)
          .map((h) => snap.revOfHex(h))
          .filter((x): x is number => x !== undefined)
      : snap.headRevs();
    const subset = snap.graph.ancestors(headRevs);
    const nodes: string[] = [];
    for (let r = 0; r < subset.length; r++) if (subset[r]) nodes.push(snap.graph.nodes[r]!);
    const markers = relevantMarkers(snap.obsolescence.markers, nodes);
    if (markers.length) {
      if (!(b2caps.get('obsmarkers') ?? []).includes('V1'))
        throw new CommandAbort('bundler does not support common obsmarker format');
      parts.push({ type: 'obsmarkers', data: encodeMarkersV1(sortMarkers(markers)) });
    }
  }
  if (bool('phases', false)) {
    if (!(b2caps.get('phases') ?? []).includes('heads'))
      throw new CommandAbort('no common phases exchange method');
    const headsArg = a.has('heads') ? decodeNodesOrBad(a.get('heads')!) : null;
    const headRevs = headsArg
      ? headsArg.map((h) => snap.revOfHex(h)).filter((x): x is number => x !== undefined)
      : snap.headRevs();
    const entries: Buffer[] = [];
    for (const [phase, revs] of snap.phaseHeads(headRevs)) {
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

/** wireprotov1server.getbundle: a bundle2 reply; an Abort becomes an error:abort part. */
async function getbundle(env: CommandEnv, call: CommandCall): Promise<CommandResponse> {
  const caps = (call.args.get('bundlecaps') ?? '').split(',');
  if (!caps.some((c) => c.startsWith('HG2'))) return oob(BUNDLE2_REQUIRED);
  let built: Awaited<ReturnType<typeof getbundleParts>>;
  try {
    built = await getbundleParts(call, env.chunkSize);
  } catch (e) {
    if (!(e instanceof CommandAbort)) throw e;
    const abort: Bundle2OutPart = {
      type: 'error:abort',
      mandatoryParams: [['message', e.message]],
      ...(e.hint ? { advisoryParams: [['hint', e.hint]] } : {}),
    };
    return {
      type: 'stream',
      body: bundle2Reply([abort], env.chunkSize),
      length: null,
      preferUncompressed: true,
      interruption: () => null,
    };
  }
  let interrupted: Error | null = null;
  return {
    type: 'stream',
    body: bundle2Reply(built.parts, env.chunkSize, (e) => {
      interrupted = e instanceof Error ? e : new Error(String(e));
    }),
    length: bundle2ReplyLength(built.parts, env.chunkSize),
    preferUncompressed: built.preferUncompressed,
    interruption: () => interrupted,
  };
}

/** wireprotov1server.stream: `1\n` refused, `2\n` store locked, else the v1 stream. */
async function streamOut(call: CommandCall): Promise<CommandResponse> {
  if (!call.snap.streamAllowed) return bytes('1\n');
  try {
    const out = await serverStreamOut(call.snap, call.signal);
    return { type: 'stream-legacy', body: out.body, length: out.length };
  } catch (e) {
    if (e instanceof StoreLocked) return bytes('2\n');
    throw e;
  }
}

const notSupported: WireCommand = {
  run: async (_env, _call, name) => oob(`sluice serve does not support the ${name} command; ${SERVED}\n`),
};
const readOnly: WireCommand = {
  run: async (_env, _call, name) => oob(`sluice serve is read-only: ${name} is not supported\n`),
};

/** The dispatch table (wireprotov1server's @wireprotocommand declarations; arguments: COMMAND_ARGS). */
export const WIRE_COMMANDS: Readonly<Record<WireCommandName, WireCommand>> = {
  capabilities: { batchable: true, run: async (env, call) => bytes(await capabilities(env, call)) },
  hello: {
    run: async (env, call) => bytes(`capabilities: ${await capabilities(env, call)}\n`),
  },
  between: {
    run: async (_env, call) => bytes(between(call.snap, need(call, 'between', 'pairs'))),
  },
  heads: {
    batchable: true,
    run: async (_env, call) => bytes(servedHeadHexes(call.snap).join(' ') + '\n'),
  },
  known: {
    batchable: true,
    run: async (_env, call) =>
      bytes(
        decodeNodesOrBad(need(call, 'known', 'nodes'))
          .map((n) => (call.snap.revOfHex(n) !== undefined ? '1' : '0'))
          .join(''),
      ),
  },
  branchmap: {
    batchable: true,
    run: async (_env, call) => {
      const map = await branchMapOf(call.snap);
      if (!map) throw new CommandAbort('sluice serve cannot read branch names of this repository');
      return bytes([...map].map(([name, nodes]) => `${quote(name)} ${nodes.join(' ')}`).join('\n'));
    },
  },
  listkeys: {
    batchable: true,
    run: async (_env, call) => bytes(listkeys(call.snap, need(call, 'listkeys', 'namespace'))),
  },
  clonebundles: {
    batchable: true,
    run: async (env, call) => bytes(await env.cloneBundles.manifestText(call.baseUrl)),
  },
  clonebundles_manifest: {
    batchable: true,
    run: async (env, call) => bytes(await env.cloneBundles.manifestText(call.baseUrl)),
  },
  lookup: {
    batchable: true,
    run: async (_env, call) => {
      const key = need(call, 'lookup', 'key');
      const rev = lookup(call.snap, key);
      if (rev !== undefined) return bytes(`1 ${rev < 0 ? NULL_HEX : call.snap.hex(rev)}\n`);
      const named = await lookupByName(call.snap, key);
      return bytes(named !== undefined ? `1 ${named}\n` : `0 unknown revision '${key}'\n`);
    },
  },
  batch: { run: async (env, call) => bytes(await batch(env, call)) },
  stream_out: { run: async (_env, call) => streamOut(call) },
  getbundle: { run: getbundle },
  unbundle: readOnly,
  pushkey: readOnly,
  branches: notSupported,
  changegroup: notSupported,
  changegroupsubset: notSupported,
  debugwireargs: notSupported,
  // the client's protocol caps; hg keeps them for the connection, Sluice's replies do not depend on them
  protocaps: { run: async () => bytes('OK') },
};

/** wireprotov1server.batch: `op args;op args`, results escaped and joined with `;`. */
async function batch(env: CommandEnv, call: CommandCall): Promise<string> {
  const out: string[] = [];
  const cmds = call.args.get('cmds') ?? '';
  if (countOf(cmds, ';', BATCH_MAX_COMMANDS) >= BATCH_MAX_COMMANDS)
    throw new CommandAbort(`too many commands in one batch (at most ${BATCH_MAX_COMMANDS})`);
  let size = 0;
  for (const pair of cmds.split(';')) {
    const sp = pair.indexOf(' ');
    const op = sp < 0 ? pair : pair.slice(0, sp);
    const vals = new Map<string, string>();
    const argText = sp < 0 ? '' : pair.slice(sp + 1);
    if (countOf(argText, ',', REQUEST_ARGS_COUNT_MAX) >= REQUEST_ARGS_COUNT_MAX)
      throw new CommandAbort(`too many arguments to ${op} in a batch (at most ${REQUEST_ARGS_COUNT_MAX})`);
    for (const a of argText.split(',')) {
      if (!a) continue;
      const eq = a.indexOf('=');
      if (eq < 0) throw new BadRequest('malformed batch argument');
      vals.set(unescapeBatchArg(a.slice(0, eq)), unescapeBatchArg(a.slice(eq + 1)));
    }
    const cmd = wireCommand(op);
    if (!cmd?.batchable)
      throw new CommandAbort(
        `sluice serve does not support the ${op} command (read-only: getbundle pulls and stream clones)`,
      );
    const r = await cmd.run(env, { ...call, args: vals }, op);
    if (r.type !== 'bytes') throw new CommandAbort(`${op} cannot run in a batch`);
    const reply = escapeBatchArg(r.data.toString('latin1'));
    size += reply.length + 1;
    if (size > BATCH_MAX_REPLY)
      throw new CommandAbort(`batch reply larger than ${BATCH_MAX_REPLY} bytes: ask in smaller batches`);
    out.push(reply);
  }
  return out.join(';');
}

/** Occurrences of `sep` in `s`, counted up to `stop` (before anything is split). */
function countOf(s: string, sep: string, stop: number): number {
  let n = 0;
  for (let i = s.indexOf(sep); i >= 0 && n < stop; i = s.indexOf(sep, i + 1)) n++;
  return n;
}

/** The table entry for `name`, or undefined when there is no such command. */
export function wireCommand(name: string): WireCommand | undefined {
  return Object.hasOwn(WIRE_COMMANDS, name) ? WIRE_COMMANDS[name as WireCommandName] : undefined;
}

/**
 * Runs one command. Abort raised outside getbundle becomes an out-of-band error (HTTP
 * application/hg-error); BadRequest is left to the transport.
 */
export async function dispatchCommand(
  env: CommandEnv,
  name: string,
  call: CommandCall,
): Promise<CommandResponse | undefined> {
  const cmd = wireCommand(name);
  if (!cmd) return undefined;
  try {
    return await cmd.run(env, call, name);
  } catch (e) {
    if (e instanceof CommandAbort) return oob(`${e.message}\n${e.hint ? `(${e.hint})\n` : ''}`);
    throw e;
  }
}
