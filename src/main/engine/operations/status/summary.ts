// A library row's working-copy state: hg status's counts (M/A/R/!/?), the branch (hg branch) and
// the active bookmark (.hg/bookmarks.current, bookmarks._readactive), read with the status
// mechanism without listing paths.

import { open } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { WorkingCopyCounts } from '../../../../shared/library';
import { workingCopyStatus } from './status';

/** What a library row shows of the working copy: the contract's one definition. */
export type WorkingCopySummary = WorkingCopyCounts;

/** Bookmark and branch names are bounded (hg allows any length; a row shows this much). */
const MAX_NAME = 256;

export async function workingCopySummary(repoRoot: string): Promise<WorkingCopySummary> {
  const root = resolve(repoRoot);
  const status = await workingCopyStatus(root, {
    listUnknown: true,
    listIgnored: false,
    listClean: false,
    warn: () => undefined,
  });
  const branch = (await firstLine(join(root, '.hg', 'branch'))) || 'default';
  const bookmark = await firstLine(join(root, '.hg', 'bookmarks.current'));
  return {
    modified: status.modified.length,
    added: status.added.length,
    removed: status.removed.length,
    deleted: status.deleted.length,
    unknown: status.unknown.length,
    branch,
    ...(bookmark ? { bookmark } : {}),
  };
}

/** The file's first line, stripped as hg strips it; '' when absent. */
async function firstLine(path: string): Promise<string> {
  let text: string;
  try {
    const fh = await open(path, 'r');
    try {
      const buf = Buffer.alloc(MAX_NAME * 4);
      const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
      text = buf.toString('utf8', 0, bytesRead);
    } finally {
      await fh.close();
    }
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw e;
  }
  return (text.split('\n', 1)[0] ?? '').trim().slice(0, MAX_NAME);
}
