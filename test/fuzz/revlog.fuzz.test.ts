// Fuzzing the revlog readers (VERIFY): index parser, chunk decoding, mpatch, the revision reader,
// the changelog/manifest/filelog text parsers and verify itself, on mutated fixture revlogs and on
// structured synthetic ones.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cpSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { deflateSync } from 'node:zlib';
import { RevlogIndexParser, parseRevlogIndex } from '../../src/main/engine/revlog/index';
import { Revlog } from '../../src/main/engine/revlog/revlog';
import { chunkNeedsPreparation, decompressChunk } from '../../src/main/engine/revlog/chunk';
import { prepareZstd, scanZstdFrame } from '../../src/main/engine/codec/revlog-zstd';
import { applyDelta, patchText } from '../../src/main/engine/revlog/mpatch';
import { copySource, parseChangelogEntry, parseManifest } from '../../src/main/engine/revlog/texts';
import { SHAPES, buildRevlog, extractFixture, makeTempDir, removeDir } from '../support/revlog';
import { verifyRepository } from '../../src/main/engine/operations/verify/verify';
import { cutsArb, mutate, mutatedArb, outcomeOf, params, parsesOrSluiceError, splitBy } from './fuzz-support';

/**
 * mdiff.patch written out plainly, for a delta the parser accepted: hunks `start end length data`
 * in order, each replacing base[start, end). Throws (failing the property) if the delta is not
 * whole, ordered hunks inside the base: the parser should have refused it.
 */
function naivePatch(base: Uint8Array, delta: Uint8Array): { text: Buffer; inserted: Buffer } {
  const d = Buffer.from(delta.buffer, delta.byteOffset, delta.byteLength);
  const text: Uint8Array[] = [];
  const inserted: Uint8Array[] = [];
  let pos = 0;
  for (let at = 0; at < d.length;) {
    const [start, end, len] = [d.readInt32BE(at), d.readInt32BE(at + 4), d.readInt32BE(at + 8)];
    if (start < pos || end < start || end > base.length || at + 12 + len > d.length)
      throw new Error(`accepted a bad hunk at ${at}: ${start} ${end} ${len}`);
    text.push(base.subarray(pos, start), d.subarray(at + 12, at + 12 + len));
    inserted.push(d.subarray(at + 12, at + 12 + len));
    pos = end;
    at += 12 + len;
  }
  text.push(base.subarray(pos));
  return { text: Buffer.concat(text), inserted: Buffer.concat(inserted) };
}

interface RevlogFile {
  name: string;
  index: Buffer;
  data?: Buffer;
}

let tmp: string;
const fixtureRevlogs: RevlogFile[] = [];
/** on-disk (encoded) revlog paths of the default fixture repo, without .i */
const defaultNames: string[] = [];
const chunks: Buffer[] = [];
beforeAll(async () => {
  tmp = makeTempDir('fuzz');
  for (const shape of SHAPES) {
    const dir = extractFixture(shape, tmp);
    const store = join(dir, '.hg', 'store');
    const walk = (d: string): void => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        const p = join(d, e.name);
        if (e.isDirectory()) walk(p);
        else if (e.name.endsWith('.i')) {
          const index = readFileSync(p);
          let data: Buffer | undefined;
          try {
            data = readFileSync(p.replace(/\.i$/, '.d'));
          } catch {
            data = undefined;
          }
          const name = relative(store, p).replace(/\.i$/, '');
          fixtureRevlogs.push({ name, index, data });
          if (shape === 'default') defaultNames.push(name);
        }
      }
    };
    walk(store);
  }
  // every stored chunk of every fixture revlog (zstd, zlib, stored, raw)
  for (const f of fixtureRevlogs) {
    const rl = Revlog.fromBytes(f.name, f.index, f.data);
    for (let r = 0; r < rl.length; r++) chunks.push(Buffer.from(await rl.rawChunk(r)));
  }
  await prepareZstd();
}, 60_000);
afterAll(() => removeDir(tmp));

