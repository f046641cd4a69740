import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, writeFileSync, truncateSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { encodeStorePath } from '../../../../src/main/engine/store/encoding';
import { isSluiceError } from '../../../../src/main/engine/errors';
import { Revlog } from '../../../../src/main/engine/revlog/revlog';
import { prepareZstd } from '../../../../src/main/engine/codec/revlog-zstd';
import {
  parseChangelogEntry,
  parseManifest,
  copySource,
  parseFilelogMeta,
} from '../../../../src/main/engine/revlog/texts';
import {
  SHAPES,
  buildRevlog,
  extractFixture,
  makeTempDir,
  missing,
  prng,
  removeDir,
  skipNote,
} from '../../../support/revlog';

let tmp: string;
const repos: Record<string, string> = {};
beforeAll(() => {
  tmp = makeTempDir('revlog');
  for (const shape of SHAPES) repos[shape] = extractFixture(shape, tmp);
});
afterAll(() => removeDir(tmp));

async function problem(
  p: Promise<unknown>,
): Promise<{ code: string; problem?: string; rev?: number; message: string }> {
  try {
    await p;
  } catch (e) {
    if (!isSluiceError(e)) throw e;
    const d = (e.details ?? {}) as { problem?: string; rev?: number };
    return { code: e.code, problem: d.problem, rev: d.rev, message: e.message };
  }
  throw new Error('expected a SluiceError');
}

const store = (shape: string): string => join(repos[shape]!, '.hg', 'store');

/** A built non-inline revlog written as big.i and big.d in `dir`, opened for streaming reads. */
function writeSplitRevlog(
  dir: string,
  built: { index: Buffer; data: Buffer },
): { dataPath: string; open: () => Promise<Revlog> } {
  const indexPath = join(dir, 'big.i');
  const dataPath = join(dir, 'big.d');
  writeFileSync(indexPath, built.index);
  writeFileSync(dataPath, built.data);
  return { dataPath, open: () => Revlog.open(indexPath, { io: 'sync', wholeFileLimit: 1 << 16 }) };
}

/**
 * Streams `rev` from a freshly opened revlog and cuts the data file to `cutAt(rl)` bytes once the
 * first piece has arrived (a reader that decompressed the chunk whole first would not notice);
 * returns the typed failure.
 */
async function cutAfterFirstPiece(
  open: () => Promise<Revlog>,
  dataPath: string,
  rev: number,
  cutAt: (rl: Revlog) => number,
): ReturnType<typeof problem> {
  const rl = await open();
  let first = true;
  try {
    return await problem(
      rl.streamRevision(rev, () => {
        if (first) truncateSync(dataPath, cutAt(rl));
        first = false;
      }),
    );
  } finally {
    await rl.close();
  }
}

