// manifestdict.diff for an update between revisions: a merge walk over the two manifest texts
// (both sorted by path bytes), comparing raw lines. Only lines that differ become entries; an
// unchanged file costs its path string and nothing else (no entry object, hex string or map slot).
import { scanManifest, type ManifestEntry } from '../../revlog/texts';

/** What checking out `target` over a clean working copy of `source` changes (merge.manifestmerge). */
export interface ManifestDiff {
  /** every path of the target, in its (sorted) order */
  targetPaths: string[];
  /** files to write: new, or another file node or flag (not an exec bit alone) */
  gets: ManifestEntry[];
  /** the gets the source does not have (an untracked file may be in their way) */
  added: Set<string>;
  /** manifestmerge's 'e' action: same file node, only the exec bit changes */
  execs: ManifestEntry[];
  /** source paths the target does not have */
  removes: string[];
}

/** A manifest's lines as [start, nul, flag] triples (validated by scanManifest). */
function manifestLines(text: Uint8Array): Int32Array {
  let lines = new Int32Array(3 * 1024);
  let n = 0;
  scanManifest(text, (start, nul, flag) => {
    if (n + 3 > lines.length) {
      const grown = new Int32Array(lines.length * 2);
      grown.set(lines);
      lines = grown;
    }
    lines[n++] = start;
    lines[n++] = nul;
    lines[n++] = flag;
  });
  return lines.subarray(0, n);
}

/** Compares a[aStart, aEnd) with b[bStart, bEnd) as bytes: <0, 0 or >0. */
function compareBytes(
  a: Uint8Array,
  aStart: number,
  aEnd: number,
  b: Uint8Array,
  bStart: number,
  bEnd: number,
): number {
  const n = Math.min(aEnd - aStart, bEnd - bStart);
  for (let i = 0; i < n; i++) {
    const d = a[aStart + i]! - b[bStart + i]!;
    if (d !== 0) return d;
  }
  return aEnd - aStart - (bEnd - bStart);
}

const FLAG_NAMES: Record<number, string> = { 0: '', 0x78: 'x', 0x6c: 'l', 0x74: 't' };
const LINK = 0x6c;

export function diffManifests(source: Uint8Array, target: Uint8Array): ManifestDiff {
  const src = Buffer.from(source.buffer, source.byteOffset, source.length);
  const tgt = Buffer.from(target.buffer, target.byteOffset, target.length);
  const s = manifestLines(source);
  const t = manifestLines(target);
  const diff: ManifestDiff = { targetPaths: [], gets: [], added: new Set(), execs: [], removes: [] };
  const entry = (j: number, path: string): ManifestEntry => ({
    path,
    nodeHex: tgt.toString('latin1', t[j + 1]! + 1, t[j + 1]! + 41),
    flag: FLAG_NAMES[t[j + 2]!]!,
  });
  let i = 0;
  let j = 0;
  while (j < t.length) {
    const cmp = i < s.length ? compareBytes(source, s[i]!, s[i + 1]!, target, t[j]!, t[j + 1]!) : 1;
    if (cmp < 0) {
      diff.removes.push(src.toString('latin1', s[i]!, s[i + 1]!));
      i += 3;
      continue;
    }
    const path = tgt.toString('latin1', t[j]!, t[j + 1]!);
    diff.targetPaths.push(path);
    if (cmp > 0) {
      diff.gets.push(entry(j, path));
      diff.added.add(path);
    } else {
      const sNul = s[i + 1]!;
      const tNul = t[j + 1]!;
      const sameNode = compareBytes(source, sNul + 1, sNul + 41, target, tNul + 1, tNul + 41) === 0;
      const sFlag = s[i + 2]!;
      const tFlag = t[j + 2]!;
      if (sameNode && sFlag !== tFlag && sFlag !== LINK && tFlag !== LINK) diff.execs.push(entry(j, path));
      else if (!sameNode || sFlag !== tFlag) diff.gets.push(entry(j, path));
      i += 3;
    }
    j += 3;
  }
  for (; i < s.length; i += 3) diff.removes.push(src.toString('latin1', s[i]!, s[i + 1]!));
  return diff;
}
