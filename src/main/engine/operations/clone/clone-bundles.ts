// Clone bundles (bundlecaches.py: parseclonebundlesmanifest, parsebundlespec, isstreamclonespec,
// filterclonebundleentries; exchange.py _maybeapplyclonebundle); the download of the chosen bundle
// is bundle-download.ts.
//
// A stream clone takes stream specs: `none-packed1` and `<comp>-v2;stream=v2` (hg takes only
// `none` for v2; Sluice can apply compressed stream bundles too, so it accepts them). A pull clone
// takes changegroup specs (`gzip-v2`, `zstd-v2`, `bzip2-v2`, `none-v2`, `*-v1`), then pulls the rest.

import { totalmem } from 'node:os';
import { SluiceError } from '../../errors';
import { streamRequirementsProblem } from '../../store/requirements';
import { parseDigests, type Digest } from '../../downloads/digest';
import { unquote } from '../../protocol/wire-encoding';

export type ManifestEntry = Map<string, string>;

/** parseclonebundlesmanifest: `URL key=value…` per line, both sides percent-decoded once. */
export function parseCloneBundlesManifest(text: string): ManifestEntry[] {
  const out: ManifestEntry[] = [];
  for (const line of text.split(/\r\n|\n|\r/)) {
    const fields = line.split(/[ \t\f\v]+/).filter(Boolean);
    if (!fields.length) continue;
    const attrs: ManifestEntry = new Map([['URL', fields[0]!]]);
    for (const raw of fields.slice(1)) {
      const eq = raw.indexOf('=');
      if (eq < 0) continue; // hg would crash on this line; skip it
      attrs.set(unquote(raw.slice(0, eq)), unquote(raw.slice(eq + 1)));
    }
    out.push(attrs);
  }
  return out;
}

export interface BundleSpec {
  compression: 'none' | 'gzip' | 'bzip2' | 'zstd';
  version: 'v1' | 'v2' | 'packed1';
  params: Map<string, string>;
  /** stream clone bundle: packed1, or v2 with stream=v2 */
  stream: boolean;
}

const COMPRESSIONS = new Set(['none', 'gzip', 'bzip2', 'zstd']);

/** parsebundlespec(strict=True); throws MALFORMED (invalid) or UNSUPPORTED_COMPRESSION (unknown parts). */
export function parseBundleSpec(spec: string): BundleSpec {
  const semi = spec.indexOf(';');
  const pre = semi < 0 ? spec : spec.slice(0, semi);
  const dash = pre.indexOf('-');
  if (dash < 0)
    throw new SluiceError(
      'MALFORMED',
      `invalid bundle specification; must be prefixed with compression: ${spec}`,
    );
  const compression = pre.slice(0, dash);
  let version = pre.slice(dash + 1);
  if (!COMPRESSIONS.has(compression))
    throw new SluiceError('UNSUPPORTED_COMPRESSION', `${compression} compression is not supported`);
  if (version === 'bundle2') version = 'v2';
  if (version !== 'v1' && version !== 'v2' && version !== 'packed1') {
    throw new SluiceError('MALFORMED', `${version} is not a recognized bundle version`);
  }
  const params = new Map<string, string>();
  if (semi >= 0) {
    for (const p of spec.slice(semi + 1).split(';')) {
      const eq = p.indexOf('=');
      if (eq < 0)
        throw new SluiceError('MALFORMED', `invalid bundle specification: missing "=" in parameter: ${p}`);
      params.set(unquote(p.slice(0, eq)), unquote(p.slice(eq + 1)));
    }
  }
  if (version === 'v1' && compression === 'zstd') {
    throw new SluiceError(
      'UNSUPPORTED_COMPRESSION',
      'compression engine zstd is not supported on v1 bundles',
    );
  }
  const stream =
    version === 'packed1' ? compression === 'none' : version === 'v2' && params.get('stream') === 'v2';
  return { compression: compression as BundleSpec['compression'], version, params, stream };
}

/** util.sizetoint: `64MB`, `1.5 GB`, `1024` */
export function sizeToInt(s: string): number | null {
  const m = /^\s*([0-9.]+)\s*(kb|mb|gb|b)?\s*$/i.exec(s);
  if (!m) return null;
  const mult = { kb: 1 << 10, mb: 1 << 20, gb: 1 << 30, b: 1 } as const;
  return Math.floor(parseFloat(m[1]!) * (m[2] ? mult[m[2].toLowerCase() as keyof typeof mult] : 1));
}

/** clone bundle entries whose filtering is logged one by one */
const FILTER_LOGS = 100;

export interface CloneBundleChoice {
  url: string;
  spec: BundleSpec;
  entry: ManifestEntry;
  /** the DIGEST attribute's digests, checked once the bundle is downloaded */
  digests: Digest[];
}

/**
 * filterclonebundleentries for a stream clone, then the first entry (hg takes only the first
 * after sorting by ui.clonebundleprefers; Sluice prefers the requested stream version).
 */
export function chooseCloneBundle(
  entries: ManifestEntry[],
  want: 'auto' | 'v1' | 'v2' | 'changegroup',
  log?: (m: string) => void,
): CloneBundleChoice | null {
  const fits: CloneBundleChoice[] = [];
  // hg says why for every entry it filters out; a manifest of a million entries (or one URL of
  // megabytes) would be as many log events: the first FILTER_LOGS, URLs cut, then a count
  let filtered = 0;
  const cut = (t: string): string => (t.length > 200 ? `${t.slice(0, 200)}...` : t);
  const filter = (url: string, why: string): void => {
    if (++filtered <= FILTER_LOGS) log?.(`filtering ${cut(url)}${why.startsWith(':') ? '' : ' '}${cut(why)}`);
  };
  for (const entry of entries) {
    const url = entry.get('URL')!;
    const specText = entry.get('BUNDLESPEC');
    if (!specText) {
      filter(url, `because cannot determine if a stream clone bundle`);
      continue;
    }
    let spec: BundleSpec;
    try {
      spec = parseBundleSpec(specText);
    } catch (e) {
      filter(url, `because unsupported bundle spec: ${(e as Error).message}`);
      continue;
    }
    if (want === 'changegroup') {
      if (spec.stream) {
        filter(url, `because stream clone bundle not requested`);
        continue;
      }
    } else if (!spec.stream) {
      filter(url, `because not a stream clone`);
      continue;
    }
    if (want === 'v1' && spec.version !== 'packed1') continue;
    if (want === 'v2' && spec.version !== 'v2') continue;
    const reqs = spec.params.get('requirements');
    if (reqs) {
      const problem = streamRequirementsProblem(reqs.split(',').filter(Boolean));
      if (problem) {
        filter(url, `because of its requirements (${problem})`);
        continue;
      }
    }
    const ram = entry.get('REQUIREDRAM');
    if (ram !== undefined) {
      const need = sizeToInt(ram);
      if (need === null || totalmem() * 0.66 < need) {
        filter(url, `as it needs more than 2/3 of system memory`);
        continue;
      }
    }
    if (!/^https?:\/\//i.test(url)) {
      filter(url, `: only http and https bundle URLs are supported`);
      continue;
    }
    let digests: Digest[] = [];
    const digestText = entry.get('DIGEST');
    if (digestText !== undefined) {
      try {
        digests = parseDigests(digestText);
      } catch (e) {
        filter(url, `because of ${(e as Error).message}`);
        continue;
      }
    }
    fits.push({ url, spec, entry, digests });
  }
  if (filtered > FILTER_LOGS) log?.(`filtered ${filtered - FILTER_LOGS} more clone bundle entries`);
  return fits[0] ?? null;
}