describe('Revlog: fixture repos', () => {
  for (const shape of SHAPES) {
    it(`${shape}: changelog, manifest and filelogs read back, node ids checked`, async () => {
      const cl = await Revlog.open(join(store(shape), '00changelog.i'), { name: '00changelog' });
      const mf = await Revlog.open(join(store(shape), '00manifest.i'), { name: '00manifest' });
      expect(cl.length).toBe(6);
      const entries = [];
      for (let r = 0; r < cl.length; r++) entries.push(parseChangelogEntry(await cl.revision(r)));
      expect(entries[0]!.files).toContain('README.txt');
      expect(entries[0]!.time).toBe(1700000000);
      expect(entries[4]!.files).toEqual(['big.bin']);
      expect(entries[4]!.description).toBe('big');
      // every changeset's manifest parses and its files' filelogs hold the named nodes
      for (const e of entries) {
        const mrev = mf.index.rev(e.manifest)!;
        expect(mrev).toBeGreaterThanOrEqual(0);
        const files: [string, string, string][] = [];
        parseManifest(await mf.revision(mrev), (m) => files.push([m.path, m.nodeHex, m.flag]));
        expect(files.length).toBeGreaterThanOrEqual(19); // .hgtags arrives in the last changeset
      }
      const big = await Revlog.open(join(store(shape), 'data/big.bin.i'), { name: 'data/big.bin' });
      expect(big.index.inline).toBe(false);
      const t0 = await big.revision(0);
      const t1 = await big.revision(1);
      expect(t0.length).toBe(140000);
      expect(Buffer.from(t1.subarray(1000, 1007)).toString()).toBe('CHANGED');
      expect(await big.dataFileSize()).toBe(big.index.end(1));
      for (const rl of [cl, mf, big]) await rl.close();
    });
  }

  it.skipIf(missing('hg'))(
    `texts equal what hg reads for every revision of every revlog (differential)${skipNote('hg')}`,
    async () => {
      // one hg Python process dumps sha1(rawdata) of every revision of the changelog, manifest and filelogs
      const script = `
import sys, hashlib
from mercurial import hg, ui as uimod
repo = hg.repository(uimod.ui.load(), sys.argv[1].encode())
logs = [(b'00changelog', repo.changelog), (b'00manifest', repo.manifestlog.getstorage(b''))]
for f in sorted(repo.store.fncache):
    if f.startswith(b'data/') and f.endswith(b'.i'):
        logs.append((f[:-2], repo.file(f[5:-2])))
for name, rl in logs:
    for r in rl:
        print(name.hex(), r, hashlib.sha1(rl.rawdata(rl.node(r))).hexdigest())
`;
      for (const shape of SHAPES) {
        const res = spawnSync('/usr/bin/python3', ['-c', script, repos[shape]!], {
          encoding: 'utf8',
          env: { ...process.env, HGRCPATH: '' },
        });
        expect(res.status, res.stderr).toBe(0);
        const lines = res.stdout.trim().split('\n');
        expect(lines.length).toBe(6 + 6 + 24);
        for (const line of lines) {
          const [nameHex, rev, sha] = line.split(' ');
          const name = Buffer.from(nameHex!, 'hex').toString('latin1');
          const rl = await Revlog.open(join(store(shape), encodeStorePath(name + '.i')), { name });
          const text = await rl.revision(Number(rev));
          expect(createHash('sha1').update(text).digest('hex'), `${shape} ${name} ${rev}`).toBe(sha);
          await rl.close();
        }
      }
    },
  );

  it('reads with any index read size and tiny data windows', async () => {
    const path = join(store('default'), 'data/big.bin.i');
    const rl = await Revlog.open(path, {
      name: 'data/big.bin',
      wholeFileLimit: 0,
      readSize: 1,
      windowSize: 7,
    });
    expect((await rl.revision(1)).length).toBe(140000);
    const sync = await Revlog.open(path, { name: 'data/big.bin', io: 'sync', windowSize: 100 });
    expect(Buffer.from(await sync.revision(1)).equals(Buffer.from(await rl.revision(1)))).toBe(true);
    await rl.close();
    await sync.close();
  });
});

describe('Revlog: synthetic chains', () => {
  const rnd = prng(7);
  const texts: string[] = [];
  let t = '';
  for (let i = 0; i < 60; i++) {
    const lines = t.split('\n');
    lines.splice(
      Math.floor(rnd() * lines.length),
      rnd() < 0.3 ? 1 : 0,
      `line ${i} ${'x'.repeat(Math.floor(rnd() * 80))}`,
    );
    t = lines.join('\n');
    texts.push(t);
  }
  for (const inline of [true, false]) {
    for (const generalDelta of [true, false]) {
      for (const compression of ['none', 'zlib', 'auto'] as const) {
        it(`inline=${inline} generaldelta=${generalDelta} ${compression}: every revision, in and out of order`, async () => {
          const revs = texts.map((text, i) => ({
            text,
            // generaldelta: deltas against older revs too, and a full snapshot now and then
            ...(generalDelta && i > 2 && i % 5 === 0 ? { base: i - 3 } : {}),
            ...(i % 17 === 0 ? { full: true } : {}),
          }));
          const built = buildRevlog(revs, { inline, generalDelta, compression });
          const rl = Revlog.fromBytes('data/t', built.index, inline ? undefined : built.data, {
            cacheBytes: 4096,
          });
          for (let r = rl.length - 1; r >= 0; r--)
            expect(Buffer.from(await rl.revision(r)).toString('latin1')).toBe(texts[r]);
          for (let r = 0; r < rl.length; r++)
            expect(Buffer.from(await rl.revision(r)).toString('latin1')).toBe(texts[r]);
          expect(rl.deltaChain(40).chain.at(-1)).toBe(40);
          // views (reused buffers) in order, at random, interleaved with owned texts
          const view = Revlog.fromBytes('data/t', built.index, inline ? undefined : built.data, {
            cacheBytes: 4096,
          });
          for (let r = 0; r < view.length; r++)
            expect(Buffer.from(await view.revisionView(r)).toString('latin1')).toBe(texts[r]);
          const owned: Uint8Array[] = [];
          for (let k = 0; k < 80; k++) {
            const r = Math.floor(rnd() * view.length);
            if (k % 3 === 0) owned[r] = await view.revision(r);
            else expect(Buffer.from(await view.revisionView(r)).toString('latin1')).toBe(texts[r]);
          }
          owned.forEach((o, r) => expect(Buffer.from(o).toString('latin1')).toBe(texts[r]));
          // streamed in pieces (a large file's checkout): the same bytes, the same size
          for (let r = 0; r < view.length; r++) {
            const pieces: Buffer[] = [];
            const size = await view.streamRevision(r, (p) => pieces.push(Buffer.from(p)));
            expect(Buffer.concat(pieces).toString('latin1')).toBe(texts[r]);
            expect(size).toBe(texts[r]!.length);
          }
        });
      }
    }
  }
});

