// A local repository opened for reading revlogs: its location and requirements
// (store/requirements.ts), the store vfs's path encoding, and the changelog, manifest and filelogs
// by name, as localrepo's svfs opens them. The working-copy writer (checkout/) and revision lookup
// (revsymbol.ts) read the repository through this.
import { sep } from 'node:path';
import { SluiceError } from '../errors';
import { Revlog, type RevlogOpenOptions } from '../revlog/revlog';
import type { RevlogIoMode } from '../revlog/file-io';
import { storePathEncoder, type StorePathEncoder } from '../store/encoding';
import { locateRepository, UNREADABLE_REQUIREMENTS, type RepoLocation } from '../store/requirements';

export class LocalRepo {
  private readonly encode: StorePathEncoder;
  /** the store folder and a separator, made once (storePath runs once per file of a checkout) */
  private readonly storeBase: string;

  private constructor(readonly loc: RepoLocation) {
    this.encode = storePathEncoder(loc.requirements);
    this.storeBase = loc.storeDir + sep;
  }

  static async open(root: string): Promise<LocalRepo> {
    const loc = await locateRepository(root);
    const bad = UNREADABLE_REQUIREMENTS.filter((r) => loc.requirements.has(r));
    if (bad.length > 0)
      throw new SluiceError(
        'UNSUPPORTED_REQUIREMENTS',
        `repository ${root} requires features sluice cannot read: ${bad.join(', ')}`,
        { unsupported: bad },
      );
    return new LocalRepo(loc);
  }

  /** The same repository from a location another thread opened (checkout's file writers). */
  static fromLocation(loc: RepoLocation): LocalRepo {
    return new LocalRepo(loc);
  }

  get root(): string {
    return this.loc.root;
  }

  get hgDir(): string {
    return this.loc.hgDir;
  }

  get requirements(): ReadonlySet<string> {
    return this.loc.requirements;
  }

  /**
   * Absolute path of a store file from its latin1 byte-string name, encoded like hg's store vfs.
   * Encoded names are ASCII except without fncache, where raw bytes pass through: those become a
   * Buffer path so the bytes reach the filesystem unchanged.
   */
  storePath(name: string): string | Buffer {
    const enc = this.encode(name);
    const base = this.storeBase;
    for (let i = 0; i < enc.length; i++) {
      if (enc.charCodeAt(i) >= 0x80) return Buffer.concat([Buffer.from(base), Buffer.from(enc, 'latin1')]);
    }
    return base + (sep === '/' ? enc : enc.replaceAll('/', sep));
  }

  /** Opens the revlog with radix `name` (`00changelog`, `00manifest`, `data/foo.txt`). */
  openRevlog(radix: string, io: RevlogIoMode = 'sync', opts: RevlogOpenOptions = {}): Promise<Revlog> {
    const index = this.storePath(radix + '.i');
    const data = this.storePath(radix + '.d');
    return Revlog.open(pathString(index), { name: radix, dataPath: pathString(data), io, ...opts });
  }

  changelog(io: RevlogIoMode = 'sync'): Promise<Revlog> {
    return this.openRevlog('00changelog', io);
  }

  manifestlog(io: RevlogIoMode = 'sync'): Promise<Revlog> {
    return this.openRevlog('00manifest', io);
  }

  /** The filelog of a tracked path (latin1 byte string). */
  filelog(path: string, io: RevlogIoMode = 'sync'): Promise<Revlog> {
    return this.openRevlog('data/' + path, io);
  }
}

/**
 * Revlog.open takes string paths; a non-ASCII raw store name (no fncache) is decoded as UTF-8,
 * which round-trips for the UTF-8 names every current hg writes.
 */
function pathString(p: string | Buffer): string {
  return typeof p === 'string' ? p : p.toString('utf8');
}
