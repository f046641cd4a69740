import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { isSluiceError, type SluiceError } from '../../../../src/main/engine/errors';
import {
  RevlogIndexParser,
  parseRevlogIndex,
  readRevlogIndex,
  revisionNode,
  RevlogIndex,
} from '../../../../src/main/engine/revlog/index';
import { NULL_NODE } from '../../../../src/main/engine/revlog/constants';
import {
  SHAPES,
  buildRevlog,
  entryOffsets,
  extractFixture,
  makeTempDir,
  removeDir,
} from '../../../support/revlog';

function revlogFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.i')) out.push(p);
    }
  };
  walk(dir);
  return out.sort();
}

function dump(ix: RevlogIndex): unknown[] {
  return Array.from({ length: ix.length }, (_, r) => ({ ...ix.entry(r), chunk: ix.chunkStart(r) }));
}

function parsePieces(name: string, pieces: Uint8Array[]): RevlogIndex {
  const p = new RevlogIndexParser(name);
  for (const piece of pieces) p.push(piece);
  return p.finish();
}

function catchRevlog(fn: () => unknown): SluiceError {
  try {
    fn();
  } catch (e) {
    if (isSluiceError(e)) return e;
    throw e;
  }
  throw new Error('expected a SluiceError');
}

let tmp: string;
const stores: Record<string, string> = {};
beforeAll(() => {
  tmp = makeTempDir('index');
  for (const shape of SHAPES) stores[shape] = join(extractFixture(shape, tmp), '.hg', 'store');
});
afterAll(() => removeDir(tmp));