describe('Revlog.streamRevision of a full snapshot', () => {
  // A large binary is stored as one full snapshot: it must reach the sink while its stored chunk
  // is still being read (never decompressed whole), in bounded pieces, for every chunk encoding.
  const size = 6 << 20;
  const text = Buffer.alloc(size);
  for (let i = 0, x = 1; i < size; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    text[i] = i % 4096 < 2048 ? x >>> 24 : 0x61 + (i % 23); // half noise, half text
  }

  for (const compression of ['zlib', 'zstd', 'none'] as const) {
    it(`${compression}: the text in pieces of at most 1 MiB, delivered before the chunk's end is read`, async () => {
      await prepareZstd();
      const built = buildRevlog([{ text }, { text: 'small\n' }], { inline: false, compression });
      const dir = makeTempDir('stream');
      try {
        const { dataPath, open } = writeSplitRevlog(dir, built);
        const rl = await open();
        expect(rl.index.base(0)).toBe(0);
        expect(rl.index.compressedLength(0)).toBeGreaterThan(2 << 20); // read in several pieces
        const pieces: number[] = [];
        const sha = createHash('sha1');
        expect(
          await rl.streamRevision(0, (p) => {
            pieces.push(p.length);
            sha.update(p);
          }),
        ).toBe(size);
        expect(sha.digest().equals(createHash('sha1').update(text).digest())).toBe(true);
        expect(Math.max(...pieces)).toBeLessThanOrEqual(1 << 20);
        expect(pieces.length).toBeGreaterThanOrEqual(size >> 20);
        await rl.close();
        // the stored chunk's second half is cut off once the first piece has arrived: a reader
        // that had decompressed it whole would not notice; a streaming one fails reading it
        expect(await cutAfterFirstPiece(open, dataPath, 0, () => built.data.length >> 1)).toMatchObject({
          code: 'REVLOG',
          problem: 'partial-read',
        });
      } finally {
        removeDir(dir);
      }
    });
  }

  it('a corrupt stream, a lying size and a wrong node fail typed, after the pieces before them', async () => {
    const dir = makeTempDir('stream');
    try {
      const built = buildRevlog([{ text }], { inline: false, compression: 'zlib' });
      const write = (index: Buffer, data: Buffer): Revlog => Revlog.fromBytes('data/big', index, data);
      // bytes flipped mid-stream
      const bad = Buffer.from(built.data);
      for (let i = bad.length >> 1; i < (bad.length >> 1) + 64; i++) bad[i] ^= 0x55;
      expect(await problem(write(built.index, bad).streamRevision(0, () => {}))).toMatchObject({
        code: 'REVLOG',
        problem: 'decompress',
        rev: 0,
      });
      // an index that says the text is 2 MiB: the decoder stops there, whatever it would produce
      const small = Buffer.from(built.index);
      small.writeInt32BE(2 << 20, 12);
      expect(await problem(write(small, built.data).streamRevision(0, () => {}))).toMatchObject({
        problem: 'decompress',
        rev: 0,
      });
      // a different node: every byte is handed over, then the mismatch
      const node = Buffer.from(built.index);
      node[32] ^= 1;
      let seen = 0;
      expect(
        await problem(write(node, built.data).streamRevision(0, (p) => (seen += p.length))),
      ).toMatchObject({ problem: 'node-mismatch', rev: 0 });
      expect(seen).toBe(size);
    } finally {
      removeDir(dir);
    }
  });
});

