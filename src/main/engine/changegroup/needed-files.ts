// What a changegroup's manifests name against what its file groups carry: hg's `server.validate`
// (changegroup.py `cg1unpacker.apply` builds `needfiles` from each new changeset's manifest
// readdelta; `_addchangegroupfiles` refuses a file revision no manifest asked for and, at the end,
// a named one that neither came nor was there), always on here, before the transaction commits:
// a hostile sender cannot leave a repository `hg verify` calls broken.
//
// Cheap by induction instead of reading whole manifests: a new manifest's line copied verbatim
// from its delta base is already accounted for (the base is either old, or new and checked the
// same way), so only the lines a delta touches are read: the received delta's hunks mapped onto
// the text the revlog writer just rebuilt to hash it. A line counts as copied only when it starts
// where a copied run starts on a line boundary of the base too, so a delta cut mid-line cannot
// smuggle an entry past. When the base is not the manifest's p1 (a full text, another branch),
// lines identical to p1's are dropped again (binary search, as manifest.py `_msearch`), so a
// snapshot sent into an existing repository does not make every file's filelog be looked up.
//
// Also checked: each new changeset's manifest exists once the manifests are in, a new root
// manifest belongs to a new changeset, and (tree manifests) directory revisions as files are.

import { SluiceError } from '../errors';
import { NULL_REV } from '../revlog/constants';
import { parseManifest, type ChangelogEntry, type ManifestEntry } from '../revlog/texts';
import type { RevlogWriter } from '../revlog/writer';
import type { IncomingRevision } from '../revlog/writer-options';
import type { RepoWriteSession } from '../repo/write-session';

const NL = 0x0a;

function hex(node: Uint8Array): string {
  return (Buffer.isBuffer(node) ? node : Buffer.from(node.buffer, node.byteOffset, node.length)).toString(
    'hex',
  );
}

function inconsistent(problem: string, message: string, details: Record<string, unknown>): SluiceError {
  return new SluiceError('MALFORMED', message, { problem, ...details });
}

/**
 * Nodes (hex) by path: hg's `needfiles` dict of sets, with a lone node kept as a plain string (most
 * paths need one node at a time: a Set for each of a clone's 20k files is most of the cost).
 */
class NodesByPath {
  private readonly m = new Map<string, string | Set<string>>();

  add(path: string, n: string): void {
    const v = this.m.get(path);
    if (v === undefined) this.m.set(path, n);
    else if (typeof v !== 'string') v.add(n);
    else if (v !== n) this.m.set(path, new Set([v, n]));
  }

  /** Removes `n` from `path`'s nodes; false when it was not there. */
  take(path: string, n: string): boolean {
    const v = this.m.get(path);
    if (v === undefined) return false;
    if (typeof v === 'string') {
      if (v !== n) return false;
      this.m.delete(path);
      return true;
    }
    if (!v.delete(n)) return false;
    if (v.size === 0) this.m.delete(path);
    return true;
  }

  *entries(): Generator<[path: string, nodes: Iterable<string>]> {
    for (const [path, v] of this.m) yield [path, typeof v === 'string' ? [v] : v];
  }
}

export class NeededFiles {
  /** root manifest nodes (hex) of the changesets added */
  private readonly changesetManifests = new Set<string>();
  /** file path → file nodes (hex) the new manifests name that have not arrived (hg's needfiles) */
  private readonly files = new NodesByPath();
  /** directory (`a/b/`) → directory manifest nodes the new manifests name */
  private readonly dirs = new NodesByPath();
  /** directory manifest revisions added: checked at the end (their groups come in any order) */
  private readonly addedDirs: [dir: string, node: string][] = [];

  /** An added changeset (its parsed entry). */
  changeset(entry: ChangelogEntry): void {
    if (entry.manifest.some((b) => b !== 0)) this.changesetManifests.add(hex(entry.manifest));
  }

  /**
   * Adds one manifest revision of directory `dir` ('' = root) through `w` and records the entries
   * its delta touches.
   */
  async addManifest(
    w: RevlogWriter,
    dir: string,
    r: IncomingRevision,
  ): Promise<{ rev: number; added: boolean }> {
    const baseRev = w.rev(r.node) === undefined ? w.rev(r.deltaBase) : undefined;
    // each hunk's end on a line boundary of the base? (the base text is valid until add())
    const aligned =
      baseRev === undefined || baseRev === NULL_REV ? null : hunkEndsAligned(await w.text(baseRev), r.delta);
    const res = await w.add(r);
    if (!res.added || baseRev === undefined) return res;
    const node = hex(r.node);
    if (dir === '' && !this.changesetManifests.has(node))
      throw inconsistent(
        'spurious-manifest',
        `received spurious manifest revision ${node}: no changeset of the changegroup names it`,
        { node },
      );
    if (dir !== '') this.addedDirs.push([dir, node]);
    const [p1] = w.parents(res.rev);
    // lines p1 has too need nothing (when the base is p1, they were never touched); its text
    // first, the new one last: both stay valid until the next add()
    const p1Text = p1 !== NULL_REV && p1 !== baseRev ? await w.text(p1) : null;
    const text = await w.text(res.rev);
    const onEntry = (m: ManifestEntry): void => {
      if (p1Text && hasEntry(p1Text, m.path, m.nodeHex)) return;
      if (m.flag === 't') this.dirs.add(`${dir}${m.path}/`, m.nodeHex);
      else this.files.add(dir + m.path, m.nodeHex);
    };
    for (const [s, e] of touchedLines(text, r.delta, aligned)) parseManifest(text.subarray(s, e), onEntry);
    return res;
  }