/** Reads every revision (node ids checked) and walks their texts with the matching parser. */
async function readEverything(name: string, index: Uint8Array, data?: Uint8Array): Promise<void> {
  const rl = Revlog.fromBytes(name, index, data, { cacheBytes: 1 << 16 });
  rl.index.problems(10);
  for (let r = 0; r < rl.length; r++) {
    let text: Uint8Array;
    try {
      text = await rl.revision(r);
    } catch {
      // a SluiceError for this revision: try the unchecked read too, it must not crash either
      try {
        text = await rl.revision(r, { check: false });
      } catch (e) {
        if (r === rl.length - 1) throw e;
        continue;
      }
    }
    if (name === '00changelog') parseChangelogEntry(text);
    else if (name === '00manifest') parseManifest(text, () => undefined);
    else copySource(text);
    if (rl.index.deltaParent(r) >= 0) patchText(await rl.chunk(r));
  }
}

describe('fuzz: revlog index parser', () => {
  it('mutated fixture NAME.i files, split anywhere: parse or REVLOG/SluiceError', async () => {
    await fc.assert(
      fc.asyncProperty(mutatedArb(fixtureRevlogs.map((f) => f.index)), cutsArb(), async (m, cuts) => {
        const name = fixtureRevlogs[m.input]!.name;
        const outcome = await parsesOrSluiceError(() => {
          const p = new RevlogIndexParser(name, { sizeHint: m.bytes.length });
          for (const piece of splitBy(m.bytes, cuts)) p.push(piece);
          const ix = p.finish();
          const whole = parseRevlogIndex(name, m.bytes);
          expect(whole.length).toBe(ix.length); // the split never changes the result
          expect(ix.length * 64).toBeLessThanOrEqual(m.bytes.length); // 64 bytes an entry, at least
          ix.problems(ix.length);
        }, `index ${name}`);
        expect(outcome === 'ok' || outcome.startsWith('sluice:')).toBe(true);
      }),
      params(300),
    );
  });

  it('random bytes behind a valid or random header', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(0x00010001, 0x00030001, 0x00020001, 0x00000001, 0x0001dead, 0xffffffff),
        fc.uint8Array({ maxLength: 600 }),
        async (header, rest) => {
          const b = Buffer.concat([Buffer.alloc(4), rest]);
          b.writeUInt32BE(header >>> 0, 0);
          await parsesOrSluiceError(() => readEverything('data/r', b, rest), 'random index');
        },
      ),
      params(300),
    );
  });
});

