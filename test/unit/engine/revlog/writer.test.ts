import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { Transaction, type RepoVfs } from '../../../../src/main/engine/repo/transaction';
import { encodeStorePath } from '../../../../src/main/engine/store/encoding';
import { FLAG_INLINE_DATA, NULL_NODE } from '../../../../src/main/engine/revlog/constants';
import { revisionNode } from '../../../../src/main/engine/revlog/index';
import { fullReplaceDelta } from '../../../../src/main/engine/revlog/mpatch';
import { Revlog } from '../../../../src/main/engine/revlog/revlog';
import { MAX_INLINE, RevlogWriter } from '../../../../src/main/engine/revlog/writer';
import type { RevlogFormat } from '../../../../src/main/engine/revlog/writer-options';
import { writeNewFiles, type NewFile } from '../../../../src/main/engine/revlog/write-io';
import { TextBufferPool } from '../../../../src/main/engine/revlog/text-cache';

const work = mkdtempSync(join(tmpdir(), 'sluice-revlog-writer-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
let n = 0;

function store(): RepoVfs {
  const hgDir = join(work, `r${n++}`, '.hg');
  mkdirSync(join(hgDir, 'store'), { recursive: true });
  return { hgDir, storeDir: join(hgDir, 'store'), encode: encodeStorePath };
}

/** Texts of a linear history, each the previous plus a line (deltas against p1, as hg sends them). */
function history(count: number, lineSize: number): Buffer[] {
  const out: Buffer[] = [];
  let text: Buffer = Buffer.alloc(0);
  for (let i = 0; i < count; i++) {
    let x = i * 2654435761;
    let line = `${i}:`;
    while (line.length < lineSize) {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      line += x.toString(36);
    }
    text = Buffer.concat([text, Buffer.from(line.slice(0, lineSize) + '\n')]);
    out.push(text);
  }
  return out;
}

async function writeHistory(
  vfs: RepoVfs,
  texts: Buffer[],
  format: RevlogFormat,
): Promise<{ tx: Transaction; nodes: Buffer[] }> {
  const tx = Transaction.open(vfs);
  const w = RevlogWriter.open({ radix: 'data/f.txt', tx, format });
  const nodes: Buffer[] = [];
  let prev: Buffer = Buffer.from(NULL_NODE);
  let prevText: Buffer = Buffer.alloc(0);
  for (const [i, t] of texts.entries()) {
    const node = revisionNode(t, prev, NULL_NODE);
    // the delta a changegroup carries: against p1 (one hunk replacing what changed)
    const delta = i === 0 ? fullReplaceDelta(0, t) : oneHunk(prevText, t);
    const r = await w.add({ node, p1: prev, p2: NULL_NODE, deltaBase: prev, delta, linkRev: i, flags: 0 });
    expect(r).toEqual({ rev: i, added: true });
    nodes.push(node);
    prev = node;
    prevText = t;
  }
  w.close();
  return { tx, nodes };
}

function oneHunk(base: Buffer, text: Buffer): Buffer {
  let p = 0;
  while (p < base.length && p < text.length && base[p] === text[p]) p++;
  let e = 0;
  while (
    e < base.length - p &&
    e < text.length - p &&
    base[base.length - 1 - e] === text[text.length - 1 - e]
  )
    e++;
  return hunk(p, base.length - e, text.subarray(p, text.length - e));
}

function hunk(start: number, end: number, data: Uint8Array): Buffer {
  const h = Buffer.alloc(12);
  h.writeInt32BE(start, 0);
  h.writeInt32BE(end, 4);
  h.writeInt32BE(data.length, 8);
  return Buffer.concat([h, data]);
}

const formats: [string, RevlogFormat][] = [
  ['sparse, zlib', { generalDelta: true, sparse: true, compression: 'zlib' }],
  ['sparse, zstd', { generalDelta: true, sparse: true, compression: 'zstd' }],
  ['no generaldelta', { generalDelta: false, sparse: false, compression: 'zlib' }],
];

describe.each(formats)('RevlogWriter (%s)', (_name, format) => {
  it('appends revisions the revlog reader reads back, node-checked; stays inline while small', async () => {
    const vfs = store();
    const texts = history(20, 40);
    const { tx, nodes } = await writeHistory(vfs, texts, format);
    await tx.close();
    const rl = await Revlog.open(join(vfs.storeDir, 'data/f.txt.i'));
    expect(rl.length).toBe(20);
    expect(rl.index.inline).toBe(true);
    expect(rl.index.generalDelta).toBe(format.generalDelta);
    for (let r = 0; r < 20; r++) {
      expect(Buffer.from(await rl.revision(r)).equals(texts[r]!)).toBe(true);
      expect(rl.index.nodeHex(r)).toBe(nodes[r]!.toString('hex'));
    }
    // later revisions are stored as deltas, not snapshots
    expect(rl.index.base(19)).not.toBe(19);
    await rl.close();
  });

  it('splits into .i + .d past 128 KiB of data, as hg does', async () => {
    const vfs = store();
    const texts = history(12, 20000); // incompressible-ish lines
    const { tx } = await writeHistory(vfs, texts, format);
    await tx.close();
    const rl = await Revlog.open(join(vfs.storeDir, 'data/f.txt.i'));
    expect(rl.index.inline).toBe(false);
    expect(rl.index.header & FLAG_INLINE_DATA).toBe(0);
    expect(readFileSync(join(vfs.storeDir, 'data/f.txt.i')).length).toBe(12 * 64);
    expect(readFileSync(join(vfs.storeDir, 'data/f.txt.d')).length).toBeGreaterThanOrEqual(MAX_INLINE);
    for (let r = 0; r < 12; r++) expect(Buffer.from(await rl.revision(r)).equals(texts[r]!)).toBe(true);
    await rl.close();
  });

  it('large texts built into buffers the text cache let go of stay exact', async () => {
    // 300 KB texts, a line inserted near the front each time, every third revision on a branch
    // off the one before its parent; the cache holds three texts, so buffers are reused all along
    const vfs = store();
    const tx = Transaction.open(vfs);
    const w = RevlogWriter.open({ radix: 'data/big', tx, format, cacheBytes: 1 << 20 });
    const texts = await addBranchyLargeTexts(w, 24, 97, 7);
    w.close();
    await tx.close();
    const rl = await Revlog.open(join(vfs.storeDir, 'data/big.i'));
    for (let r = 0; r < texts.length; r++)
      expect(Buffer.from(await rl.revision(r)).equals(texts[r]!)).toBe(true);
    await rl.close();
  });

  it('releaseTexts: the texts kept for deltas are let go, later bases are rebuilt from the stored chunks', async () => {
    // large texts (built into recycled buffers) on a branchy history; every fourth revision the
    // writer forgets its texts, so the next delta's base comes back from NAME.i / NAME.d
    const vfs = store();
    const tx = Transaction.open(vfs);
    const w = RevlogWriter.open({ radix: 'data/released', tx, format, cacheBytes: 1 << 20 });
    const texts = await addBranchyLargeTexts(w, 20, 98, 9, async (i, added) => {
      if (i % 4 !== 3) return;
      w.releaseTexts();
      expect(Buffer.from(await w.text(i - 1)).equals(added[i - 1]!)).toBe(true);
      w.releaseTexts();
    });
    w.releaseTexts();
    for (const r of [19, 0, 7]) expect(Buffer.from(await w.text(r)).equals(texts[r]!)).toBe(true);
    w.close();
    await tx.close();
    const rl = await Revlog.open(join(vfs.storeDir, 'data/released.i'));
    for (let r = 0; r < texts.length; r++)
      expect(Buffer.from(await rl.revision(r)).equals(texts[r]!)).toBe(true);
    await rl.close();
  });

  it('a full text is taken from the received delta, and copied before the cache keeps it', async () => {
    // rev 0 and rev 1 arrive as full texts (null delta base); rev 1 pushes rev 0 into the cache;
    // the buffer rev 0 came in is then overwritten: rev 2, a delta against rev 0, must still
    // rebuild and hash from the cache's own copy
    const vfs = store();
    const tx = Transaction.open(vfs);
    const w = RevlogWriter.open({ radix: 'data/h', tx, format });
    const [t0, t1] = history(2, 60);
    const n0 = revisionNode(t0!, NULL_NODE, NULL_NODE);
    const d0 = fullReplaceDelta(0, t0!);
    await w.add({
      node: n0,
      p1: NULL_NODE,
      p2: NULL_NODE,
      deltaBase: NULL_NODE,
      delta: d0,
      linkRev: 0,
      flags: 0,
    });
    const n1 = revisionNode(t1!, NULL_NODE, NULL_NODE);
    const d1 = fullReplaceDelta(0, t1!);
    await w.add({
      node: n1,
      p1: NULL_NODE,
      p2: NULL_NODE,
      deltaBase: NULL_NODE,
      delta: d1,
      linkRev: 1,
      flags: 0,
    });
    d0.fill(0x5a);
    const t2 = Buffer.concat([t0!, Buffer.from('more\n')]);
    const n2 = revisionNode(t2, n0, n1);
    await w.add({ node: n2, p1: n0, p2: n1, deltaBase: n0, delta: oneHunk(t0!, t2), linkRev: 2, flags: 0 });
    w.close();
    await tx.close();
    const rl = await Revlog.open(join(vfs.storeDir, 'data/h.i'));
    for (const [r, t] of [t0!, t1!, t2].entries())
      expect(Buffer.from(await rl.revision(r)).equals(t)).toBe(true);
    await rl.close();
  });

  it('abort removes what the transaction created', async () => {
    const vfs = store();
    const { tx } = await writeHistory(vfs, history(12, 20000), format);
    expect(existsSync(join(vfs.storeDir, 'data/f.txt.d'))).toBe(true);
    await tx.abort();
    expect(existsSync(join(vfs.storeDir, 'data/f.txt.i'))).toBe(false);
    expect(existsSync(join(vfs.storeDir, 'data/f.txt.d'))).toBe(false);
  });
});

/**
 * `count` 300 KB texts added to `w`: each inserts a line at `at` into its parent's text (filled
 * with `fill` at the root), every third one on a branch off the revision before its parent, so
 * deltas reach back past the last text added. `after(i, texts)` runs after revision i is added.
 */
async function addBranchyLargeTexts(
  w: RevlogWriter,
  count: number,
  fill: number,
  at: number,
  after?: (i: number, texts: Buffer[]) => Promise<void>,
): Promise<Buffer[]> {
  const lines = history(count, 100).map((t) => t.subarray(t.length - 101));
  const texts: Buffer[] = [];
  const nodes: Buffer[] = [];
  for (let i = 0; i < count; i++) {
    const p = i === 0 ? -1 : i % 3 === 0 ? i - 2 : i - 1;
    const base = p < 0 ? Buffer.alloc(300_000, fill) : texts[p]!;
    const text = Buffer.concat([base.subarray(0, at), lines[i]!, base.subarray(at)]);
    const p1 = p < 0 ? Buffer.from(NULL_NODE) : nodes[p]!;
    const node = revisionNode(text, p1, NULL_NODE);
    const delta = p < 0 ? fullReplaceDelta(0, text) : oneHunk(base, text);
    await w.add({ node, p1, p2: NULL_NODE, deltaBase: p1, delta, linkRev: i, flags: 0 });
    texts.push(text);
    nodes.push(node);
    await after?.(i, texts);
  }
  return texts;
}

describe('RevlogWriter refuses bad revisions', () => {
  it('unknown parent, unknown base, node mismatch, delta out of range', async () => {
    const vfs = store();
    const tx = Transaction.open(vfs);
    const w = RevlogWriter.open({ radix: 'data/g', tx, format: formats[0]![1] });
    const text = Buffer.from('hello\n');
    const node = revisionNode(text, NULL_NODE, NULL_NODE);
    const base = {
      p1: Buffer.from(NULL_NODE),
      p2: Buffer.from(NULL_NODE),
      deltaBase: Buffer.from(NULL_NODE),
      linkRev: 0,
      flags: 0,
    };
    const problem = (p: Promise<unknown>) =>
      p.then(
        () => 'ok',
        (e: { details?: { problem?: string } }) => e.details?.problem,
      );
    expect(
      await problem(w.add({ ...base, node, p1: Buffer.alloc(20, 7), delta: fullReplaceDelta(0, text) })),
    ).toBe('unknown-parent');
    expect(
      await problem(
        w.add({ ...base, node, deltaBase: Buffer.alloc(20, 7), delta: fullReplaceDelta(0, text) }),
      ),
    ).toBe('unknown-delta-base');
    expect(await problem(w.add({ ...base, node, delta: fullReplaceDelta(0, Buffer.from('other\n')) }))).toBe(
      'node-mismatch',
    );
    expect(await problem(w.add({ ...base, node, delta: hunk(0, 99, text) }))).toBe('bad-delta');
    expect(await problem(w.add({ ...base, node, delta: fullReplaceDelta(0, text) }))).toBe('ok');
    expect(w.length).toBe(1);
    w.close();
    await tx.abort();
  });
});

describe('RevlogWriter.seed (a stored text built by the caller)', () => {
  it('a delta on a seeded revision applies to the seeded text; a wrong seed fails the node check; an unknown node is not taken', async () => {
    const vfs = store();
    const format = formats[1]![1];
    const texts = history(6, 30);
    const { tx: tx0, nodes } = await writeHistory(vfs, texts.slice(0, 5), format);
    await tx0.close();
    const next = texts[5]!;
    const incoming = {
      node: revisionNode(next, nodes[4]!, NULL_NODE),
      p1: nodes[4]!,
      p2: Buffer.from(NULL_NODE),
      deltaBase: nodes[4]!,
      delta: oneHunk(texts[4]!, next),
      linkRev: 5,
      flags: 0,
    };
    const open = (): { tx: Transaction; w: RevlogWriter } => {
      const tx = Transaction.open(vfs);
      return { tx, w: RevlogWriter.open({ radix: 'data/f.txt', tx, format }) };
    };

    // the seeded text is what the delta applies to, not the stored one
    const wrong = open();
    expect(wrong.w.seed(nodes[4]!, Buffer.concat([texts[4]!, Buffer.from('x\n')]))).toBe(true);
    await expect(wrong.w.add(incoming)).rejects.toMatchObject({ details: { problem: 'node-mismatch' } });
    wrong.w.close();
    await wrong.tx.abort();

    const right = open();
    expect(right.w.seed(Buffer.alloc(20, 9), Buffer.from('nothing\n'))).toBe(false);
    expect(right.w.seed(nodes[4]!, Buffer.from(texts[4]!))).toBe(true);
    expect(await right.w.add(incoming)).toEqual({ rev: 5, added: true });
    right.w.close();
    await right.tx.close();
    const rl = await Revlog.open(join(vfs.storeDir, 'data/f.txt.i'));
    expect(Buffer.from(await rl.revision(5)).equals(next)).toBe(true);
    await rl.close();
  });
});

describe('RevlogWriter.close hand-over (new filelogs written in batches)', () => {
  it('writers sharing a text pool: a text stored as it is (NUL-led, incompressible) stays exact while its buffer serves the next writer', async () => {
    const vfs = store();
    const tx = Transaction.open(vfs);
    const pool = new TextBufferPool(1 << 20);
    const none = Buffer.from(NULL_NODE);
    // rev 0 a full text, rev 1 a whole other text through a delta: built into a pool buffer and,
    // as no delta is good, stored as a full text; NUL-led and random, it is stored uncompressed
    const write = async (radix: string, seed: number): Promise<Buffer[]> => {
      const w = RevlogWriter.open({ radix, tx, format: formats[0]![1], absent: true, textPool: pool });
      const t0 = Buffer.from(`first text of ${radix}\n`.repeat(300));
      const t1 = Buffer.concat([Buffer.from([0]), randomBytes(9_000 + seed)]);
      const n0 = revisionNode(t0, NULL_NODE, NULL_NODE);
      await w.add({
        node: n0,
        p1: none,
        p2: none,
        deltaBase: none,
        delta: fullReplaceDelta(0, t0),
        linkRev: 0,
        flags: 0,
      });
      const n1 = revisionNode(t1, n0, NULL_NODE);
      await w.add({
        node: n1,
        p1: n0,
        p2: none,
        deltaBase: n0,
        delta: hunk(0, t0.length, t1),
        linkRev: 1,
        flags: 0,
      });
      w.close((f) => handed.push(f)); // handed over unwritten, its text buffers back to the pool
      return [t0, t1];
    };
    const handed: NewFile[] = [];
    const a = await write('data/a.bin', 0);
    const freeAfterA = pool.freeBytes;
    expect(freeAfterA).toBeGreaterThan(0);
    const b = await write('data/b.bin', 7); // takes a's text buffer for its own rev 1
    expect(pool.freeBytes).toBeGreaterThan(0);
    tx.flushJournal();
    writeNewFiles(handed);
    await tx.close();
    for (const [name, texts] of [
      ['a.bin', a],
      ['b.bin', b],
    ] as const) {
      const rl = await Revlog.open(join(vfs.storeDir, `data/${name}.i`));
      for (let r = 0; r < 2; r++) expect(Buffer.from(await rl.revision(r)).equals(texts[r]!)).toBe(true);
      await rl.close();
    }
  });

  it('a new inline revlog is handed over unwritten, journaled; writeNewFiles makes it readable; an existing one is written at close', async () => {
    const vfs = store();
    const texts = history(3, 40);
    const { tx } = await writeHistory(vfs, texts, formats[0]![1]);
    await tx.close();
    const tx2 = Transaction.open(vfs);
    const fresh = RevlogWriter.open({ radix: 'data/new.txt', tx: tx2, format: formats[0]![1], absent: true });
    const text = Buffer.from('hello\n');
    const node = revisionNode(text, NULL_NODE, NULL_NODE);
    const none = Buffer.from(NULL_NODE);
    await fresh.add({
      node,
      p1: none,
      p2: none,
      deltaBase: none,
      delta: fullReplaceDelta(0, text),
      linkRev: 0,
      flags: 0,
    });
    const handed: NewFile[] = [];
    fresh.close((f) => handed.push(f));
    const path = join(vfs.storeDir, 'data/new.txt.i');
    expect(handed.map((f) => f.path)).toEqual([path]);
    expect(existsSync(path)).toBe(false);
    tx2.flushJournal();
    expect(readFileSync(join(vfs.storeDir, 'journal'), 'latin1')).toContain('data/new.txt.i\x000\n');
    writeNewFiles(handed);
    const rl = await Revlog.open(path);
    expect(Buffer.from(await rl.revision(0)).equals(text)).toBe(true);
    await rl.close();
    // a revlog that existed is appended to at close, never handed over
    const old = RevlogWriter.open({ radix: 'data/f.txt', tx: tx2, format: formats[0]![1] });
    const more = Buffer.concat([texts[2]!, Buffer.from('more\n')]);
    const p1 = revisionNode(
      texts[2]!,
      revisionNode(texts[1]!, revisionNode(texts[0]!, NULL_NODE, NULL_NODE), NULL_NODE),
      NULL_NODE,
    );
    const n3 = revisionNode(more, p1, NULL_NODE);
    await old.add({
      node: n3,
      p1,
      p2: none,
      deltaBase: p1,
      delta: oneHunk(texts[2]!, more),
      linkRev: 3,
      flags: 0,
    });
    old.close(() => {
      throw new Error('handed over an existing revlog');
    });
    await tx2.abort();
    expect(existsSync(path)).toBe(false);
  });
});

describe('the delayed changelog', () => {
  /** A changelog writer (its new revisions delayed, as in a pull's transaction) in `tx`. */
  const openChangelog = (tx: Transaction, opts: { cacheBytes?: number; delayMemory?: number } = {}) =>
    RevlogWriter.open({ radix: '00changelog', tx, format: formats[0]![1], changelog: true, ...opts });
  /** The writer finalized and closed, then the transaction committed. */
  async function commit(w: RevlogWriter, tx: Transaction): Promise<void> {
    w.finalize();
    w.close();
    await tx.close();
  }
  /** Adds texts[from..to) to a changelog writer, each a delta against a revision halfway back. */
  async function addChangesets(
    w: RevlogWriter,
    texts: Buffer[],
    nodes: Buffer[],
    from: number,
    to: number,
  ): Promise<void> {
    for (let i = from; i < to; i++) {
      const t = texts[i]!;
      const prev = i ? nodes[i - 1]! : Buffer.from(NULL_NODE);
      const node = revisionNode(t, prev, NULL_NODE);
      const base = i >= 2 ? i >> 1 : -1;
      const delta = fullReplaceDelta(base < 0 ? 0 : texts[base]!.length, t);
      const deltaBase = base < 0 ? Buffer.from(NULL_NODE) : nodes[base]!;
      await w.add({ node, p1: prev, p2: NULL_NODE, deltaBase, delta, linkRev: i, flags: 0 });
      nodes[i] = node;
    }
  }
  const randomTexts = (n: number): Buffer[] =>
    Array.from({ length: n }, (_, i) => Buffer.from(`${i}:${randomBytes(1024).toString('hex')}`));

  it('deltas against old changesets read their bases from the delayed entries in place, not by joining them all each time', async () => {
    const vfs = store();
    const tx = Transaction.open(vfs);
    // no text cache to speak of: the bases are read back from the delayed entries
    const w = openChangelog(tx, { cacheBytes: 0 });
    // 2 KiB of hex each: stored as ~1.1 KiB (zlib), 300 KB delayed in all
    const texts = randomTexts(300);
    const joined = vi.spyOn(Buffer, 'concat');
    try {
      // a changegroup may name any known revision as a delta base: here one halfway back
      await addChangesets(w, texts, [], 0, texts.length);
      // bytes joined while adding (an entry and its chunk, per revision): the old code also joined
      // the whole delayed changelog per base read (~300 × 150 KB on average)
      const bytes = joined.mock.results.reduce((n, r) => n + (r.value as Buffer).length, 0);
      expect(bytes).toBeLessThan(2 * 300 * 2200);
    } finally {
      joined.mockRestore();
    }
    await commit(w, tx);
    const rl = await Revlog.open(join(vfs.storeDir, '00changelog.i'));
    expect(Buffer.from(await rl.revision(299))).toEqual(texts[299]);
    expect(Buffer.from(await rl.revision(150))).toEqual(texts[150]);
  });

  it('past its memory bound the delayed changelog goes to 00changelog.i.a, read back from there, renamed over a new index', async () => {
    const vfs = store();
    const tx = Transaction.open(vfs);
    const w = openChangelog(tx, { cacheBytes: 0, delayMemory: 8192 });
    const texts = randomTexts(300);
    const nodes: Buffer[] = [];
    await addChangesets(w, texts, nodes, 0, 300);
    const pending = join(vfs.storeDir, '00changelog.i.a');
    expect(existsSync(pending)).toBe(true);
    expect(existsSync(join(vfs.storeDir, '00changelog.i'))).toBe(false); // nothing visible yet
    await commit(w, tx);
    expect(existsSync(pending)).toBe(false);
    const rl = await Revlog.open(join(vfs.storeDir, '00changelog.i'));
    expect(rl.length).toBe(300);
    for (const r of [0, 1, 150, 299]) expect(Buffer.from(await rl.revision(r))).toEqual(texts[r]);
  });

  it('onto an existing changelog: copied after it at finalize; an abort removes 00changelog.i.a and leaves the changelog as it was', async () => {
    const vfs = store();
    const texts = randomTexts(200);
    const nodes: Buffer[] = [];
    const tx1 = Transaction.open(vfs);
    const w1 = openChangelog(tx1);
    await addChangesets(w1, texts, nodes, 0, 20);
    await commit(w1, tx1);
    const index = join(vfs.storeDir, '00changelog.i');
    const before = readFileSync(index);
    const pending = join(vfs.storeDir, '00changelog.i.a');

    const tx2 = Transaction.open(vfs);
    const w2 = openChangelog(tx2, { cacheBytes: 0, delayMemory: 8192 });
    await addChangesets(w2, texts, nodes, 20, 120);
    expect(existsSync(pending)).toBe(true);
    await tx2.abort();
    expect(existsSync(pending)).toBe(false);
    expect(readFileSync(index)).toEqual(before);

    const tx3 = Transaction.open(vfs);
    const w3 = openChangelog(tx3, { cacheBytes: 0, delayMemory: 8192 });
    await addChangesets(w3, texts, nodes, 20, 200);
    await commit(w3, tx3);
    expect(existsSync(pending)).toBe(false);
    const rl = await Revlog.open(index);
    expect(rl.length).toBe(200);
    for (const r of [0, 19, 20, 100, 199]) expect(Buffer.from(await rl.revision(r))).toEqual(texts[r]);
  });
});
