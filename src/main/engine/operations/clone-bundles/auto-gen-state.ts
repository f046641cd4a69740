// The auto-generated bundles of a repository in hg 6.5's own state file, `.hg/clonebundles.auto-gen`,
// so that hg (6.5+) and Sluice can refresh the same repository: one sorted line per bundle,
//   DONE-v1 TYPE REVS TIP_REV TIP_NODE QUOTED_URL BASENAME      (uploaded)
//   PENDING-v1 TYPE REVS TIP_REV TIP_NODE QUOTED_HOST PID QUOTED_PATH   (being generated)
// hg reads those lines by exact field count, so what Sluice adds (the precise BUNDLESPEC, the
// sha256 for the manifest's DIGEST, the size) lives in a sidecar, `.hg/clonebundles.sluice.json`;
// a bundle hg made simply has no sidecar entry. `.hg/clonebundles.manifest` lists, as hg's
// update_ondisk_manifest, the largest valid uploaded bundle of each type; in the order of
// auto-generate.formats rather than hg's alphabetical one, because a client takes the first entry
// it can use: the operator's first format is the one plain clones get.

import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { SluiceError } from '../../errors';
import { writeFileAtomic } from '../../json-file';
import { readStateFile } from '../../repo/state-file';

export const STATE_FILE = 'clonebundles.auto-gen';
export const MANIFEST_FILE = 'clonebundles.manifest';
export const SIDECAR_FILE = 'clonebundles.sluice.json';
const MAX_STATE_BYTES = 4 << 20;
const MAX_FIELD = 4096;

interface BundleBase {
  /** the bundle type: the normalized spec of auto-generate.formats */
  spec: string;
  /** changesets in the repository when it was made */
  revs: number;
  tipRev: number;
  tipNode: string;
}

export interface DoneBundle extends BundleBase {
  status: 'done';
  url: string;
  basename: string;
  /** Sluice's sidecar: absent for a bundle hg made */
  manifestSpec?: string;
  sha256?: string;
  size?: number;
}

export interface PendingBundle extends BundleBase {
  status: 'pending';
  /** hg's lock prefix of the generating machine, its pid, and the file it writes */
  host: string;
  pid: number;
  path: string;
}

export type AutoBundle = DoneBundle | PendingBundle;

/** Python's urllib.parse.quote with its default safe='/', byte for byte. */
export function pyQuote(s: string): string {
  return encodeURIComponent(s)
    .replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase())
    .replace(/%2F/g, '/');
}

function pyUnquote(s: string, where: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw new SluiceError(
      'MALFORMED',
      `${where}: bad percent-encoding in ${JSON.stringify(s.slice(0, 200))}`,
    );
  }
}

function toLine(b: AutoBundle): string {
  const base = `${b.spec} ${b.revs} ${b.tipRev} ${b.tipNode}`;
  return b.status === 'done'
    ? `DONE-v1 ${base} ${pyQuote(b.url)} ${b.basename}`
    : `PENDING-v1 ${base} ${pyQuote(b.host)} ${b.pid} ${pyQuote(b.path)}`;
}

/** A basename names an object in the storage and a file here: never a path. */
export function checkBasename(basename: string, where: string): string {
  if (!/^[A-Za-z0-9._;=%+-]{1,255}$/.test(basename) || basename.startsWith('.'))
    throw new SluiceError('UNSAFE_PATH', `${where}: bundle name ${JSON.stringify(basename.slice(0, 300))}`);
  return basename;
}

function fromLine(line: string, where: string): AutoBundle {
  const fields = line.split(/[ \t\r\v\f]+/).filter((f) => f.length > 0);
  const [tag, spec, revs, tipRev, tipNode] = fields;
  const count = tag === 'DONE-v1' ? 7 : 8;
  const nums = [revs, tipRev].map(Number);
  if (
    fields.length !== count ||
    fields.some((f) => f.length > MAX_FIELD) ||
    nums.some((x) => !Number.isSafeInteger(x) || x < -1) ||
    !/^[0-9a-f]{40}$/.test(tipNode!)
  )
    throw new SluiceError('MALFORMED', `${where}: unreadable line ${JSON.stringify(line.slice(0, 200))}`);
  const base = { spec: spec!, revs: nums[0]!, tipRev: nums[1]!, tipNode: tipNode! };
  if (tag === 'DONE-v1')
    return {
      status: 'done',
      ...base,
      url: pyUnquote(fields[5]!, where),
      basename: checkBasename(fields[6]!, where),
    };
  const pid = Number(fields[6]);
  if (!Number.isSafeInteger(pid) || pid < 0)
    throw new SluiceError('MALFORMED', `${where}: unreadable pid in ${JSON.stringify(line.slice(0, 200))}`);
  return {
    status: 'pending',
    ...base,
    host: pyUnquote(fields[5]!, where),
    pid,
    path: pyUnquote(fields[7]!, where),
  };
}