describe('fuzz: chunks and deltas', () => {
  it('mutated fixture chunks (zstd, zlib, stored) decode or fail with REVLOG', async () => {
    await fc.assert(
      fc.asyncProperty(mutatedArb(chunks), fc.nat({ max: 1 << 22 }), async (m, bound) => {
        await parsesOrSluiceError(async () => {
          const prep = chunkNeedsPreparation(m.bytes);
          if (prep) await prep;
          const out = decompressChunk(m.bytes, bound);
          expect(out.length).toBeLessThanOrEqual(Math.max(bound, m.bytes.length));
        }, 'chunk');
      }),
      params(400),
    );
  });

  it('structured zstd frames (header, window, content size, blocks) never hurt the decoder', async () => {
    let total = 0;
    let reached = 0;
    // mostly well-formed framing around random block contents, so most cases reach the decoder
    const block = fc.record({
      type: fc.constantFrom(0, 1, 2, 2, 2),
      body: fc.uint8Array({ maxLength: 64 }),
      rleSize: fc.nat({ max: 5000 }),
      lie: fc.constantFrom(0, 0, 0, 0, 1, -1, 100),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          fcsFlag: fc.nat({ max: 3 }),
          single: fc.boolean(),
          windowLog: fc.integer({ min: 10, max: 27 }),
          mantissa: fc.nat({ max: 7 }),
          checksum: fc.boolean(),
          fcsLie: fc.constantFrom(0, 0, 0, 1, -1, 1 << 20),
        }),
        fc.array(block, { minLength: 1, maxLength: 4 }),
        fc.integer({ min: 0, max: 1 << 24 }),
        async (h, blocks, bound) => {
          const regenerated = blocks.reduce((n, b) => n + (b.type === 1 ? b.rleSize : b.body.length), 0);
          const single = h.single && regenerated < 256 ? true : h.single && h.fcsFlag > 0;
          const fcsLen = [single ? 1 : 0, 2, 4, 8][h.fcsFlag]!;
          const fcsValue = Math.max(0, regenerated + h.fcsLie - (fcsLen === 2 ? 256 : 0));
          const fcs = Buffer.alloc(8);
          fcs.writeBigUInt64LE(BigInt(fcsValue));
          const fhd = (h.fcsFlag << 6) | (single ? 0x20 : 0) | (h.checksum ? 4 : 0);
          const wd = ((h.windowLog - 10) << 3) | h.mantissa;
          const head = [0x28, 0xb5, 0x2f, 0xfd, fhd, ...(single ? [] : [wd]), ...fcs.subarray(0, fcsLen)];
          const body = blocks.flatMap((b, i) => {
            const size = Math.max(0, (b.type === 1 ? b.rleSize : b.body.length) + b.lie);
            const bh = (i === blocks.length - 1 ? 1 : 0) | (b.type << 1) | (size << 3);
            return [
              bh & 0xff,
              (bh >> 8) & 0xff,
              (bh >> 16) & 0xff,
              ...(b.type === 1 ? b.body.subarray(0, 1) : b.body),
            ];
          });
          const frame = Buffer.from([...head, ...body, ...(h.checksum ? [1, 2, 3, 4] : [])]);
          total++;
          await parsesOrSluiceError(async () => {
            let info;
            try {
              info = scanZstdFrame(frame);
            } catch {
              info = undefined;
            }
            if (info && info.frameLength === frame.length) reached++;
            const prep = chunkNeedsPreparation(frame);
            if (prep) await prep;
            decompressChunk(frame, bound);
          }, 'zstd frame');
        },
      ),
      params(400),
    );
    // the generator is useful only if most frames get past the structural walk to the decoder
    expect(reached / total).toBeGreaterThan(0.2);
    // the decoder still works afterwards
    const good = chunks.find((c) => c[0] === 0x28)!;
    expect(decompressChunk(good, 1 << 24).length).toBeGreaterThan(0);
  });

  it('random deltas on random bases: apply or REVLOG bad-delta, never an out-of-bounds read', async () => {
    const hunk = fc.record({
      start: fc.integer({ min: -2, max: 70 }),
      end: fc.integer({ min: -2, max: 70 }),
      data: fc.uint8Array({ maxLength: 20 }),
      lie: fc.integer({ min: -3, max: 3 }),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 64 }),
        fc.array(hunk, { maxLength: 6 }),
        fc.nat({ max: 20 }),
        async (base, hunks, cut) => {
          const delta = Buffer.concat(
            hunks.map((h) => {
              const head = Buffer.alloc(12);
              head.writeInt32BE(h.start, 0);
              head.writeInt32BE(h.end, 4);
              head.writeInt32BE(h.data.length + (h.lie === 3 ? 1000 : 0), 8);
              return Buffer.concat([head, h.data]);
            }),
          );
          const d = cut ? delta.subarray(0, Math.max(0, delta.length - cut)) : delta;
          const applied = await outcomeOf(() => [applyDelta(base, d), patchText(d)], 'delta');
          // accepted: whole, ordered hunks inside the base, and the text mdiff.patch makes of them
          if (applied.ok) {
            const [text, inserted] = applied.value;
            const model = naivePatch(base, d);
            expect(text).toEqual(model.text);
            expect(inserted).toEqual(model.inserted);
          }
        },
      ),
      params(500),
    );
  });
});

