// Clone bundles (bundlecaches.py: parseclonebundlesmanifest, parsebundlespec, isstreamclonespec,
// filterclonebundleentries; exchange.py _maybeapplyclonebundle) and the download of the chosen
// bundle with resume (HTTP Range + If-Range) into a temporary file.
//
// A stream clone takes stream specs: `none-packed1` and `<comp>-v2;stream=v2` (hg takes only
// `none` for v2; Sluice can apply compressed stream bundles too, so it accepts them). A pull clone
// takes changegroup specs (`gzip-v2`, `zstd-v2`, `bzip2-v2`, `none-v2`, `*-v1`), then pulls the rest.

import { open } from 'node:fs/promises';
import { totalmem } from 'node:os';
import { FreeSpaceGuard, checkFreeSpace, type FreeSpacePolicy } from '../../repo/free-space';
import { SluiceError, cancelled } from '../../errors';
import { unsupportedRequirements } from '../../store/requirements';
import type { HttpSession } from '../../client/http-client';
import { redactUrl } from '../../client/http-client';
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
      const missing = unsupportedRequirements(reqs.split(',').filter(Boolean));
      if (missing.length) {
        filter(url, `because of unsupported requirements: ${missing.join(', ')}`);
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
    fits.push({ url, spec, entry });
  }
  if (filtered > FILTER_LOGS) log?.(`filtered ${filtered - FILTER_LOGS} more clone bundle entries`);
  return fits[0] ?? null;
}

export interface DownloadProgress {
  (received: number, total: number | null): void;
}

export interface DownloadOptions {
  signal?: AbortSignal;
  /** attempts after a cut connection (default 5) */
  retries?: number;
  onProgress?: DownloadProgress;
  log?: (m: string) => void;
  /** delay before a retry in ms (default 500, doubled each time) */
  retryDelayMs?: number;
  /**
   * Sees the file's first START_BYTES bytes (fewer if it is shorter) as soon as they are in, and
   * throws to give up: a body that is not what was asked for is not downloaded to its end.
   */
  checkStart?: (start: Buffer) => void;
  /** how the writes watch the free space (a body without Content-Length may never end) */
  freeSpace?: FreeSpacePolicy;
}

const START_BYTES = 4;

const RETRYABLE = new Set(['TRUNCATED', 'NETWORK', 'TIMEOUT']);

/**
 * Downloads `url` to `path` (created or truncated). A connection cut mid-body is resumed with
 * `Range: bytes=N-` guarded by `If-Range` (ETag or Last-Modified), so a file that changed on the
 * server restarts from zero instead of mixing two versions. The result has the announced size.
 */
export async function downloadWithResume(
  session: HttpSession,
  url: string,
  path: string,
  opts: DownloadOptions = {},
): Promise<number> {
  const retries = opts.retries ?? 5;
  let delay = opts.retryDelayMs ?? 500;
  const fh = await open(path, 'w');
  let have = 0;
  let total: number | null = null;
  let validator: string | null = null;
  let failures = 0;
  let start = Buffer.alloc(0);
  const guard = (): FreeSpaceGuard =>
    new FreeSpaceGuard(path, `the download of ${redactUrl(url)}`, opts.freeSpace);
  let space = guard();
  try {
    for (;;) {
      if (opts.signal?.aborted) throw cancelled();
      const headers: Record<string, string> = { Accept: '*/*' };
      if (have > 0) {
        headers.Range = `bytes=${have}-`;
        if (validator) headers['If-Range'] = validator;
      }
      let gotBytes = false;
      try {
        const res = await session.request(url, { headers });
        if (have > 0 && res.status === 416 && total !== null && have === total) {
          res.discard();
          return have;
        }
        if (res.status === 200) {
          if (have > 0)
            opts.log?.(
              `${redactUrl(url)}: the server ignored the range request; downloading again from the start`,
            );
          have = 0;
          space = guard();
          await fh.truncate(0);
          const len = res.headers['content-length'];
          total = len !== undefined && /^\d+$/.test(len) ? Number(len) : null;
        } else if (res.status === 206) {
          const cr = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(String(res.headers['content-range'] ?? ''));
          if (!cr || Number(cr[1]) !== have) {
            res.discard();
            throw new SluiceError(
              'HTTP',
              `bad Content-Range in the resumed download of ${redactUrl(url)}: ${res.headers['content-range'] ?? 'none'}`,
            );
          }
          if (cr[3] !== '*') {
            const t = Number(cr[3]);
            if (total !== null && t !== total) {
              res.discard();
              throw new SluiceError('SIZE_MISMATCH', `${redactUrl(url)} changed size during the download`);
            }
            total = t;
          }
        } else {
          res.discard();
          const err = new SluiceError(
            'HTTP',
            `HTTP error fetching bundle: ${res.status} ${res.statusMessage}`,
            { status: res.status },
          );
          if (res.status >= 500 && failures < retries) throw Object.assign(err, { retryable: true });
          throw err;
        }
        // a declared size must fit in the free space before a byte is written (not ENOSPC mid-way)
        if (total !== null) {
          try {
            checkFreeSpace(path, total - have, `${redactUrl(url)} announces`, opts.freeSpace);
          } catch (e) {
            res.discard();
            throw e;
          }
        }
        validator =
          (res.headers.etag as string | undefined) ??
          (res.headers['last-modified'] as string | undefined) ??
          validator;
        for await (const chunk of res.body) {
          if (total !== null && have + chunk.length > total) {
            throw new SluiceError(
              'SIZE_MISMATCH',
              `${redactUrl(url)} sent more than the ${total} bytes it announced`,
            );
          }
          if (opts.checkStart && have < START_BYTES) {
            start = Buffer.concat([start.subarray(0, have), chunk]).subarray(0, START_BYTES);
            if (start.length === START_BYTES) opts.checkStart(start);
          }
          space.take(chunk.length);
          await fh.write(chunk, 0, chunk.length, have);
          have += chunk.length;
          gotBytes = true;
          opts.onProgress?.(have, total);
        }
        if (total !== null && have !== total)
          throw new SluiceError('TRUNCATED', `${redactUrl(url)} ended after ${have} of ${total} bytes`);
        if (have < START_BYTES) opts.checkStart?.(start.subarray(0, have));
        return have;
      } catch (e) {
        const se = e instanceof SluiceError ? e : new SluiceError('NETWORK', String(e));
        const retryable =
          (RETRYABLE.has(se.code) && se.details?.trickle !== true) ||
          (se as SluiceError & { retryable?: boolean }).retryable === true;
        if (!retryable || opts.signal?.aborted) throw se;
        if (gotBytes) failures = 0; // progress was made: the budget is per stall, not per file
        if (++failures > retries) throw se;
        opts.log?.(`download of ${redactUrl(url)} interrupted after ${have} bytes (${se.message}); resuming`);
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 10_000);
      }
    }
  } finally {
    await fh.close();
  }
}
