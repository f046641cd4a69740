// Declared sizes checked against the free space before anything is written: a stream or a
// download cannot fill the disk (cheaply, with a compression bomb in a stream's core, or by
// announcing a huge Content-Length) and then fail half-way with ENOSPC (hg starts and fails).

import { statfs } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { SluiceError } from '../errors';

/**
 * Throws IO (errno ENOSPC) when `bytes` do not fit in the free space of the filesystem `path`
 * will be written to (its nearest existing parent folder). `what` says who announced them ("the
 * stream announces"). Where the free space cannot be read, the writes will tell.
 */
export async function checkFreeSpace(path: string, bytes: number, what: string): Promise<void> {
  for (let dir = dirname(resolve(path)); ; dir = dirname(dir)) {
    let free: number;
    try {
      const s = await statfs(dir);
      free = s.bavail * s.bsize;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT' && dirname(dir) !== dir) continue;
      return;
    }
    if (bytes > free)
      throw new SluiceError('IO', `not enough space in ${dir}: ${what} ${bytes} bytes, ${free} are free`, {
        errno: 'ENOSPC',
        needed: bytes,
        free,
      });
    return;
  }
}