  /** After file `path`'s group: its `added` new revisions (the writer's last ones) must have been named. */
  fileGroup(path: string, fl: RevlogWriter, added: number): void {
    for (let rev = fl.length - added; rev < fl.length; rev++) {
      const n = hex(fl.node(rev));
      if (!this.files.take(path, n))
        throw inconsistent(
          'spurious-file-revision',
          `received spurious file revlog entry ${path}:${n}: no manifest of the changegroup names it`,
          { path, node: n },
        );
    }
  }

  /** After the last group: everything named is in the repository (hg: "missing file data"). */
  finish(session: RepoWriteSession): void {
    const root = session.manifest('');
    for (const n of this.changesetManifests)
      if (root.rev(Buffer.from(n, 'hex')) === undefined)
        throw inconsistent(
          'missing-manifest',
          `missing manifest ${n}: a changeset of the changegroup names it, the changegroup does not carry it and the repository does not have it`,
          { node: n },
        );
    for (const [dir, n] of this.addedDirs) {
      if (!this.dirs.take(dir, n))
        throw inconsistent(
          'spurious-manifest',
          `received spurious manifest revision ${dir}:${n}: no manifest of the changegroup names it`,
          { path: dir, node: n },
        );
    }
    for (const [dir, needs] of this.dirs.entries()) {
      const w = session.manifest(dir);
      for (const n of needs)
        if (w.rev(Buffer.from(n, 'hex')) === undefined)
          throw inconsistent('missing-manifest', `missing manifest data for ${dir}:${n}`, {
            path: dir,
            node: n,
          });
    }
    for (const [path, needs] of this.files.entries()) {
      // a file revision named but not received: the repository must have it (a merge's p2
      // side, a pull of what a second branch shares): its filelog's index is read
      const fl = session.filelog(path);
      try {
        for (const n of needs)
          if (fl.rev(Buffer.from(n, 'hex')) === undefined)
            throw inconsistent(
              'missing-file-data',
              `missing file data for ${path}:${n}: a manifest of the changegroup names it, the changegroup does not carry it and the repository does not have it`,
              { path, node: n },
            );
      } finally {
        fl.abandon(); // read only: nothing to write
      }
    }
  }
}

/**
 * For each hunk of `delta` (positions in `base`): does the base text it resumes copying at start
 * a line? (A hunk ending mid-line in the base makes the copied line after it a new one.)
 */
function hunkEndsAligned(base: Uint8Array, delta: Uint8Array): boolean[] {
  const out: boolean[] = [];
  const dv = new DataView(delta.buffer, delta.byteOffset, delta.length);
  for (let pos = 0; pos + 12 <= delta.length;) {
    const end = dv.getInt32(pos + 4);
    out.push(end === 0 || (end > 0 && end <= base.length && base[end - 1] === NL));
    pos += 12 + Math.max(0, dv.getInt32(pos + 8));
  }
  return out;
}

/**
 * The line ranges [start, end) of `text` (base patched with `delta`, already checked by the
 * writer) that are not whole lines copied from the base, ascending and disjoint. `aligned` null:
 * the base was empty (everything is touched).
 */
function touchedLines(text: Uint8Array, delta: Uint8Array, aligned: boolean[] | null): [number, number][] {
  const out: [number, number][] = [];
  const dv = new DataView(delta.buffer, delta.byteOffset, delta.length);
  let shift = 0; // output position minus base position after the hunks seen
  let covered = 0;
  let i = 0;
  for (let pos = 0; pos + 12 <= delta.length; i++) {
    const start = dv.getInt32(pos);
    const end = dv.getInt32(pos + 4);
    const len = dv.getInt32(pos + 8);
    pos += 12 + len;
    const a = start + shift;
    const b = a + len;
    shift += len - (end - start);
    const s = Math.max(covered, a === 0 ? 0 : text.lastIndexOf(NL, a - 1) + 1);
    let e: number;
    if ((b === 0 || text[b - 1] === NL) && aligned?.[i] === true) e = b;
    else {
      const nl = text.indexOf(NL, b);
      e = nl < 0 ? text.length : nl + 1;
    }
    if (s < e) {
      if (out.length && out[out.length - 1]![1] === s) out[out.length - 1]![1] = e;
      else out.push([s, e]);
      covered = e;
    }
  }
  return out;
}

/** Does manifest `text` have `path` with node `nodeHex`? (manifest.py `_msearch`) */
function hasEntry(text: Uint8Array, path: string, nodeHex: string): boolean {
  const buf = Buffer.from(text.buffer, text.byteOffset, text.length);
  const key = Buffer.from(path, 'latin1');
  let lo = 0;
  let hi = text.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const start = mid === 0 ? 0 : text.lastIndexOf(NL, mid - 1) + 1;
    const nul = text.indexOf(0, start);
    if (nul < 0) return false;
    if (Buffer.compare(buf.subarray(start, nul), key) < 0) {
      const nl = text.indexOf(NL, nul + 40);
      lo = nl < 0 ? text.length : nl + 1;
    } else hi = start;
  }
  const nul = text.indexOf(0, lo);
  return (
    nul >= 0 &&
    nul - lo === key.length &&
    Buffer.compare(buf.subarray(lo, nul), key) === 0 &&
    buf.toString('latin1', nul + 1, nul + 41) === nodeHex
  );
}
