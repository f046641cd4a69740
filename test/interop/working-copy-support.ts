// How interop tests compare a working copy with hg's: the tree on disk and hg's dirstate.
import { createHash } from 'node:crypto';
import { lstatSync, readFileSync, readdirSync, readlinkSync } from 'node:fs';

/**
 * Every entry below dir except the top .hg: type, exec bit, content hash or link target. Names are
 * read as bytes and keyed in `names` (latin1 keeps non-UTF-8 names apart; utf8 matches the
 * engine's event names).
 */
export function workingCopyTree(dir: string, names: 'latin1' | 'utf8' = 'latin1'): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (root: Buffer, base: string): void => {
    for (const name of readdirSync(root, { encoding: 'buffer' })) {
      const rel = base + name.toString(names);
      if (rel === '.hg') continue;
      const p = Buffer.concat([root, Buffer.from('/'), name]);
      const st = lstatSync(p);
      if (st.isSymbolicLink())
        out.set(rel, `link -> ${readlinkSync(p, { encoding: 'buffer' }).toString(names)}`);
      else if (st.isDirectory()) walk(p, rel + '/');
      else
        out.set(
          rel,
          `file ${st.mode & 0o111 ? 'x' : '-'} ${createHash('sha1').update(readFileSync(p)).digest('hex')}`,
        );
    }
  };
  walk(Buffer.from(dir), '');
  return out;
}

/** `hg debugstate --no-dates` output without the set/unset column (timing decides it, for hg as for Sluice). */
export function debugstateEntries(output: string): string[] {
  return output
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const f = l.trim().split(/\s+/);
      f.splice(3, 1); // set / unset
      return f.join(' ');
    });
}
