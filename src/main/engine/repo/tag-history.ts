// Global tags as hg 6.3.2 merges them across heads (tags.py _readtags, _updatetags): each
// `.hgtags` (oldest head first, then `.hg/localtags`) gives every name its last node and the nodes
// it had before in that file (its history). A later file wins unless the earlier one's node
// supersedes it: the later node is in the earlier history while the earlier node is not in the
// later history, or both supersede each other and the earlier history is longer (its "rank").

/** A tag's node and the nodes it had before (40 lower-case hex digits each). */
export interface TagHistory {
  node: string;
  hist: string[];
}

/** tags._readtags: `<40 hex> <name>` lines in file order; other lines are skipped, as hg warns and skips them. */
export function readTagLines(text: string): Map<string, TagHistory> {
  const nodes = new Map<string, string[]>();
  for (const line of text.split(/\r\n|[\n\r]/)) {
    const m = /^([0-9a-fA-F]{40}) (.+)$/.exec(line);
    if (!m) continue;
    const name = m[2]!.trim();
    if (!name) continue;
    const list = nodes.get(name);
    if (list) list.push(m[1]!.toLowerCase());
    else nodes.set(name, [m[1]!.toLowerCase()]);
  }
  const out = new Map<string, TagHistory>();
  for (const [name, list] of nodes) out.set(name, { node: list[list.length - 1]!, hist: list.slice(0, -1) });
  return out;
}

/** tags._updatetags: merges one file's tags into `all` (the files read so far). */
export function mergeTagLines(file: ReadonlyMap<string, TagHistory>, all: Map<string, TagHistory>): void {
  for (const [name, entry] of file) {
    const before = all.get(name);
    if (!before) {
      all.set(name, { node: entry.node, hist: [...entry.hist] });
      continue;
    }
    let node = entry.node;
    const hist = [...entry.hist];
    if (
      before.node !== node &&
      before.hist.includes(node) &&
      (!hist.includes(before.node) || before.hist.length > hist.length)
    )
      node = before.node;
    for (const n of before.hist) if (!hist.includes(n)) hist.push(n);
    all.set(name, { node, hist });
  }
}
