// A revision's text rebuilt by folding its whole delta chain before copying any byte (what
// mpatch.c's `mpatch_fold` does for hg): the text is a list of fragments (views into the base
// text and the decompressed deltas), each delta rewrites that list, and the result is copied once.
// Applying deltas one by one (Revlog.revision) copies the whole text per delta, which for a
// megabyte file at the end of a long chain is most of a checkout's CPU. Read through the reader's
// public API (deltaChain, chunk, checkNode), so the revlog room keeps its internals.
import { revlogError } from '../revlog/revlog-error';
import { patchedSize } from '../revlog/mpatch';
import { checkRevisionFlags, type Revlog } from '../revlog/revlog';

/** Fragments kept before the text is copied whole again (measured on the medium corpus's manifest). */
const MAX_FRAGMENTS = 512;

class Fragments {
  bufs: Uint8Array[] = [];
  offs: number[] = [];
  lens: number[] = [];
  length = 0;

  push(buf: Uint8Array, off: number, len: number): void {
    if (len <= 0) return;
    this.bufs.push(buf);
    this.offs.push(off);
    this.lens.push(len);
    this.length += len;
  }
}

/** Rewrites `text` with one delta (hunks `>lll start end len` in text coordinates, validated first). */
export function foldDelta(text: Fragments, delta: Uint8Array): Fragments {
  patchedSize(text.length, delta); // validates every hunk like mpatch.c (throws REVLOG bad-delta)
  const out = new Fragments();
  const dv = new DataView(delta.buffer, delta.byteOffset, delta.length);
  let fi = 0;
  let fpos = 0;
  const advance = (k: number, keep: boolean): void => {
    while (k > 0) {
      const take = Math.min(text.lens[fi]! - fpos, k);
      if (keep) out.push(text.bufs[fi]!, text.offs[fi]! + fpos, take);
      fpos += take;
      k -= take;
      if (fpos === text.lens[fi]) {
        fi++;
        fpos = 0;
      }
    }
  };
  let pos = 0;
  let last = 0;
  while (pos < delta.length) {
    const start = dv.getInt32(pos);
    const end = dv.getInt32(pos + 4);
    const n = dv.getInt32(pos + 8);
    pos += 12;
    advance(start - last, true);
    advance(end - start, false);
    out.push(delta, pos, n);
    pos += n;
    last = end;
  }
  advance(text.length - last, true);
  return out;
}

function materialize(f: Fragments): Buffer {
  const out = Buffer.allocUnsafe(f.length);
  let o = 0;
  for (let i = 0; i < f.bufs.length; i++) {
    const off = f.offs[i]!;
    out.set(f.bufs[i]!.subarray(off, off + f.lens[i]!), o);
    o += f.lens[i]!;
  }
  return out;
}

/** Revlog.revision(rev) with the chain folded; node id checked. */
export async function readRevisionFolded(revlog: Revlog, rev: number): Promise<Uint8Array> {
  const index = revlog.index;
  index.checkRev(rev);
  const problem = index.checkEntry(rev);
  if (problem)
    throw revlogError(revlog.name, problem.problem, `${revlog.name}: rev ${rev}: ${problem.message}`, {
      rev,
      reason: problem.message,
    });
  checkRevisionFlags(revlog.name, rev, index.revFlags(rev));
  const { chain } = revlog.deltaChain(rev);
  let text: Uint8Array = await revlog.chunk(chain[0]!);
  if (chain.length > 1) {
    let frags = new Fragments();
    frags.push(text, 0, text.length);
    for (let i = 1; i < chain.length; i++) {
      frags = foldDelta(frags, await revlog.chunk(chain[i]!));
      // Deltas with many hunks (manifests) fragment the text: past a bound, rewriting the list per
      // delta costs more than one copy, so the text is made whole again.
      if (frags.bufs.length > MAX_FRAGMENTS) {
        const whole = materialize(frags);
        frags = new Fragments();
        frags.push(whole, 0, whole.length);
      }
    }
    text = materialize(frags);
  }
  revlog.checkNode(rev, text);
  return text;
}

export { Fragments };