describe('revlog index: fixture repos', () => {
  for (const shape of SHAPES) {
    it(`${shape}: every NAME.i parses the same whole, in 1-byte pieces and split inside every entry`, async () => {
      const files = revlogFiles(stores[shape]!);
      expect(files.length).toBeGreaterThan(15);
      for (const path of files) {
        const name = relative(stores[shape]!, path).replace(/\.i$/, '');
        const bytes = readFileSync(path);
        const whole = parseRevlogIndex(name, bytes);
        expect(whole.length).toBeGreaterThan(0);
        const ones = parsePieces(
          name,
          Array.from(bytes, (b) => Uint8Array.of(b)),
        );
        expect(dump(ones)).toEqual(dump(whole));
        // a cut at every offset 1..63 inside every entry (hg's test-parseindex.t reads 1 byte at a time)
        const offs = entryOffsets(bytes);
        for (let k = 1; k < 64; k += 7) {
          const cuts = offs.map((o) => o + k).filter((c) => c < bytes.length);
          const pieces: Uint8Array[] = [];
          let last = 0;
          for (const c of cuts) {
            pieces.push(bytes.subarray(last, c));
            last = c;
          }
          pieces.push(bytes.subarray(last));
          expect(dump(parsePieces(name, pieces))).toEqual(dump(whole));
        }
        const streamed = await readRevlogIndex(path, name, { readSize: 1 });
        expect(dump(streamed)).toEqual(dump(whole));
      }
    });
  }

  it('reads the header flags like hg: changelog inline only, filelogs inline+generaldelta, big.bin split', () => {
    const cl = parseRevlogIndex('00changelog', readFileSync(join(stores.default!, '00changelog.i')));
    expect([cl.version, cl.inline, cl.generalDelta]).toEqual([1, true, false]);
    const mf = parseRevlogIndex('00manifest', readFileSync(join(stores.default!, '00manifest.i')));
    expect([mf.inline, mf.generalDelta]).toEqual([true, true]);
    const big = parseRevlogIndex('data/big.bin', readFileSync(join(stores.default!, 'data/big.bin.i')));
    expect([big.inline, big.generalDelta, big.length, big.indexFileSize]).toEqual([false, true, 2, 128]);
    const legacy = parseRevlogIndex('00manifest', readFileSync(join(stores.legacy!, '00manifest.i')));
    expect(legacy.generalDelta).toBe(false);
    expect(cl.length).toBe(6);
    // linkrevs of the changelog are the revisions themselves; parents form a line
    for (let r = 0; r < cl.length; r++) {
      expect(cl.link(r)).toBe(r);
      expect(cl.p1(r)).toBe(r - 1);
      expect(cl.p2(r)).toBe(-1);
    }
    expect(cl.nodeHex(5)).toBe('6b9bea03c76d5cb93bf63ce8bc6e7ec154c6a6f1');
    expect(cl.rev(cl.node(3))).toBe(3);
    expect(cl.rev(new Uint8Array(20))).toBe(-1);
    expect(cl.rev(Buffer.alloc(20, 7))).toBeUndefined();
  });

  it('rev() answers the same before and after it builds its node map, a duplicated node by its first rev', () => {
    const cl = parseRevlogIndex('00changelog', readFileSync(join(stores.default!, '00changelog.i')));
    // the first lookups scan, the later ones go through the map: every node, twice over
    for (let round = 0; round < 2; round++)
      for (let r = cl.length - 1; r >= 0; r--) expect(cl.rev(Buffer.from(cl.node(r)))).toBe(r);
    expect(cl.rev(Buffer.alloc(20, 7))).toBeUndefined();
    // a hostile index repeating rev 0's node at rev 1 (big.bin: not inline, 64-byte entries)
    const bytes = Buffer.from(readFileSync(join(stores.default!, 'data/big.bin.i')));
    bytes.copy(bytes, 64 + 32, 32, 52);
    const dup = parseRevlogIndex('data/big.bin', bytes);
    const node = Buffer.from(dup.node(0));
    expect(dup.scanRev(node)).toBe(0);
    for (let i = 0; i < 8; i++) expect(dup.rev(node)).toBe(0);
  });

  it('scanRev on a long index counts only matches at a node field, the first one', () => {
    // 40 entries (above the entry-by-entry scan): entry r's node is 20 bytes of r + 1, and the
    // bytes of entry 1's node also stand before it, unaligned (across the end of entry 0 and the start of entry 1)
    const bytes = Buffer.alloc(40 * 64);
    for (let r = 0; r < 40; r++) bytes.fill(r + 1, r * 64 + 32, r * 64 + 52);
    bytes.fill(2, 52, 72);
    bytes.copy(bytes, 30 * 64 + 32, 7 * 64 + 32, 7 * 64 + 52);
    // the fields besides the nodes are not valid revlog data: made directly, not parsed
    const index = new RevlogIndex('data/long', 0x00020001, bytes, 40, null, bytes.length);
    expect(index.scanRev(Buffer.alloc(20, 2))).toBe(1);
    expect(index.scanRev(Buffer.alloc(20, 8))).toBe(7);
    expect(index.scanRev(Buffer.concat([Buffer.alloc(3), Buffer.alloc(20, 40)]), 3)).toBe(39);
    expect(index.scanRev(Buffer.alloc(20, 41))).toBeUndefined();
    expect(index.scanRev(Buffer.alloc(19, 2))).toBeUndefined();
  });
});

