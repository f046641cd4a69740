// Byte-level encodings of hg's HTTP wire protocol v1: Python's urlencode/parse_qs (quote_plus),
// urlreq.quote/unquote, the batch escaping (wireprototypes.py `escapebatcharg`) and node lists.
// All strings here are latin1 byte strings (one char = one byte), like every engine-internal name.

import { SluiceError } from '../errors';

const HEX = '0123456789ABCDEF';

function isUnreserved(c: number, safe: string): boolean {
  return (
    (c >= 0x30 && c <= 0x39) ||
    (c >= 0x41 && c <= 0x5a) ||
    (c >= 0x61 && c <= 0x7a) ||
    c === 0x5f || // _
    c === 0x2e || // .
    c === 0x2d || // -
    c === 0x7e || // ~ (unreserved since Python 3.7)
    safe.includes(String.fromCharCode(c))
  );
}

/** urllib.parse.quote(s, safe) on a latin1 byte string; hg's urlreq.quote uses safe='/'. */
export function quote(s: string, safe = '/'): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i) & 0xff;
    out += isUnreserved(c, safe) ? s[i] : '%' + HEX[c >> 4] + HEX[c & 15];
  }
  return out;
}

/** urllib.parse.quote_plus: like quote with safe='' but space becomes '+'. */
export function quotePlus(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i) & 0xff;
    if (c === 0x20) out += '+';
    else out += isUnreserved(c, '') ? s[i] : '%' + HEX[c >> 4] + HEX[c & 15];
  }
  return out;
}

/** urllib.parse.unquote on bytes: invalid escapes stay as they are (Python does the same). */
export function unquote(s: string): string {
  if (!s.includes('%')) return s;
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const ch = s[i]!;
    if (ch === '%' && /^[0-9a-fA-F]{2}$/.test(s.slice(i + 1, i + 3))) {
      out += String.fromCharCode(parseInt(s.slice(i + 1, i + 3), 16));
      i += 2;
    } else out += ch;
  }
  return out;
}

export function unquotePlus(s: string): string {
  return unquote(s.replace(/\+/g, ' '));
}

/** urlencode(sorted(args.items())) as httppeer.makev1commandrequest does. */
export function urlencode(pairs: [string, string][]): string {
  return pairs.map(([k, v]) => `${quotePlus(k)}=${quotePlus(v)}`).join('&');
}

export function sortedPairs(args: Record<string, string>): [string, string][] {
  return Object.keys(args)
    .sort(byteCompare)
    .map((k) => [k, args[k]!] as [string, string]);
}

export function byteCompare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** parse_qs(keep_blank_values=True): every value per key, in order (hg's getargs takes the first). */
export function parseQs(qs: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  if (!qs) return out;
  for (const piece of qs.split('&')) {
    if (!piece) continue;
    const eq = piece.indexOf('=');
    const k = unquotePlus(eq < 0 ? piece : piece.slice(0, eq));
    const v = eq < 0 ? '' : unquotePlus(piece.slice(eq + 1));
    const list = out.get(k);
    if (list) list.push(v);
    else out.set(k, [v]);
  }
  return out;
}

/** wireprototypes.escapebatcharg */
export function escapeBatchArg(s: string): string {
  return s.replace(/:/g, ':c').replace(/,/g, ':o').replace(/;/g, ':s').replace(/=/g, ':e');
}

/** wireprototypes.unescapebatcharg */
export function unescapeBatchArg(s: string): string {
  return s.replace(/:e/g, '=').replace(/:s/g, ';').replace(/:o/g, ',').replace(/:c/g, ':');
}

/** wireprotov1peer.encodebatchcmds */
export function encodeBatchCommands(cmds: { op: string; args: Record<string, string> }[]): string {
  return cmds
    .map(({ op, args }) => {
      const a = Object.entries(args)
        .map(([k, v]) => `${escapeBatchArg(k)}=${escapeBatchArg(v)}`)
        .join(',');
      return `${op} ${a}`;
    })
    .join(';');
}

/** Node ids as 40 lowercase hex chars (binary nodes are 20-byte latin1 strings). */
export const NULL_HEX = '0'.repeat(40);

export function isHexNode(s: string): boolean {
  return s.length === 40 && /^[0-9a-f]{40}$/.test(s);
}

/** wireprototypes.decodelist: space-separated hex nodes; every one must be a full node. */
export function decodeNodeList(s: string, what: string): string[] {
  if (s === '') return [];
  const nodes = s.split(' ');
  for (const n of nodes) {
    if (!isHexNode(n)) {
      throw new SluiceError('PROTOCOL', `${what}: not a node id: ${JSON.stringify(n.slice(0, 60))}`);
    }
  }
  return nodes;
}

export function encodeNodeList(nodes: string[]): string {
  return nodes.join(' ');
}

/** pushkey.decodekeys: `key\tvalue` lines. */
export function decodeKeys(data: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of data.split(/\r\n|\n|\r/)) {
    if (!line) continue;
    const parts = line.split('\t');
    if (parts.length !== 2)
      throw new SluiceError('PROTOCOL', `malformed listkeys line: ${JSON.stringify(line.slice(0, 80))}`);
    out.set(parts[0]!, parts[1]!);
  }
  return out;
}

/** pushkey.encodekeys: `key\tvalue` joined by `\n`, no trailing newline. */
export function encodeKeys(keys: [string, string][]): string {
  return keys.map(([k, v]) => `${k}\t${v}`).join('\n');
}

export function latin1(buf: Uint8Array): string {
  return Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength).toString('latin1');
}

export function fromLatin1(s: string): Buffer {
  return Buffer.from(s, 'latin1');
}
