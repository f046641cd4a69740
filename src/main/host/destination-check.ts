// The clone and apply dialogs' destination check, before submit (as GitHub Desktop does): hg clone
// refuses an existing non-empty destination ("destination 'X' is not empty") and a file; say so in
// the dialog with the reason instead of after the job started.

import { readdir, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { DestinationCheck } from '../../shared/library';

export async function checkDestination(path: string): Promise<DestinationCheck> {
  let s;
  try {
    s = await stat(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT')
      return code === 'ENOTDIR'
        ? notUnderFolder(path)
        : { ok: false, reason: `cannot be read (${code ?? (e as Error).message})` };
    return missingDestination(path);
  }
  if (!s.isDirectory()) return { ok: false, reason: 'is a file' };
  try {
    const names = await readdir(path);
    return names.length === 0
      ? { ok: true, reason: 'is an empty folder' }
      : { ok: false, reason: 'is not empty' };
  } catch (e) {
    return {
      ok: false,
      reason: `cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
    };
  }
}

/** A destination that does not exist yet: fine when its nearest existing ancestor is a folder. */
async function missingDestination(path: string): Promise<DestinationCheck> {
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    try {
      const s = await stat(dir);
      return s.isDirectory()
        ? { ok: true, reason: 'will be created' }
        : { ok: false, reason: `cannot be created: ${dir} is a file` };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOTDIR') return notUnderFolder(path);
      if (dirname(dir) === dir) return { ok: false, reason: 'cannot be created: no existing parent folder' };
    }
  }
}

function notUnderFolder(path: string): DestinationCheck {
  return { ok: false, reason: `cannot be created: a parent of ${path} is a file` };
}