describe('Revlog.streamRevisions of a delta chain', () => {
  // A large file that was edited: a snapshot and deltas (generaldelta: each on the previous). The
  // snapshot must be decompressed as a stream with the folded deltas applied on the way, for one
  // revision or several in one pass, never decoded whole.
  const size = 6 << 20;
  const base = Buffer.alloc(size);
  for (let i = 0, x = 7; i < size; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    base[i] = i % 4096 < 2048 ? x >>> 24 : 0x61 + (i % 23);
  }
  const texts = [base];
  for (let r = 1; r <= 3; r++) {
    const prev = texts[r - 1]!;
    // an edit straddling a 1 MiB read boundary, growing or (rev 2) shrinking the text
    const at = r * (1 << 20) - 100;
    const cut = r === 2 ? 3000 : 300;
    texts.push(
      Buffer.concat([prev.subarray(0, at), Buffer.from(`edit ${r} `.repeat(50)), prev.subarray(at + cut)]),
    );
  }

  for (const compression of ['zlib', 'zstd', 'none'] as const) {
    it(`${compression}: each revision and all in one pass, the same bytes, while the snapshot is still being read`, async () => {
      await prepareZstd();
      const built = buildRevlog(
        texts.map((text) => ({ text })),
        { inline: false, generalDelta: true, compression },
      );
      const dir = makeTempDir('stream-chain');
      try {
        const { dataPath, open } = writeSplitRevlog(dir, built);
        const rl = await open();
        expect(rl.deltaChain(3).chain).toEqual([0, 1, 2, 3]);
        for (let r = 0; r < texts.length; r++) {
          const pieces: Buffer[] = [];
          expect(await rl.streamRevision(r, (p) => pieces.push(Buffer.from(p)))).toBe(texts[r]!.length);
          expect(Buffer.concat(pieces).equals(texts[r]!)).toBe(true);
          expect(Math.max(...pieces.map((p) => p.length))).toBeLessThanOrEqual(1 << 20);
        }
        const all = texts.map(() => createHash('sha1'));
        const sizes = await rl.streamRevisions(
          [1, 2, 3, 0],
          [1, 2, 3, 0].map((r) => (p) => all[r]!.update(p)),
          0,
        );
        expect(sizes).toEqual([1, 2, 3, 0].map((r) => texts[r]!.length));
        all.forEach((h, r) =>
          expect(h.digest().equals(createHash('sha1').update(texts[r]!).digest())).toBe(true),
        );
        await rl.close();
        // the snapshot's stored chunk cut in half once the tip's first piece has arrived: a
        // reader that decompressed the snapshot whole first would not notice
        expect(
          await cutAfterFirstPiece(open, dataPath, 3, (rl) => rl.index.compressedLength(0) >> 1),
        ).toMatchObject({ code: 'REVLOG', problem: 'partial-read' });
      } finally {
        removeDir(dir);
      }
    });
  }

  it('a corrupt delta and a wrong node fail typed with the revision; chains from two snapshots are refused', async () => {
    const built = buildRevlog([...texts.map((text) => ({ text })), { text: 'small', full: true }], {
      inline: false,
      generalDelta: true,
      compression: 'zlib',
    });
    const node = Buffer.from(built.index);
    node[2 * 64 + 32] ^= 1;
    let seen = 0;
    const wrong = Revlog.fromBytes('data/big', node, built.data);
    expect(await problem(wrong.streamRevision(2, (p) => (seen += p.length)))).toMatchObject({
      problem: 'node-mismatch',
      rev: 2,
    });
    expect(seen).toBe(texts[2]!.length);
    // rev 1's delta says it replaces bytes past the snapshot's end
    const bad = Buffer.from(built.index);
    bad.writeInt32BE(1000, 12); // the snapshot's size in the index: 1000 bytes
    expect(
      await problem(Revlog.fromBytes('data/big', bad, built.data).streamRevision(3, () => {})),
    ).toMatchObject({
      code: 'REVLOG',
      problem: 'bad-delta',
      rev: 1,
    });
    const rl = Revlog.fromBytes('data/big', built.index, built.data);
    await expect(rl.streamRevisions([3, 4], [() => {}, () => {}])).rejects.toThrow(/different snapshots/);
    // a snapshot whose size the index leaves unknown (-1, tolerated as hg's rawsize()): decoded
    // first, the chain's texts the same
    const small = ['one\ntwo\n', 'one\n2\ntwo\n', 'zero\none\n2\ntwo\nthree\n'];
    const sized = buildRevlog(
      small.map((text) => ({ text })),
      { inline: false, generalDelta: true, compression: 'zlib' },
    );
    sized.index.writeInt32BE(-1, 12);
    const unsized = Revlog.fromBytes('data/small', sized.index, sized.data);
    for (let r = 0; r < small.length; r++) {
      const pieces: Buffer[] = [];
      expect(await unsized.streamRevision(r, (p) => pieces.push(Buffer.from(p)))).toBe(small[r]!.length);
      expect(Buffer.concat(pieces).toString('latin1')).toBe(small[r]);
    }
  });
});

