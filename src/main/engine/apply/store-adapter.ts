// The store helpers the applier needs, in one switch point. STORE (src/main/engine/store/) owns
// the real ones; until requirements.ts and repo-layout.ts land, minimal local versions that follow
// api.md live here, and apply-stream.ts imports only from this file.

import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { SluiceError } from '../errors';

export { storePathEncoder, encodeDir, type StorePathEncoder } from '../store/encoding';
export { serializeFncache } from '../store/fncache';

/** requirements.py STREAM_FIXED_REQUIREMENTS (6.3.2). */
export const STREAM_FIXED_REQUIREMENTS: ReadonlySet<string> = new Set([
  'exp-archived-phase',
  'bookmarksinstore',
  'exp-changelog-v2',
  'exp-copies-sidedata-changeset',
  'generaldelta',
  'internal-phase-2',
  'revlog-compression-zstd',
  'revlogv1',
  'exp-revlogv2.2',
  'sparserevlog',
  'treemanifest',
]);

/** What Sluice can apply and then read back. */
const SUPPORTED_REQUIREMENTS: ReadonlySet<string> = new Set([
  'revlogv1',
  'generaldelta',
  'sparserevlog',
  'revlog-compression-zstd',
  'store',
  'fncache',
  'dotencode',
  'share-safe',
  'treemanifest',
  'persistent-nodemap',
]);

/** What hg 6.3.2 gives a fresh repository by default, minus the stream-fixed ones. */
const LOCAL_DEFAULT_REQUIREMENTS = ['dotencode', 'fncache', 'share-safe', 'store'];

/** Working-directory requirements that stay in .hg/requires with share-safe (requirements.py). */
const WORKING_DIR_REQUIREMENTS: ReadonlySet<string> = new Set([
  'share-safe',
  'shared',
  'relshared',
  'exp-sparse',
  'dirstate-v2',
  'dirstate-tracked-key-v1',
]);

export function unsupportedRequirements(reqs: Iterable<string>): string[] {
  return [...new Set(reqs)].filter((r) => !SUPPORTED_REQUIREMENTS.has(r)).sort();
}

/** streamclone.new_stream_clone_requirements with 6.3.2's defaults. */
export function cloneRequirements(streamed: readonly string[]): string[] {
  const out = new Set(LOCAL_DEFAULT_REQUIREMENTS.filter((r) => !STREAM_FIXED_REQUIREMENTS.has(r)));
  for (const r of streamed) out.add(r);
  return [...out].sort();
}

/** scmutil.writereporequirements: the share-safe split. */
export async function writeRequirements(hgDir: string, reqs: Iterable<string>): Promise<void> {
  const all = [...new Set(reqs)].sort();
  const lines = (rs: string[]): string => rs.map((r) => r + '\n').join('');
  if (all.includes('share-safe')) {
    await fsp.writeFile(join(hgDir, 'requires'), lines(all.filter((r) => WORKING_DIR_REQUIREMENTS.has(r))));
    await fsp.mkdir(join(hgDir, 'store'), { recursive: true });
    await fsp.writeFile(join(hgDir, 'store', 'requires'), lines(all.filter((r) => !WORKING_DIR_REQUIREMENTS.has(r))));
  } else {
    await fsp.writeFile(join(hgDir, 'requires'), lines(all));
  }
}

/** localrepo's `.hg/00changelog.i` guard: version 0xFFFF header + text (57 bytes). */
const CHANGELOG_STUB = Buffer.concat([
  Buffer.from([0, 0, 0xff, 0xff]),
  Buffer.from(' dummy changelog to prevent using the old repo layout', 'latin1'),
]);

/** ui.py samplehgrcs['cloned'] */
function sampleHgrc(defaultPath: string): string {
  return (
    "# example repository config (see 'hg help config' for more info)\n" +
    '[paths]\n' +
    `default = ${defaultPath}\n` +
    '\n' +
    '# path aliases to other clones of this repo in URLs or filesystem paths\n' +
    "# (see 'hg help config.paths' for more info)\n" +
    '#\n' +
    '# default:pushurl = ssh://jdoe@example.net/hg/jdoes-fork\n' +
    '# my-fork         = ssh://jdoe@example.net/hg/jdoes-fork\n' +
    '# my-clone        = /home/jdoe/jdoes-clone\n' +
    '\n' +
    '[ui]\n' +
    '# name and email (local to this repository, optional), e.g.\n' +
    '# username = Jane Doe <jdoe@example.com>\n'
  );
}

export async function createRepoSkeleton(
  repoRoot: string,
  opts: { requirements: readonly string[]; defaultPath?: string },
): Promise<void> {
  const hgDir = join(repoRoot, '.hg');
  await fsp.mkdir(join(hgDir, 'store'), { recursive: true });
  await fsp.writeFile(join(hgDir, '00changelog.i'), CHANGELOG_STUB);
  await writeRequirements(hgDir, opts.requirements);
  if (opts.defaultPath !== undefined) {
    if (/[\r\n]/.test(opts.defaultPath)) throw new SluiceError('USAGE', 'default path contains a line break');
    await fsp.writeFile(join(hgDir, 'hgrc'), sampleHgrc(opts.defaultPath));
  }
}
