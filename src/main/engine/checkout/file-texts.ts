// File contents for the working copy: a filelog revision with its copy metadata stripped
// (filelog.read / storageutil.filtermetadata), node id checked as hg's filectx.data() does.
// The text comes from the revlog reader (Revlog.revision: the chain folded at once, as mpatch).
import { SluiceError } from '../errors';
import type { LocalRepo } from '../repo/local-repo';
import type { RevlogIndex } from '../revlog/index';
import type { Revlog } from '../revlog/revlog';
import { parseFilelogMeta } from '../revlog/texts';
import { displayPath } from './path-auditor';

/** storageutil.filtermetadata: the file data after a `\1\n…\1\n` block. */
export function stripFilelogMeta(text: Uint8Array): Uint8Array {
  const meta = parseFilelogMeta(text);
  return meta ? text.subarray(meta.dataOffset) : text;
}

/**
 * rev of a node in a filelog read for one revision: a plain scan (the first occurrence, as
 * index.rev) instead of building the index's node map for a single lookup.
 */
function findRev(index: RevlogIndex, node: Buffer): number | undefined {
  if (index.length > 64) return index.rev(node);
  for (let r = 0; r < index.length; r++) if (node.equals(index.node(r))) return r;
  return undefined;
}

export class FileTextReader {
  constructor(private readonly repo: LocalRepo) {}

  /** Opens `path`'s filelog and finds the revision of `nodeHex` in it (the caller closes it). */
  async open(path: string, nodeHex: string): Promise<{ revlog: Revlog; rev: number }> {
    // one revision per filelog: no text cache, and small indexes read whole
    const revlog = await this.repo.openRevlog('data/' + path, 'sync', { cacheBytes: 0 });
    const rev = findRev(revlog.index, Buffer.from(nodeHex, 'hex'));
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
      return stripFilelogMeta(await revlog.revision(rev));
    } finally {
      await revlog.close();
    }
  }
}