describe('Revlog.revisionViewNow', () => {
  it('builds from memory without a promise, the same texts and errors as revisionView; undefined when a chunk is on disk', async () => {
    const texts = Array.from({ length: 30 }, (_, i) => `line ${i}\n`.repeat(200 + 10 * i));
    const built = buildRevlog(
      texts.map((text, i) => ({ text, ...(i % 7 === 0 ? { full: true } : {}) })),
      { inline: false, generalDelta: true },
    );
    const rl = Revlog.fromBytes('data/t', built.index, built.data);
    for (let r = 0; r < rl.length; r++)
      expect(Buffer.from(rl.revisionViewNow(r)!).toString('latin1')).toBe(texts[r]);
    // a wrong node: thrown synchronously, as revisionView rejects
    const bad = Buffer.from(built.index);
    bad[5 * 64 + 40]! ^= 1;
    const broken = Revlog.fromBytes('data/t', bad, built.data);
    const viaPromise = await problem(broken.revisionView(5));
    let thrown: unknown;
    try {
      broken.revisionViewNow(5);
    } catch (e) {
      thrown = e;
    }
    expect(isSluiceError(thrown) && (thrown.details as { problem?: string }).problem).toBe(
      viaPromise.problem,
    );
    expect(viaPromise.problem).toBe('node-mismatch');
    // read through a small window from disk: nothing in memory before the first read
    const dir = join(tmp, 'view-now');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 't.i'), built.index);
    writeFileSync(join(dir, 't.d'), built.data);
    const disk = await Revlog.open(join(dir, 't.i'), { wholeFileLimit: 0, windowSize: 64 });
    expect(disk.revisionViewNow(3)).toBeUndefined();
    expect(Buffer.from(await disk.revisionView(3)).toString('latin1')).toBe(texts[3]);
    await disk.close();
  });
});

