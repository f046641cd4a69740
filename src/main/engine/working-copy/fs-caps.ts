// posix.checkexec / checklink: whether the working directory's filesystem keeps exec bits and
// symlinks. hg's cached answers in `.hg/wcache` (checkisexec, checklink) are taken when present;
// otherwise a probe file in `.hg` is created and removed (hg would also leave the cache files:
// status stays read-only here apart from the dirstate).
import { chmodSync, closeSync, lstatSync, openSync, statSync, symlinkSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';

export interface FsCaps {
  checkExec: boolean;
  checkLink: boolean;
}

/**
 * A fresh name for a probe file in `.hg`, created with 'wx' (never clobbers): Math.random rather
 * than node:crypto, whose loading would cost every status more than the probe itself.
 */
export function probeName(hgDir: string, what: string): string {
  const tag = Math.floor(Math.random() * 2 ** 32).toString(16);
  return join(hgDir, `sluice-${what}-${process.pid}-${tag}`);
}

function checkExec(hgDir: string): boolean {
  if (process.platform === 'win32') return false;
  const cached = statSync(join(hgDir, 'wcache', 'checkisexec'), { throwIfNoEntry: false });
  if (cached && cached.mode & 0o111) return true;
  const path = probeName(hgDir, 'exec');
  try {
    closeSync(openSync(path, 'wx', 0o644));
    chmodSync(path, 0o755);
    return (lstatSync(path).mode & 0o111) === 0o111;
  } catch {
    return false;
  } finally {
    try {
      unlinkSync(path);
    } catch {
      // not created
    }
  }
}

function checkLink(hgDir: string): boolean {
  if (process.platform === 'win32') return false;
  if (lstatSync(join(hgDir, 'wcache', 'checklink'), { throwIfNoEntry: false })?.isSymbolicLink()) return true;
  const path = probeName(hgDir, 'link');
  try {
    symlinkSync('target', path);
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  } finally {
    try {
      unlinkSync(path);
    } catch {
      // not created
    }
  }
}

export function workingCopyFsCaps(hgDir: string): FsCaps {
  return { checkExec: checkExec(hgDir), checkLink: checkLink(hgDir) };
}