describe('revlog index: synthetic', () => {
  it('an entry straddling a 64 KiB read buffer (test-parseindex.t) parses with 64 KiB and odd read sizes', async () => {
    // inline revlog whose second-to-last entry starts 10 bytes before 65536
    const first = 65536 - 10 - 64; // bytes of rev 0's chunk ('u' + text)
    const rl = buildRevlog(
      [{ text: 'x'.repeat(first - 1) }, { text: 'hello\n', full: true }, { text: 'world\n', full: true }],
      {
        compression: 'none',
      },
    );
    const offs = entryOffsets(rl.index);
    expect(offs[1]).toBe(65536 - 10);
    const dir = makeTempDir('straddle');
    try {
      const path = join(dir, 'x.i');
      writeFileSync(path, rl.index);
      for (const readSize of [65536, 4096, 1000, 63, 1]) {
        const ix = await readRevlogIndex(path, 'x', { readSize });
        expect(ix.length).toBe(3);
        expect(ix.nodeHex(1)).toBe(rl.nodes[1]!.toString('hex'));
        expect(ix.chunkStart(2)).toBe(offs[2]! + 64);
      }
    } finally {
      removeDir(dir);
    }
  });

  it('an empty or missing NAME.i is an empty revlog', async () => {
    expect(parseRevlogIndex('e', new Uint8Array(0)).length).toBe(0);
    expect((await readRevlogIndex('/nonexistent/sluice/x.i', 'x')).length).toBe(0);
  });

  it('rejects unknown versions and flags with hg messages', () => {
    const base = buildRevlog([{ text: 'a\n' }]).index;
    const withHeader = (h: number): Buffer => {
      const b = Buffer.from(base);
      b.writeUInt32BE(h >>> 0, 0);
      return b;
    };
    let e = catchRevlog(() => parseRevlogIndex('data/a', withHeader(0x00010002)));
    expect(e.code).toBe('REVLOG');
    expect(e.message).toBe('unknown version (2) in revlog data/a');
    expect(e.details).toMatchObject({ revlog: 'data/a', problem: 'unknown-version' });
    e = catchRevlog(() => parseRevlogIndex('data/a', withHeader(0x00050001)));
    // hg shows all header flags (_format_flags >> 16), not only the unknown bit
    expect(e.message).toBe('unknown flags (0x05) in version 1 revlog data/a');
    expect(e.details).toMatchObject({ problem: 'unknown-flags' });
    e = catchRevlog(() => parseRevlogIndex('data/a', withHeader(0x0000dead)));
    expect(e.details).toMatchObject({ problem: 'unknown-version' });
    // with fewer than 64 bytes the header is still checked first
    e = catchRevlog(() => parseRevlogIndex('data/a', withHeader(0x00010007).subarray(0, 10)));
    expect(e.details).toMatchObject({ problem: 'unknown-version' });
  });

  it('a truncated last entry is an error naming the revision, inline or split', () => {
    const inline = buildRevlog([{ text: 'a\n' }, { text: 'b\n' }, { text: 'c\n' }]);
    for (const cut of [1, 10, 63, 64, 65]) {
      const e = catchRevlog(() =>
        parseRevlogIndex('data/a', inline.index.subarray(0, inline.index.length - cut)),
      );
      expect(e.code).toBe('REVLOG');
      expect(e.details).toMatchObject({ revlog: 'data/a', problem: 'truncated-entry', rev: 2 });
    }
    const split = buildRevlog([{ text: 'a\n' }, { text: 'b\n' }, { text: 'c\n' }], { inline: false });
    const e = catchRevlog(() => parseRevlogIndex('data/a', split.index.subarray(0, 64 * 2 + 30)));
    expect(e.details).toMatchObject({ problem: 'truncated-entry', rev: 2 });
    expect(e.message).toMatch(/index data\/a is corrupted/);
  });

  it('parent out of range as in test-parseindex.t (p1 = 2 on a 2-revision log, 65536, -2)', () => {
    for (const poison of [2, 65536, -2]) {
      const rl = buildRevlog([{ text: 'abc\n' }, { text: 'abc\n\n' }], { inline: false });
      const b = Buffer.from(rl.index);
      b.writeInt32BE(poison, 24); // p1 of rev 0
      b.writeInt32BE(poison, 64 + 28); // p2 of rev 1
      const ix = parseRevlogIndex('00changelog', b);
      expect(ix.p1(0)).toBe(poison);
      const problems = ix.problems();
      expect(problems.map((p) => [p.rev, p.problem])).toEqual([
        [0, 'parent-out-of-range'],
        [1, 'parent-out-of-range'],
      ]);
      const e = catchRevlog(() => ix.validate());
      expect(e.code).toBe('REVLOG');
      expect(e.details).toMatchObject({ revlog: '00changelog', rev: 0, problem: 'parent-out-of-range' });
    }
  });

  it('base and link out of range, negative lengths', () => {
    const rl = buildRevlog([{ text: 'a\n' }, { text: 'b\n' }, { text: 'c\n' }], {
      inline: false,
      generalDelta: true,
    });
    const b = Buffer.from(rl.index);
    b.writeInt32BE(2, 64 + 16); // rev 1: base 2 > rev
    b.writeInt32BE(7, 128 + 20); // rev 2: link 7
    const ix = parseRevlogIndex('data/x', b);
    expect(ix.checkEntry(1)).toMatchObject({ problem: 'base-out-of-range' });
    expect(ix.checkEntry(1)!.message).toBe('corrupted revlog, revision base above revision: 1, 2');
    expect(ix.checkEntry(2)).toBeNull(); // linkrevs need the changelog length
    expect(ix.checkEntry(2, 3)).toMatchObject({ problem: 'link-out-of-range' });
    expect(catchRevlog(() => ix.validate()).details).toMatchObject({ rev: 1, problem: 'base-out-of-range' });

    const neg = Buffer.from(buildRevlog([{ text: 'a\n' }, { text: 'b\n' }]).index);
    neg.writeInt32BE(-5, 8); // inline: the parser must not try to skip -5 bytes
    expect(catchRevlog(() => parseRevlogIndex('data/y', neg)).details).toMatchObject({
      problem: 'bad-length',
      rev: 0,
    });
  });

  it('node ids: sha1(min(p1,p2) + max(p1,p2) + text)', () => {
    // hg-stream-formats.md §8.3: sha1(00*40 + "hello\n") = 2c186c8c…b8c9
    expect(revisionNode(Buffer.from('hello\n'), NULL_NODE, NULL_NODE).toString('hex')).toMatch(
      /^2c186c8c.*b8c9$/,
    );
    const a = Buffer.alloc(20, 1);
    const b = Buffer.alloc(20, 2);
    expect(revisionNode(Buffer.from('t'), a, b)).toEqual(revisionNode(Buffer.from('t'), b, a));
  });

  it('memory grows with the bytes that arrive, not with a size hint', () => {
    const p = new RevlogIndexParser('x', { sizeHint: 2 ** 40 });
    p.push(buildRevlog([{ text: 'a' }]).index);
    expect(p.finish().length).toBe(1);
  });
});

