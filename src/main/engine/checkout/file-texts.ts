// File contents for the working copy: a filelog revision with its copy metadata stripped
// (filelog.read / storageutil.filtermetadata), node id checked as hg's filectx.data() does.
import { SluiceError } from '../errors';
import type { LocalRepo } from '../repo/local-repo';
import type { Revlog } from '../revlog/revlog';
import { parseFilelogMeta } from '../revlog/texts';
import { readRevisionFolded } from './folded-text';
import { displayPath } from './path-auditor';

/** storageutil.filtermetadata: the file data after a `\1\n…\1\n` block. */
export function stripFilelogMeta(text: Uint8Array): Uint8Array {
  const meta = parseFilelogMeta(text);
  return meta ? text.subarray(meta.dataOffset) : text;
}

export class FileTextReader {
  constructor(private readonly repo: LocalRepo) {}

  /** Opens `path`'s filelog and finds the revision of `nodeHex` in it (the caller closes it). */
  async open(path: string, nodeHex: string): Promise<{ revlog: Revlog; rev: number }> {
    // one revision per filelog: no text cache, and small indexes read whole
    const revlog = await this.repo.openRevlog('data/' + path, 'sync', { cacheBytes: 0 });
    const rev = revlog.index.rev(Buffer.from(nodeHex, 'hex'));
    if (rev === undefined) {
      await revlog.close();
      throw new SluiceError('REVLOG', `${displayPath(path)}@${nodeHex.slice(0, 12)}: no match found`, {
        path: displayPath(path),
        node: nodeHex,
      });
    }
    return { revlog, rev };
  }

  /** The working-copy data of `path` at filelog node `nodeHex`. */
  async read(path: string, nodeHex: string): Promise<Uint8Array> {
    const { revlog, rev } = await this.open(path, nodeHex);
    try {
      return stripFilelogMeta(await readRevisionFolded(revlog, rev));
    } finally {
      await revlog.close();
    }
  }
}
