// hg's revision branch cache (branchmap.revbranchcache), read only: `.hg/cache/rbc-revs-v1` holds,
// per revision, the first 4 bytes of its node and the index of its branch name in
// `rbc-names-v1` (names separated by NUL; the index's high bit: the changeset closes its branch).
// hg fills it as it reads branches (log, heads, update, pull). A record hg has not filled (zeros),
// whose node prefix does not match the changelog, or that names no known branch leaves that
// revision to its changeset text, as hg's own reader does; so does a missing or oversized file.
import { join } from 'node:path';
import type { RevlogIndex } from '../revlog/index';
import { readBounded } from './bounded-read';

const RECORD = 8;
const CLOSE_FLAG = 0x80000000;
/** rbc-names-v1 larger than this is not read (hostile input; hg's hold a few KB) */
const NAMES_MAX = 4 << 20;

export interface BranchInfo {
  branch: string;
  closed: boolean;
}

export class RevBranchCache {
  private constructor(
    private readonly names: readonly string[],
    private readonly records: Buffer,
    private readonly index: RevlogIndex,
  ) {}

  /** The cache of the repository whose `.hg` is hgDir, for its changelog's index; undefined without one. */
  static read(hgDir: string, changelog: RevlogIndex): RevBranchCache | undefined {
    const names = readBounded(join(hgDir, 'cache', 'rbc-names-v1'), NAMES_MAX, true);
    if (!names || names.length === 0) return undefined;
    const records = readBounded(join(hgDir, 'cache', 'rbc-revs-v1'), changelog.length * RECORD, false);
    if (!records || records.length < RECORD) return undefined;
    // branch names are kept as changesetBranch reads them: the changeset's bytes as latin1
    return new RevBranchCache(names.toString('latin1').split('\0'), records, changelog);
  }

  /** rev's branch and close flag from the cache; undefined when the cache cannot vouch for it. */
  branchInfo(rev: number): BranchInfo | undefined {
    const at = rev * RECORD;
    if (rev < 0 || at + RECORD > this.records.length) return undefined;
    const prefix = this.records.readUInt32BE(at);
    // zeros: a record hg has not filled yet
    if (prefix === 0 || rev >= this.index.length) return undefined;
    const node = this.index.node(rev);
    if (((node[0]! << 24) | (node[1]! << 16) | (node[2]! << 8) | node[3]!) >>> 0 !== prefix) return undefined;
    const word = this.records.readUInt32BE(at + 4);
    const branch = this.names[(word & ~CLOSE_FLAG) >>> 0];
    return branch === undefined ? undefined : { branch, closed: (word & CLOSE_FLAG) !== 0 };
  }
}