describe('node helpers (no view per call)', () => {
  it('nodeKey, nodeHex, nodeEquals, isNullAt and writeSortedParents agree with the node bytes', () => {
    // merges whose parents sort either way, a root, a revision with a null p1 and a real p2
    const rl = buildRevlog([
      { text: 'a\n' },
      { text: 'b\n', p1: -1 },
      { text: 'c\n', p1: 0, p2: 1 },
      { text: 'd\n', p1: 1, p2: 0 },
      { text: 'e\n', p1: -1, p2: 2 },
    ]);
    const ix = parseRevlogIndex('t', rl.index);
    const out = Buffer.alloc(40);
    for (let r = 0; r < ix.length; r++) {
      const node = rl.nodes[r]!;
      expect(ix.nodeKey(r)).toBe(node.toString('latin1'));
      expect(ix.nodeHex(r)).toBe(node.toString('hex'));
      expect(ix.nodeEquals(r, node)).toBe(true);
      expect(ix.nodeEquals(r, rl.nodes[(r + 1) % ix.length]!)).toBe(false);
      expect(ix.isNullAt(r)).toBe(false);
      const parents = [ix.p1(r), ix.p2(r)].map((p) => (p < 0 ? NULL_NODE : rl.nodes[p]!));
      parents.sort(Buffer.compare);
      out.fill(0xff);
      ix.writeSortedParents(r, out);
      expect(out).toEqual(Buffer.concat(parents));
      // what the node was computed from: sha1(sorted parents + text)
      expect(revisionNode(rl.texts[r]!, parents[0]!, parents[1]!)).toEqual(node);
    }
    const zero = Buffer.from(rl.index);
    zero.fill(0, 32, 52); // rev 0's node field
    expect(parseRevlogIndex('t', zero).isNullAt(0)).toBe(true);
  });
});
