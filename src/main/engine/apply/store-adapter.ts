// The store helpers the applier needs, in one switch point. STORE (src/main/engine/store/) owns
// the real ones; until repo-layout.ts (createRepoSkeleton) lands, a minimal local version that
// follows api.md lives here, and apply-stream.ts imports only from this file.

import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { SluiceError } from '../errors';

export { storePathEncoder, encodeDir, type StorePathEncoder } from '../store/encoding';
export { serializeFncache } from '../store/fncache';
export {
  cloneRequirements,
  unsupportedRequirements,
  writeRequirements,
  DEFAULT_NEW_REPO_REQUIREMENTS,
} from '../store/requirements';
import { writeRequirements } from '../store/requirements';

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
