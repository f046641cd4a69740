// Fuzzing FORMAT's parsers of untrusted bytes: packed1, stream v1 (stream_out), bundle2 framing and
// parts, stream2 entries, in every compression; mutated real fixtures delivered in random pieces,
// and structured bundles made by the writers with random parameters, part mixes, chunk sizes and
// hostile compressed cores.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deflateSync, gzipSync } from 'node:zlib';
import { openStreamBundle } from '../../src/main/engine/format/stream-bundle-file';
import {
  Bundle2Writer,
  int32,
  parsePartHeader,
  parseStreamParams,
  type Param,
} from '../../src/main/engine/format/bundle2';
import { ByteSource } from '../../src/main/engine/format/byte-source';
import { MAX_STREAM_PARAMS } from '../../src/main/engine/format/limits';
import { readStreamOut } from '../../src/main/engine/format/stream-v1';
import { stream2EntryHeader, stream2Params } from '../../src/main/engine/format/stream2';
import {
  FIXTURE_BUNDLES,
  SHAPES,
  asyncPieces,
  cutsArb,
  drain,
  drainBundle2,
  fixture,
  mutatedArb,
  outcomeOf,
  params,
  sameInAnySplit,
} from './fuzz-support';

const BUNDLES = SHAPES.flatMap((s) => FIXTURE_BUNDLES.map((f) => fixture(s, f)));
const STREAM_OUT = SHAPES.map((s) => fixture(s, 'stream_out.bin'));
/** getbundle responses after the 0.2 media-type framing (1-byte engine name length + `none`) */
const GETBUNDLE = SHAPES.map((s) => {
  const b = fixture(s, 'getbundle-stream2.bin');
  return b.subarray(1 + b[0]!);
});

const pieceSource = (pieces: Uint8Array[]): ByteSource => new ByteSource(asyncPieces(pieces));
const readBundle = async (pieces: Uint8Array[]) => drain(await openStreamBundle(pieceSource(pieces)));

describe('fuzz: stream clone bundles (packed1, v2 in every compression)', () => {
  it('the fixtures themselves parse, in any split', async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: BUNDLES.length - 1 }), cutsArb(), async (i, cuts) => {
        const read = await sameInAnySplit(BUNDLES[i]!, cuts, readBundle, `fixture ${i}`);
        expect(read.ok && read.value.length).toBeGreaterThan(0);
      }),
      params(24),
    );
  });

  it('mutated bundles in random pieces: entries that add up, the same in any split, or a SluiceError', async () => {
    await fc.assert(
      fc.asyncProperty(mutatedArb(BUNDLES), cutsArb(), async (m, cuts) => {
        await sameInAnySplit(m.bytes, cuts, readBundle, 'bundle');
      }),
      params(250),
    );
  });

  it('mutated stream_out bodies (stream v1)', async () => {
    await fc.assert(
      fc.asyncProperty(mutatedArb(STREAM_OUT), cutsArb(), async (m, cuts) => {
        await sameInAnySplit(
          m.bytes,
          cuts,
          async (pieces) => drain(await readStreamOut(pieceSource(pieces))),
          'stream_out',
        );
      }),
      params(250),
    );
  });

  it('mutated getbundle responses: bundle2 framing, stream2, listkeys and phase-heads parts', async () => {
    await fc.assert(
      fc.asyncProperty(mutatedArb(GETBUNDLE), cutsArb(), async (m, cuts) => {
        await sameInAnySplit(m.bytes, cuts, (pieces) => drainBundle2(pieceSource(pieces)), 'getbundle');
      }),
      params(250),
    );
  });
});

const paramArb: fc.Arbitrary<Param> = fc.tuple(
  fc.oneof(
    fc.constantFrom('bytecount', 'filecount', 'requirements', 'namespace', 'x'),
    fc.string({ maxLength: 8 }),
  ),
  fc.oneof(
    fc.constantFrom('0', '1', '-1', '99999999999999999999', 'revlogv1', 'revlogv1%2Cstore', ''),
    fc.string({ maxLength: 12 }),
  ),
);

/** the part types drainBundle2 asks for (others: skipped when advisory, refused when mandatory) */
const KNOWN_TYPES = new Set(['stream2', 'listkeys', 'phase-heads', 'bookmarks', 'changegroup']);