describe('fuzz: revision reader', () => {
  it('mutated fixture revlogs (index and data): every revision read, texts parsed', async () => {
    await fc.assert(
      fc.asyncProperty(
        mutatedArb(fixtureRevlogs.map((f) => Buffer.concat([f.index, f.data ?? Buffer.alloc(0)]))),
        async (m) => {
          const f = fixtureRevlogs[m.input]!;
          // mutations land in either file: split the mutated concatenation back at the index size
          const index = m.bytes.subarray(0, Math.min(m.bytes.length, f.index.length));
          const data = f.data ? m.bytes.subarray(Math.min(m.bytes.length, f.index.length)) : undefined;
          await parsesOrSluiceError(() => readEverything(f.name, index, data), `revlog ${f.name}`);
        },
      ),
      params(300),
    );
  });

  it('structured synthetic revlogs with lying fields', async () => {
    const field = fc.record({
      rev: fc.nat({ max: 7 }),
      offset: fc.constantFrom(0, 8, 12, 16, 20, 24, 28, 32),
      value: fc.oneof(fc.constantFrom(-1, -2, 0, 1, 7, 8, 65536, 0x7fffffff, -0x80000000), fc.integer()),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.string({ maxLength: 40 }), { minLength: 1, maxLength: 8 }),
        fc.record({
          inline: fc.boolean(),
          generalDelta: fc.boolean(),
          compression: fc.constantFrom('none' as const, 'zlib' as const, 'auto' as const),
        }),
        fc.array(field, { maxLength: 3 }),
        async (texts, opts, lies) => {
          const built = buildRevlog(
            texts.map((t, i) => ({ text: t + '\n'.repeat(i % 3), ...(i % 4 === 3 ? { full: true } : {}) })),
            opts,
          );
          const index = Buffer.from(built.index);
          const starts: number[] = [];
          for (let pos = 0, r = 0; pos + 64 <= index.length; r++) {
            starts.push(pos);
            pos += 64 + (opts.inline ? index.readInt32BE(pos + 8) : 0);
          }
          for (const lie of lies) {
            const at = starts[lie.rev % starts.length]! + lie.offset;
            if (at + 4 <= index.length) index.writeInt32BE(lie.value | 0, at);
          }
          await parsesOrSluiceError(
            () => readEverything('data/s', index, opts.inline ? undefined : built.data),
            'synthetic',
          );
        },
      ),
      params(300),
    );
  });

  it('declared sizes never allocate: 2^31 text sizes, zlib bombs bounded by the index', async () => {
    const bomb = deflateSync(Buffer.alloc(64 << 20)); // 64 MiB of zeros in ~64 KiB
    const built = buildRevlog([{ text: 'x' }], { inline: false, compression: 'none' });
    const index = Buffer.from(built.index);
    index.writeInt32BE(bomb.length, 8);
    index.writeInt32BE(10, 12); // claims a 10-byte text
    const rl = Revlog.fromBytes('data/bomb', index, bomb);
    const before = process.memoryUsage().arrayBuffers;
    const outcome = await parsesOrSluiceError(() => rl.revision(0), 'bomb');
    expect(outcome).toBe('sluice:REVLOG');
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(48 << 20);
  });
});

describe('fuzz: verify on damaged repositories', () => {
  it('a mutated store file never makes verify crash (it reports or aborts with a SluiceError)', async () => {
    const base = join(tmp, 'default');
    const files = defaultNames;
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.nat({ max: files.length - 1 }),
        fc.boolean(),
        mutatedArb([Buffer.alloc(1)]).map((m) => m.mutations),
        async (which, dataFile, mutations) => {
          const repo = join(tmp, `v${n++}`);
          mkdirSync(repo);
          cpSync(join(base, '.hg'), join(repo, '.hg'), { recursive: true });
          const name = files[which]!;
          const suffix = dataFile && name === 'data/big.bin' ? '.d' : '.i';
          // names come from the on-disk walk: already encoded
          const path = join(repo, '.hg', 'store', name + suffix);
          writeFileSync(path, mutate(readFileSync(path), mutations));
          await parsesOrSluiceError(
            () => verifyRepository(repo, {}, { throwOnErrors: false }),
            `verify ${name}`,
          );
          removeDir(repo);
        },
      ),
      params(25),
    );
  });
});
