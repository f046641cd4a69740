// Server capabilities (wireprotov1server.py `_capabilities`) and bundle2 capability blobs
// (bundle2.py `encodecaps` / `decodecaps` / `getrepocaps`).

import { SluiceError } from '../errors';
import { quote, unquote, byteCompare } from './wire-encoding';

export class Capabilities {
  private readonly map = new Map<string, string | true>();

  constructor(readonly raw: string) {
    for (const token of raw.split(/\s+/)) {
      if (!token) continue;
      const eq = token.indexOf('=');
      if (eq < 0) this.map.set(token, true);
      else this.map.set(token.slice(0, eq), token.slice(eq + 1));
    }
  }

  has(name: string): boolean {
    return this.map.has(name);
  }

  /** value of `name=value`, '' for a bare capability, undefined when absent (peer.capable) */
  get(name: string): string | undefined {
    const v = this.map.get(name);
    return v === undefined ? undefined : v === true ? '' : v;
  }

  /**
   * Requirements the server's repository imposes on a clone or pull that Sluice cannot take:
   * `lfs-serve` means the repository requires lfs (hgext/lfs/wrapper._capabilities), so hg.clone
   * gives the clone the lfs requirement before any data moves, and the server sends only cg3
   * with REVIDX_EXTSTORED pointers.
   */
  refusedRemoteRequirements(): string[] {
    return this.has('lfs-serve') ? ['lfs'] : [];
  }

  names(): string[] {
    return [...this.map.keys()];
  }

  /** bundle2 caps of the peer (bundle2.bundle2caps) */
  bundle2(): Map<string, string[]> {
    const raw = this.get('bundle2');
    if (raw === undefined) return new Map();
    return decodeBundle2Caps(unquote(raw));
  }

  /** requirements a stream from this server carries: `stream` = {revlogv1}, `streamreqs=a,b` */
  streamRequirements(): string[] | null {
    const reqs = this.get('streamreqs');
    if (reqs !== undefined) return reqs.split(',').filter(Boolean);
    if (this.has('stream')) return ['revlogv1'];
    return null;
  }

  /** server compression engines in server order (`compression=zstd,zlib`) */
  compression(): string[] {
    const v = this.get('compression');
    return v ? v.split(',').map(unquote) : [];
  }

  httpHeaderLimit(): number {
    const v = this.get('httpheader');
    if (!v) return 0;
    const n = parseInt(v.split(',')[0]!, 10);
    return Number.isFinite(n) && n > 0 ? n : 0;
  }

  mediaTypes(): string[] {
    const v = this.get('httpmediatype');
    return v ? v.split(',') : [];
  }
}

/** Before anything is written: a server whose repository needs what Sluice lacks (lfs). */
export function refuseRemoteRequirements(caps: Capabilities): void {
  const refused = caps.refusedRemoteRequirements();
  if (refused.length)
    throw new SluiceError(
      'UNSUPPORTED_REQUIREMENTS',
      `the remote repository requires features unknown to Sluice: ${refused.join(', ')} (its files are stored outside the revlogs)`,
      { unsupported: refused },
    );
}

export function decodeBundle2Caps(blob: string): Map<string, string[]> {
  const caps = new Map<string, string[]>();
  for (const line of blob.split(/\r\n|\n|\r/)) {
    if (!line) continue;
    const eq = line.indexOf('=');
    if (eq < 0) caps.set(unquote(line), []);
    else
      caps.set(
        unquote(line.slice(0, eq)),
        line
          .slice(eq + 1)
          .split(',')
          .map(unquote),
      );
  }
  return caps;
}

export function encodeBundle2Caps(caps: Map<string, string[]>): string {
  return [...caps.keys()]
    .sort(byteCompare)
    .map((k) => {
      const vals = caps.get(k)!;
      const name = quote(k);
      return vals.length ? `${name}=${vals.map((v) => quote(v)).join(',')}` : name;
    })
    .join('\n');
}

/** bundle2.capabilities as 6.3.2 has them, plus what getrepocaps adds (changegroup versions). */
function baseBundle2Caps(): Map<string, string[]> {
  return new Map<string, string[]>([
    ['HG20', []],
    ['bookmarks', []],
    ['changegroup', ['01', '02']],
    ['digests', ['md5', 'sha1', 'sha512']],
    ['error', ['abort', 'unsupportedcontent', 'pushraced', 'pushkey']],
    ['hgtagsfnodes', []],
    ['listkeys', []],
    ['phases', ['heads']],
    ['pushkey', []],
    ['remote-changegroup', ['http', 'https']],
    ['stream', ['v2']],
  ]);
}

/**
 * What hg 6.3.2 sends as client bundle caps (exchange.caps20to10, role=client); with `obsmarkers`,
 * what it sends with evolution on (`obsmarkers=V0,V1`, bundle2.getrepocaps).
 */
export function clientBundleCaps(opts: { obsmarkers?: boolean } = {}): string[] {
  const caps = baseBundle2Caps();
  if (opts.obsmarkers) caps.set('obsmarkers', ['V0', 'V1']);
  return ['HG20', 'bundle2=' + quote(encodeBundle2Caps(caps))];
}

/**
 * A server's bundle2 caps (role=server): `checkheads=related` added, `stream` only when served,
 * `obsmarkers=V0,V1` with evolution's exchange enabled (bundle2.getrepocaps).
 */
export function serverBundle2Caps(streamV2: boolean, obsmarkers = false): Map<string, string[]> {
  const caps = baseBundle2Caps();
  caps.set('checkheads', ['related']);
  if (!streamV2) caps.delete('stream');
  if (obsmarkers) caps.set('obsmarkers', ['V0', 'V1']);
  return caps;
}
