// The auto-generated bundles of a repository, kept in `.hg/clonebundles.auto-gen` (hg 6.5 keeps
// its state under that name), and the `.hg/clonebundles.manifest` made from it. One line per
// bundle after a `v1` line: `DONE-v1` (published) or `OLD-v1` (out of the manifest, its deletion
// from the storage still to do), then the spec, revs, tip rev, tip node, basename, URL, sha256 and
// size, percent-encoded where they may hold spaces.

import { randomBytes } from 'node:crypto';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SluiceError } from '../../errors';

export const STATE_FILE = 'clonebundles.auto-gen';
export const MANIFEST_FILE = 'clonebundles.manifest';
const MAX_STATE_BYTES = 4 << 20;

export interface AutoBundle {
  status: 'done' | 'old';
  /** the normalized spec of auto-generate.formats (bundle type) */
  spec: string;
  /** BUNDLESPEC of its manifest line */
  manifestSpec: string;
  revs: number;
  tipRev: number;
  tipNode: string;
  basename: string;
  url: string;
  sha256: string;
  size: number;
}

const enc = encodeURIComponent;

function toLine(b: AutoBundle): string {
  const tag = b.status === 'done' ? 'DONE-v1' : 'OLD-v1';
  return [
    tag,
    enc(b.spec),
    enc(b.manifestSpec),
    b.revs,
    b.tipRev,
    b.tipNode,
    enc(b.basename),
    enc(b.url),
    b.sha256,
    b.size,
  ].join(' ');
}

function fromLine(line: string, where: string): AutoBundle {
  const [tag, spec, manifestSpec, revs, tipRev, tipNode, name, url, sha256, size, ...extra] = line.split(' ');
  const nums = [revs, tipRev, size].map(Number);
  if (
    extra.length ||
    size === undefined ||
    (tag !== 'DONE-v1' && tag !== 'OLD-v1') ||
    nums.some((x) => !Number.isSafeInteger(x)) ||
    !/^[0-9a-f]{40}$/.test(tipNode!) ||
    !/^[0-9a-f]{64}$/.test(sha256!)
  )
    throw new SluiceError('MALFORMED', `${where}: unreadable line ${JSON.stringify(line.slice(0, 200))}`);
  const basename = decodeURIComponent(name!);
  // a basename names an object in the storage and a temporary here: never a path
  if (!/^[A-Za-z0-9._-]{1,200}$/.test(basename) || basename.startsWith('.'))
    throw new SluiceError('UNSAFE_PATH', `${where}: bundle name ${JSON.stringify(basename)}`);
  return {
    status: tag === 'DONE-v1' ? 'done' : 'old',
    spec: decodeURIComponent(spec!),
    manifestSpec: decodeURIComponent(manifestSpec!),
    revs: nums[0]!,
    tipRev: nums[1]!,
    tipNode: tipNode!,
    basename,
    url: decodeURIComponent(url!),
    sha256: sha256!,
    size: nums[2]!,
  };
}

export async function readAutoGenState(hgDir: string): Promise<AutoBundle[]> {
  const path = join(hgDir, STATE_FILE);
  let text: string;
  try {
    const buf = await readFile(path);
    if (buf.length > MAX_STATE_BYTES)
      throw new SluiceError('LIMIT', `${path} is larger than ${MAX_STATE_BYTES} bytes`);
    text = buf.toString('utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
  const [version, ...lines] = text.split('\n').filter((l) => l.length > 0);
  if (version !== 'v1')
    throw new SluiceError('MALFORMED', `${path}: unknown version ${JSON.stringify(version?.slice(0, 20))}`);
  return lines.map((l) => fromLine(l, path));
}

/** One manifest line: `URL BUNDLESPEC=… [REQUIRESNI=true] DIGEST=sha256:HEX`. */
export function manifestLine(b: AutoBundle): string {
  const sni = b.url.startsWith('https:') ? ' REQUIRESNI=true' : '';
  return `${b.url} BUNDLESPEC=${b.manifestSpec}${sni} DIGEST=sha256:${b.sha256}\n`;
}

async function replaceFile(path: string, text: string): Promise<void> {
  const tmp = `${path}.sluice-${process.pid}-${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(tmp, text, { flag: 'wx' });
  await rename(tmp, path);
}

/** Writes the state, then the manifest of its published bundles (each replaced atomically). */
export async function saveAutoGenState(hgDir: string, bundles: readonly AutoBundle[]): Promise<void> {
  await replaceFile(join(hgDir, STATE_FILE), ['v1', ...bundles.map(toLine)].join('\n') + '\n');
  const published = bundles.filter((b) => b.status === 'done');
  // no manifest at all rather than an empty one: the server then stops advertising clonebundles
  if (published.length) await replaceFile(join(hgDir, MANIFEST_FILE), published.map(manifestLine).join(''));
  else await rm(join(hgDir, MANIFEST_FILE), { force: true });
}