describe('Revlog.holdChunks', () => {
  it('builds take the lent decoded chunks instead of decoding them, in memory and from disk', async () => {
    const texts = Array.from({ length: 20 }, (_, i) => `line ${i}\n`.repeat(100 + 10 * i));
    const built = buildRevlog(
      texts.map((text) => ({ text })),
      { inline: false, generalDelta: true, compression: 'auto' },
    );
    const reader = Revlog.fromBytes('data/t', built.index, built.data);
    const lent = new Map<number, Uint8Array>();
    for (let r = 1; r <= 12; r++) lent.set(r, await reader.chunk(r));
    // a valid delta that is not rev 5's: rev 4's text replaced by one of rev 5's size, so the
    // later deltas apply and the build ends at the node check
    const other = Buffer.from(texts[5]!.toUpperCase(), 'latin1');
    const wrong = Buffer.alloc(12 + other.length);
    wrong.writeInt32BE(texts[4]!.length, 4);
    wrong.writeInt32BE(other.length, 8);
    other.copy(wrong, 12);
    const dir = join(tmp, 'hold-chunks');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 't.i'), built.index);
    writeFileSync(join(dir, 't.d'), built.data);
    const opens = [
      async () => Revlog.fromBytes('data/t', built.index, built.data),
      () => Revlog.open(join(dir, 't.i'), { wholeFileLimit: 0, windowSize: 64 }),
    ];
    for (const open of opens) {
      const rl = await open();
      rl.holdChunks(lent);
      expect(rl.deltaChain(12).chain.length).toBe(13);
      expect(Buffer.from(await rl.revision(12)).toString('latin1')).toBe(texts[12]);
      rl.clearCache(); // ends the loan too
      rl.holdChunks(new Map([...lent, [5, wrong]]));
      expect((await problem(rl.revision(12))).problem).toBe('node-mismatch');
      rl.holdChunks(undefined);
      rl.clearCache();
      expect(Buffer.from(await rl.revision(12)).toString('latin1')).toBe(texts[12]);
      await rl.close();
    }
  });
});

describe('Revlog: build buffers reused from one revlog to the next', () => {
  it("a closed revlog's buffers go to the next one, never those of a revlog still open", async () => {
    const texts = (tag: string) => Array.from({ length: 6 }, (_, i) => `${tag} ${i} `.repeat(300 + 40 * i));
    const build = (tag: string) => {
      const b = buildRevlog(
        texts(tag).map((text) => ({ text })),
        { inline: false, generalDelta: true },
      );
      return Revlog.fromBytes(`data/${tag}`, b.index, b.data);
    };
    const a = build('a');
    const held = await a.revisionView(a.length - 1);
    const heldText = Buffer.from(held).toString('latin1');
    expect(heldText).toBe(texts('a').at(-1));
    // b builds texts into buffers of its own, then hands them on when it closes; c takes them
    const b = build('b');
    for (let r = 0; r < b.length; r++) await b.revisionView(r);
    await b.close();
    const c = build('c');
    for (let r = 0; r < c.length; r++)
      expect(Buffer.from(await c.revisionView(r)).toString('latin1')).toBe(texts('c')[r]);
    // a's view (valid until a's next call) was not overwritten by c
    expect(Buffer.from(held).toString('latin1')).toBe(heldText);
    await a.close();
  });
});

describe('Revlog: long chains on disk', () => {
  it('1,000-delta chains fold into one patch and read in dense spans through a small window', async () => {
    const rnd = prng(11);
    const texts: string[] = [];
    let t = 'start\n';
    for (let i = 0; i < 1000; i++) {
      const lines = t.split('\n');
      lines.splice(Math.floor(rnd() * lines.length), rnd() < 0.3 ? 1 : 0, `line ${i}`);
      t = lines.join('\n');
      texts.push(t);
    }
    // every rev a delta against its predecessor, every 100th against the one before (a shared base)
    const revs = texts.map((text, i) => ({ text, ...(i % 100 === 50 ? { base: i - 2 } : {}) }));
    const built = buildRevlog(revs, { inline: false, generalDelta: true, compression: 'auto' });
    const dir = makeTempDir('chains');
    try {
      writeFileSync(join(dir, 'f.i'), built.index);
      writeFileSync(join(dir, 'f.d'), built.data);
      for (const io of ['sync', 'async'] as const) {
        const rl = await Revlog.open(join(dir, 'f.i'), {
          io,
          wholeFileLimit: 0,
          windowSize: 512,
          cacheBytes: 1 << 16,
        });
        expect(rl.deltaChain(999).chain.length).toBe(990);
        expect(Buffer.from(await rl.revision(999)).toString('latin1')).toBe(texts[999]);
        expect(Buffer.from(await rl.revisionView(998)).toString('latin1')).toBe(texts[998]);
        for (let r = 0; r < rl.length; r += 37)
          expect(Buffer.from(await rl.revisionView(r)).toString('latin1')).toBe(texts[r]);
        await rl.close();
      }
    } finally {
      removeDir(dir);
    }
  });
});

