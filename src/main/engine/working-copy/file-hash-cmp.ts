// filelog.cmp's first test (revlog.cmp): a working file equals its filelog revision when its data
// hashes to the revision's node with the revision's parents, so no text is built from a delta
// chain that may be hundreds of deltas long. Data starting with "\1\n" is hashed behind an empty
// metadata block, as filelog.cmp does. A mismatch decides nothing (a copy's metadata, a censored
// or flagged revision): the caller then compares the texts.
import { createHash } from 'node:crypto';
import { closeSync, openSync, readlinkSync, readSync } from 'node:fs';
import { sortedParents } from '../revlog/revision-checks';
import type { FileTextReader } from './file-texts';

const READ = 1 << 20;
/** One read buffer for every file hashed (the reads are synchronous): a status after a checkout may hash thousands. */
let scratch: Buffer | undefined;
const META = Buffer.from('\x01\n');
const EMPTY_META = Buffer.from('\x01\n\x01\n');

/** Feeds the file's bytes (a symlink's target) to `hash`, behind an empty metadata block when they start with "\1\n". */
function hashData(hash: ReturnType<typeof createHash>, fsPath: string | Buffer, isLink: boolean): void {
  if (isLink) {
    const target = readlinkSync(fsPath, { encoding: 'buffer' });
    if (target.subarray(0, 2).equals(META)) hash.update(EMPTY_META);
    hash.update(target);
    return;
  }
  const fd = openSync(fsPath, 'r');
  try {
    const buf = (scratch ??= Buffer.allocUnsafe(READ));
    for (let first = true; ; first = false) {
      const n = readSync(fd, buf, 0, READ, null);
      if (n === 0) return;
      if (first && n >= 2 && buf.subarray(0, 2).equals(META)) hash.update(EMPTY_META);
      hash.update(buf.subarray(0, n));
    }
  } finally {
    closeSync(fd);
  }
}

/** Whether the working file at fsPath hashes to `path`'s filelog node `nodeHex` (false: undecided). */
export async function hashesToNode(
  reader: FileTextReader,
  path: string,
  nodeHex: string,
  fsPath: string | Buffer,
  isLink: boolean,
): Promise<boolean> {
  const o = await reader.open(path, nodeHex);
  try {
    const index = o.revlog.index;
    if (index.revFlags(o.rev) !== 0) return false;
    const [lo, hi] = sortedParents(o.revlog.name, index, o.rev);
    const hash = createHash('sha1').update(lo).update(hi);
    hashData(hash, fsPath, isLink);
    return hash.digest().equals(index.node(o.rev));
  } finally {
    await reader.release(o);
  }
}
