// The skeleton of a new repository, as localrepo.createrepository lays it out, ready to receive a
// streamed store: `.hg/`, `.hg/cache/`, `.hg/wcache/`, `.hg/store/`, the `.hg/00changelog.i` stub
// that locks out pre-requirements clients, the requires files, and the `cloned` sample hgrc
// (hg.clone writes it after the data arrived; writing it up front is equivalent because nothing
// in between reads it).

import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SluiceError, toSluiceError } from '../errors.js';
import { writeRequirements } from './requirements.js';
import { withoutCredentials } from '../../../shared/urls';

/**
 * localrepo.createrepository's `.hg/00changelog.i`: a revlog header with version 0xFFFF (which
 * no hg understands) and a message, 57 bytes. hg reads the real changelog from the store.
 */
export const CHANGELOG_STUB: Buffer = Buffer.concat([
  Buffer.from([0x00, 0x00, 0xff, 0xff]),
  Buffer.from(' dummy changelog to prevent using the old repo layout', 'latin1'),
]);

/** ui.samplehgrcs['cloned'] with `default = %s` filled in (hg.clone, made native-EOL by tonativeeol). */
export function clonedHgrc(defaultPath: string): string {
  const text =
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
    '# username = Jane Doe <jdoe@example.com>\n';
  return process.platform === 'win32' ? text.replaceAll('\n', '\r\n') : text;
}

export { withoutCredentials };

export interface RepoSkeletonOptions {
  /** Full requirement set of the new repository (e.g. cloneRequirements(streamed)). */
  requirements: Iterable<string>;
  /** Source URL or path for `[paths] default` in .hg/hgrc; user info is removed. */
  defaultPath?: string;
}

/**
 * Creates `<repoRoot>/.hg` like `hg init` with the given requirements (repoRoot itself may exist,
 * `.hg` must not: DEST_EXISTS). Returns the `.hg` path.
 */
export async function createRepoSkeleton(repoRoot: string, options: RepoSkeletonOptions): Promise<string> {
  const requirements = [...options.requirements];
  const hgDir = join(repoRoot, '.hg');
  let hgrc: string | undefined;
  if (options.defaultPath !== undefined) {
    if (/[\r\n\0]/.test(options.defaultPath)) {
      throw new SluiceError('USAGE', 'the default path must not contain line breaks or NUL');
    }
    hgrc = clonedHgrc(withoutCredentials(options.defaultPath));
  }
  try {
    await mkdir(repoRoot, { recursive: true });
    try {
      await mkdir(hgDir);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST')
        throw new SluiceError('DEST_EXISTS', `repository ${repoRoot} already exists`);
      throw e;
    }
    await mkdir(join(hgDir, 'cache'));
    await mkdir(join(hgDir, 'wcache'));
    if (requirements.includes('store')) {
      await mkdir(join(hgDir, 'store'));
      await writeFile(join(hgDir, '00changelog.i'), CHANGELOG_STUB);
    }
    await writeRequirements(hgDir, requirements);
    if (hgrc !== undefined) await writeFile(join(hgDir, 'hgrc'), hgrc, 'utf8');
  } catch (e) {
    throw toSluiceError(e);
  }
  return hgDir;
}