type Sidecar = Record<string, { manifestSpec: string; sha256: string; size: number }>;

function parseSidecar(text: string): Sidecar {
  const out: Sidecar = {};
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return out; // only extras: a damaged sidecar costs the manifest its DIGEST, nothing else
  }
  if (!raw || typeof raw !== 'object') return out;
  for (const [name, v] of Object.entries(raw as Record<string, unknown>)) {
    const e = v as Partial<Sidecar[string]> | null;
    if (
      e &&
      typeof e.manifestSpec === 'string' &&
      e.manifestSpec.length <= MAX_FIELD &&
      !/\s/.test(e.manifestSpec) &&
      typeof e.sha256 === 'string' &&
      /^[0-9a-f]{64}$/.test(e.sha256) &&
      Number.isSafeInteger(e.size)
    )
      out[name] = { manifestSpec: e.manifestSpec, sha256: e.sha256, size: e.size! };
  }
  return out;
}

/** A state file of the served repository: regular, not a link, within MAX_STATE_BYTES. */
async function readBounded(path: string): Promise<string | null> {
  return (await readStateFile(path, { max: MAX_STATE_BYTES }))?.toString('utf8') ?? null;
}

/** hg's read_auto_gen: lines of other kinds are ignored, as hg ignores them. */
export async function readAutoGenState(hgDir: string): Promise<AutoBundle[]> {
  const path = join(hgDir, STATE_FILE);
  const text = await readBounded(path);
  if (!text) return [];
  const sidecar = parseSidecar((await readBounded(join(hgDir, SIDECAR_FILE))) ?? '{}');
  const bundles: AutoBundle[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('DONE-v1 ') && !line.startsWith('PENDING-v1 ')) continue;
    const b = fromLine(line, path);
    bundles.push(b.status === 'done' ? { ...b, ...sidecar[b.basename] } : b);
  }
  return bundles;
}

/**
 * update_ondisk_manifest's choice: per type, the uploaded valid bundle with the most revs; types in
 * `typeOrder` first, in that order, then the others alphabetically.
 */
export function advertisedBundles(
  bundles: readonly AutoBundle[],
  valid: (b: AutoBundle) => boolean,
  typeOrder: readonly string[] = [],
): DoneBundle[] {
  const perType = new Map<string, DoneBundle>();
  for (const b of bundles) {
    if (b.status !== 'done' || !valid(b)) continue;
    const current = perType.get(b.spec);
    if (!current || current.revs < b.revs) perType.set(b.spec, b);
  }
  const rank = (spec: string): number => {
    const i = typeOrder.indexOf(spec);
    return i < 0 ? typeOrder.length : i;
  };
  return [...perType.values()].sort(
    (a, b) => rank(a.spec) - rank(b.spec) || (a.spec < b.spec ? -1 : a.spec > b.spec ? 1 : 0),
  );
}

/**
 * One manifest line: `URL BUNDLESPEC=… [REQUIRESNI=true] [DIGEST=sha256:HEX]`. hg writes the bundle
 * type as BUNDLESPEC; Sluice's precise spec (a stream bundle's requirements) lets a client that
 * cannot read the store skip it before downloading.
 */
export function manifestLine(b: DoneBundle): string {
  const sni = b.url.startsWith('https:') ? ' REQUIRESNI=true' : '';
  const digest = b.sha256 ? ` DIGEST=sha256:${b.sha256}` : '';
  return `${b.url} BUNDLESPEC=${b.manifestSpec ?? b.spec}${sni}${digest}\n`;
}

/** hg's dumps_auto_gen: the lines sorted, each ended by a newline. */
export function autoGenText(bundles: readonly AutoBundle[]): string {
  return bundles
    .map((b) => toLine(b) + '\n')
    .sort()
    .join('');
}

/** Writes the state, its sidecar, then the manifest (each replaced atomically). */
export async function saveAutoGenState(
  hgDir: string,
  bundles: readonly AutoBundle[],
  valid: (b: AutoBundle) => boolean,
  typeOrder: readonly string[] = [],
): Promise<void> {
  const sidecar: Sidecar = {};
  for (const b of bundles)
    if (b.status === 'done' && b.manifestSpec && b.sha256 && b.size !== undefined)
      sidecar[b.basename] = { manifestSpec: b.manifestSpec, sha256: b.sha256, size: b.size };
  await writeFileAtomic(join(hgDir, SIDECAR_FILE), JSON.stringify(sidecar) + '\n');
  await writeFileAtomic(join(hgDir, STATE_FILE), autoGenText(bundles));
  const advertised = advertisedBundles(bundles, valid, typeOrder);
  // no manifest at all rather than an empty one: the server then stops advertising clonebundles
  if (advertised.length)
    await writeFileAtomic(join(hgDir, MANIFEST_FILE), advertised.map(manifestLine).join(''));
  else await rm(join(hgDir, MANIFEST_FILE), { force: true });
}
