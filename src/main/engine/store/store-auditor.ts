// hg's pathauditor on the store vfs (every svfs open goes through it): no folder between the store
// and a file read from it may be a symbolic link ("path … traverses symbolic link"). Sluice also
// refuses a revlog file that is itself a link, which hg follows: in a served repository either
// would let the repository's owner have the server send files from elsewhere (another
// repository's revlogs, any file its user can read).
import { lstatSync } from 'node:fs';
import { SluiceError } from '../errors.js';
import { storeFilePath } from './encoding.js';
import { displayName } from './paths.js';

const asIs = (name: string): string => name;

export class StorePathAuditor {
  /** folders (encoded, store-relative) known not to be links */
  private readonly checked = new Set<string>();

  constructor(private readonly storeDir: string) {}

  private isLink(encoded: string): boolean {
    return !!lstatSync(storeFilePath(this.storeDir, asIs, encoded), {
      throwIfNoEntry: false,
    })?.isSymbolicLink();
  }

  /** Refuses `encoded` (an encoded store-relative path) when a folder on its way is a link; each folder once. */
  checkFolders(encoded: string, name: string): void {
    for (let slash = encoded.indexOf('/'); slash >= 0; slash = encoded.indexOf('/', slash + 1)) {
      const dir = encoded.slice(0, slash);
      if (this.checked.has(dir)) continue;
      if (this.isLink(dir))
        throw new SluiceError(
          'UNSAFE_PATH',
          `store file ${displayName(name)} traverses symbolic link ${displayName(dir)}`,
          { name, through: dir },
        );
      this.checked.add(dir);
    }
  }

  /** checkFolders, then the file itself may not be a link either (a missing file passes). */
  checkFile(encoded: string, name: string): void {
    this.checkFolders(encoded, name);
    if (this.isLink(encoded))
      throw new SluiceError('UNSAFE_PATH', `store file ${displayName(name)} is a symbolic link`, { name });
  }
}