describe('fuzz: structured bundle2 streams', () => {
  it('random parts, params and payloads made by the writer, then mutated', async () => {
    const entry = fc.record({
      vfs: fc.constantFrom('s' as const, 'c' as const),
      name: fc.constantFrom('data/a.i', '00changelog.i', 'branch2-served', '../x', 'data/b.d'),
      data: fc.uint8Array({ maxLength: 40 }),
      lie: fc.integer({ min: -2, max: 2 }),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            type: fc.constantFrom(
              'stream2',
              'STREAM2',
              'listkeys',
              'phase-heads',
              'output',
              'error:abort',
              'Unknown',
            ),
            mandatory: fc.array(paramArb, { maxLength: 4 }),
            advisory: fc.array(paramArb, { maxLength: 2 }),
            entries: fc.array(entry, { maxLength: 4 }),
            junk: fc.uint8Array({ maxLength: 30 }),
          }),
          { maxLength: 3 },
        ),
        fc.integer({ min: 1, max: 64 }),
        fc.array(fc.nat(), { maxLength: 2 }),
        cutsArb(),
        async (parts, chunkSize, flips, cuts) => {
          const w = new Bundle2Writer({ chunkSize });
          for (const p of parts) {
            const payload =
              p.type.toLowerCase() === 'stream2'
                ? Buffer.concat(
                    p.entries.flatMap((e) => [
                      stream2EntryHeader(e.vfs, e.name, Math.max(0, e.data.length + e.lie)),
                      Buffer.from(e.data),
                    ]),
                  )
                : Buffer.from(p.junk);
            const mandatory =
              p.type.toLowerCase() === 'stream2' && p.mandatory.length === 0
                ? stream2Params(
                    p.entries.length,
                    p.entries.reduce((s, e) => s + e.data.length, 0),
                    ['revlogv1'],
                  )
                : p.mandatory;
            w.addPart({
              type: p.type,
              mandatoryParams: mandatory,
              advisoryParams: p.advisory,
              data: (async function* () {
                yield payload;
              })(),
            });
          }
          const out: Uint8Array[] = [];
          for await (const c of w.chunks()) out.push(c);
          const bytes = Buffer.concat(out);
          const intact = flips.length === 0;
          for (const f of flips) if (bytes.length) bytes[f % bytes.length] ^= 1 << (f % 8);
          const read = await sameInAnySplit(
            bytes,
            cuts,
            (pieces) => drainBundle2(pieceSource(pieces)),
            'structured bundle2',
          );
          // what the writer wrote, unmutated and accepted, reads back as written: each advisory
          // part's payload, the part types in order
          if (intact && read.ok) {
            const known = parts.filter((p) => KNOWN_TYPES.has(p.type.toLowerCase()));
            expect(read.value.map((p) => p.type)).toEqual(known.map((p) => p.type.toLowerCase()));
          }
        },
      ),
      params(250),
    );
  });

  it('hostile compressed cores: zstd frames with huge windows or sizes, zlib and gzip bombs, garbage', async () => {
    const zstdFrame = (fhd: number, extra: number[]): Buffer =>
      Buffer.from([0x28, 0xb5, 0x2f, 0xfd, fhd, ...extra]);
    const cores: [string, Buffer][] = [
      // window descriptor 0xf8: windowLog 41 (2 TiB); then a raw block header
      ['ZS', zstdFrame(0x00, [0xf8, 0x01, 0x00, 0x00])],
      // windowLog 30 (1 GiB), a compressed block claiming 128 KiB
      ['ZS', zstdFrame(0x00, [0xa0, 0x05, 0x00, 0x10, 1, 2, 3, 4])],
      // single segment, content size 2^40 declared, empty last block
      ['ZS', zstdFrame(0xe0, [0, 0, 0, 0, 0, 1, 0, 0, 0x01, 0x00, 0x00])],
      ['ZS', Buffer.from('(\xb5/\xfdgarbage', 'latin1')],
      ['GZ', gzipSync(Buffer.alloc(8 << 20))],
      ['GZ', Buffer.from('\x1f\x8b\x08\x00garbage', 'latin1')],
      ['BZ', Buffer.from('BZh91AY&SYgarbage', 'latin1')],
      ['UN', deflateSync(Buffer.alloc(1000))],
    ];
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: cores.length - 1 }), cutsArb(), async (i, cuts) => {
        const [comp, core] = cores[i]!;
        const head = Buffer.from(`Compression=${comp}`, 'latin1');
        const bytes = Buffer.concat([Buffer.from('HG20'), int32(head.length), head, core]);
        await sameInAnySplit(
          bytes,
          cuts,
          (pieces) => drainBundle2(pieceSource(pieces)),
          `core ${comp} #${i}`,
        );
      }),
      params(40),
    );
  });

  it('stream params and part headers from random bytes', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ maxLength: 80 }),
        fc.uint8Array({ maxLength: 120 }),
        async (text, header) => {
          const params = await outcomeOf(() => parseStreamParams(text), 'params');
          // accepted params are bounded and named as hg requires (a letter first)
          if (params.ok) {
            expect(params.value.size).toBeLessThanOrEqual(MAX_STREAM_PARAMS);
            for (const [name] of params.value) expect(name).toMatch(/^[A-Za-z]/);
          }
          const part = await outcomeOf(() => parsePartHeader(header), 'part header');
          // an accepted header names its type in hg's part type alphabet
          if (part.ok) expect(part.value.type).toMatch(/^[a-zA-Z0-9_:-]+$/);
        },
      ),
      params(500),
    );
  });
});