describe('Revlog: corruption is a typed REVLOG error', () => {
  const revs = [
    { text: 'hello\n' },
    { text: 'hello\nrevision 1\n' },
    { text: 'hello\nrevision 1\nrevision 2\n' },
  ];

  it('a flipped byte in a chunk: node mismatch (or a bad delta)', async () => {
    const built = buildRevlog(revs, { inline: true, compression: 'none' });
    const b = Buffer.from(built.index);
    b[64 + 2] ^= 0x20; // inside rev 0's stored text
    const rl = Revlog.fromBytes('data/README.txt', b);
    expect(await problem(rl.revision(0))).toMatchObject({ code: 'REVLOG', problem: 'node-mismatch', rev: 0 });
    expect((await problem(rl.revision(0))).message).toBe('integrity check failed on data/README.txt:0');
    const unchecked = await rl.revision(0, { check: false });
    expect(Buffer.from(unchecked).toString()).toBe('hEllo\n'); // 'u' + text: byte 2 is the 'e'
  });

  it('a wrong node id, a bad delta, bad flags', async () => {
    const built = buildRevlog(revs, { inline: false, generalDelta: true, compression: 'none' });
    const idx = Buffer.from(built.index);
    idx[64 * 2 + 32] ^= 1;
    let rl = Revlog.fromBytes('data/x', idx, built.data);
    expect(await problem(rl.revision(2))).toMatchObject({ problem: 'node-mismatch', rev: 2 });
    expect(await problem(rl.streamRevision(2, () => {}))).toMatchObject({ problem: 'node-mismatch', rev: 2 });
    // a delta hunk whose end lies past its base
    const data = Buffer.from(built.data);
    const d1 = Revlog.fromBytes('data/x', built.index, built.data).index;
    data.writeInt32BE(1000, d1.chunkStart(1) + 4);
    rl = Revlog.fromBytes('data/x', built.index, data);
    expect(await problem(rl.revision(1))).toMatchObject({ problem: 'bad-delta', rev: 1 });
    expect(await problem(rl.streamRevision(1, () => {}))).toMatchObject({ problem: 'bad-delta', rev: 1 });
    // revision flags: an unknown bit and an extension's flag
    for (const [flags, msg] of [
      [0x0800, "incompatible revision flag '0x800'"],
      [0x2000, "missing processor for flag '0x2000'"],
    ] as const) {
      const f = Buffer.from(built.index);
      f.writeUInt16BE(flags, 64 + 6);
      rl = Revlog.fromBytes('data/x', f, built.data);
      const p = await problem(rl.revision(1));
      expect(p).toMatchObject({ problem: 'revision-flags', rev: 1 });
      expect(p.message).toBe(msg);
    }
  });

  it('offsets and lengths beyond the data file, a missing .d, a truncated .d on disk', async () => {
    const built = buildRevlog(revs, { inline: false, compression: 'none' });
    const idx = Buffer.from(built.index);
    idx.writeInt32BE(5000, 64 + 8); // rev 1 compressed length
    let rl = Revlog.fromBytes('data/x', idx, built.data);
    const p = await problem(rl.revision(1));
    expect(p).toMatchObject({ problem: 'partial-read' });
    expect(p.message).toMatch(
      /^partial read of revlog data\/x\.d; expected 5000 bytes from offset \d+, got \d+$/,
    );
    rl = Revlog.fromBytes('data/x', built.index);
    expect(await problem(rl.revision(0))).toMatchObject({ problem: 'missing-data-file' });

    const dir = makeTempDir('trunc');
    try {
      writeFileSync(join(dir, 'x.i'), built.index);
      writeFileSync(join(dir, 'x.d'), built.data);
      truncateSync(join(dir, 'x.d'), built.data.length - 3);
      rl = await Revlog.open(join(dir, 'x.i'), { name: 'data/x' });
      expect(await rl.dataFileSize()).toBe(built.data.length - 3);
      expect((await rl.revision(0)).length).toBe(6);
      expect(await problem(rl.revision(2))).toMatchObject({ problem: 'partial-read', rev: undefined });
      await rl.close();
      unlinkSync(join(dir, 'x.d'));
      rl = await Revlog.open(join(dir, 'x.i'), { name: 'data/x', io: 'sync' });
      expect(await rl.dataFileSize()).toBeUndefined();
      expect(await problem(rl.revision(0))).toMatchObject({ problem: 'missing-data-file' });
      await rl.close();
    } finally {
      removeDir(dir);
    }
  });

  it('parents and bases out of range stop a read before it walks anywhere', async () => {
    const built = buildRevlog(revs, { inline: false, generalDelta: true, compression: 'none' });
    const idx = Buffer.from(built.index);
    idx.writeInt32BE(3, 64 * 2 + 24); // rev 2: p1 = 3 on a 3-revision log
    let rl = Revlog.fromBytes('data/x', idx, built.data);
    expect(await problem(rl.revision(2))).toMatchObject({ problem: 'parent-out-of-range', rev: 2 });
    const idx2 = Buffer.from(built.index);
    idx2.writeInt32BE(5, 64 + 16); // rev 1: base 5
    rl = Revlog.fromBytes('data/x', idx2, built.data);
    expect(await problem(rl.revision(1))).toMatchObject({ problem: 'base-out-of-range', rev: 1 });
    expect(await problem(rl.revision(7))).toMatchObject({ problem: 'rev-out-of-range' });
  });
});

describe('revlog texts', () => {
  it('changelog entries: fields, empty file list, errors like changelogrevision', () => {
    const e = parseChangelogEntry(
      Buffer.from('0123456789012345678901234567890123456789\nme\n12 0 branch:b\n\ndesc'),
    );
    expect([e.user, e.time, e.tz, e.files, e.description]).toEqual(['me', 12, 0, [], 'desc']);
    expect(() => parseChangelogEntry(Buffer.from('nonl'))).toThrow(/substring not found/);
    expect(() => parseChangelogEntry(Buffer.from('zz\nme\n1 0\nf\n\nd'))).toThrow(/Non-hexadecimal/);
    expect(() => parseChangelogEntry(Buffer.from('00\nme\nnotadate 0\nf\n\nd'))).toThrow(/could not convert/);
    expect(parseChangelogEntry(new Uint8Array(0)).files).toEqual([]);
  });

  it('manifests: sorted lines with 40 hex digits and a flag, C parser messages', () => {
    const n = 'a'.repeat(40);
    const got: string[] = [];
    parseManifest(Buffer.from(`a\0${n}\nb\0${n}x\nc\0${n}l\n`), (e) => got.push(e.path + e.flag));
    expect(got).toEqual(['a', 'bx', 'cl']);
    expect(() => parseManifest(Buffer.from(`b\0${n}\na\0${n}\n`), () => {})).toThrow(
      'Manifest lines not in sorted order.',
    );
    expect(() => parseManifest(Buffer.from(`a\0${n}`), () => {})).toThrow(
      'Manifest did not end in a newline.',
    );
    expect(() => parseManifest(Buffer.from(`a\0abc\n`), () => {})).toThrow(
      'Manifest had implausibly-short line.',
    );
    expect(() => parseManifest(Buffer.from(`\0${n}\n`), () => {})).toThrow('zero-length filename');
    // every digit checked on the bytes: the first, the last, upper case, the flag byte
    const hex = '0123456789abcdef'.repeat(3).slice(0, 40);
    const one: string[] = [];
    parseManifest(Buffer.from(`p\0${hex}t\n`), (e) => one.push(`${e.path} ${e.nodeHex} ${e.flag}`));
    expect(one).toEqual([`p ${hex} t`]);
    for (const bad of [
      'g' + n.slice(1),
      n.slice(1) + 'g',
      'A' + n.slice(1),
      n.slice(1) + '/',
      n + 'z',
      n + '\0',
    ])
      expect(() => parseManifest(Buffer.from(`a\0${bad}\n`), () => {})).toThrow('Invalid manifest line');
  });

  it('filelog copy metadata', () => {
    const t = Buffer.from(`\x01\ncopy: a.txt\ncopyrev: ${'ab'.repeat(20)}\n\x01\ndata`);
    expect(copySource(t)).toEqual({ path: 'a.txt', node: Buffer.from('ab'.repeat(20), 'hex') });
    expect(parseFilelogMeta(t)!.dataOffset).toBe(t.length - 4);
    expect(copySource(Buffer.from('plain'))).toBeNull();
    expect(() => parseFilelogMeta(Buffer.from('\x01\nno end'))).toThrow();
  });
});
