// The obsstore's formats: format-0 markers (the `obsolete` listkeys dumps, base85) read and
// re-encoded in format 1 as obsstore.add writes them, and the merge that appends only the markers
// the store lacks. What real hg writes from the same dumps is test/interop/pull-obsmarkers.test.ts.
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SluiceError } from '../../../../src/main/engine/errors';
import { encodeStorePath } from '../../../../src/main/engine/store/encoding';
import {
  addMarkersV1,
  b85decode,
  b85encode,
  listkeysObsolete,
  markersFromListkeys,
  readMarkersAsV1,
  readObsstoreV1,
  splitMarkersV1,
  type MarkerBlock,
  type ObsMarker,
} from '../../../../src/main/engine/repo/obsstore';
import { Transaction } from '../../../../src/main/engine/repo/transaction';

const work = mkdtempSync(join(tmpdir(), 'sluice-obsstore-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const node = (byte: number): string => String.fromCharCode(...new Array<number>(20).fill(byte));

/** A format-1 marker's bytes (_fm1encodeonemarker), written out field by field. */
function fm1(m: Omit<ObsMarker, 'bytes'>): Buffer {
  const nodes = [m.prec, ...m.succs, ...(m.parents ?? [])].map((n) => Buffer.from(n, 'latin1'));
  const kv = m.meta.flatMap(([k, v]) => [Buffer.from(k, 'latin1'), Buffer.from(v, 'latin1')]);
  const head = Buffer.alloc(19);
  head.writeDoubleBE(m.date, 4);
  head.writeInt16BE(m.tz, 12);
  head.writeUInt16BE(m.flags, 14);
  head[16] = m.succs.length;
  head[17] = m.parents === null ? 3 : m.parents.length;
  head[18] = m.meta.length;
  const out = Buffer.concat([head, ...nodes, Buffer.from(kv.map((b) => b.length)), ...kv]);
  out.writeUInt32BE(out.length, 0);
  return out;
}

const markers = (specs: Omit<ObsMarker, 'bytes'>[]): ObsMarker[] =>
  readObsstoreV1(Buffer.concat([Buffer.of(1), ...specs.map(fm1)]));
const blockMarkers = (b: MarkerBlock): Buffer[] => splitMarkersV1(b.data, 0);

const SAMPLE: Omit<ObsMarker, 'bytes'>[] = [
  {
    prec: node(1),
    succs: [node(2)],
    flags: 0,
    meta: [['user', 'a']],
    date: 1764650000.25,
    tz: -60,
    parents: null,
  },
  {
    prec: node(3),
    succs: [],
    flags: 0,
    meta: [
      ['operation', 'prune'],
      ['user', 'b'],
    ],
    date: 0,
    tz: 330,
    parents: [node(9)],
  },
  {
    prec: node(4),
    succs: [node(5), node(6)],
    flags: 1,
    meta: [],
    date: 2e9,
    tz: 0,
    parents: [node(7), node(8)],
  },
];

describe('base85 (mercurial/cext/base85.c)', () => {
  it('decodes what b85encode writes, every length', () => {
    for (let n = 0; n < 64; n++) {
      const data = Buffer.from(Array.from({ length: n }, (_, i) => (i * 97 + n) & 0xff));
      expect(b85decode(b85encode(data)).equals(data), `${n} bytes`).toBe(true);
    }
  });

  it('refuses a character outside the alphabet and a group past 2^32', () => {
    expect(() => b85decode('00"00')).toThrow(/bad base85 character at position 2/);
    expect(() => b85decode('~~~~~')).toThrow(/bad base85 sequence at position 5/);
    expect(() => b85decode('~~~~~')).toThrow(SluiceError);
  });
});

describe('the obsolete listkeys namespace (exchange._pullobsolete)', () => {
  it('format-0 dumps come back as the format-1 markers they were made from', () => {
    const ms = markers(SAMPLE);
    const block = markersFromListkeys(new Map(listkeysObsolete(ms)))!;
    // listkeysObsolete sorts (obsolete.listmarkers): compare as sets of bytes
    const got = blockMarkers(block)
      .map((b) => b.toString('hex'))
      .sort();
    expect(got).toEqual(ms.map((m) => m.bytes.toString('hex')).sort());
  });

  it('a marker with no parents recorded explicitly keeps a `p0` entry, as hg reads format 0', () => {
    const [m] = markers([{ ...SAMPLE[0]!, parents: [] }]);
    const [back] = readObsstoreV1(
      Buffer.concat([Buffer.of(1), blockMarkers(markersFromListkeys(new Map(listkeysObsolete([m!])))!)[0]!]),
    );
    expect(back!.parents).toEqual([]);
    expect(back!.meta).toEqual([
      ['p0', ''],
      ['user', 'a'],
    ]);
  });

  it('several dumps are read from the last key to dump0, each one marker list', () => {
    const many = markers(
      Array.from({ length: 120 }, (_, i) => ({
        ...SAMPLE[1]!,
        prec: node(i + 10),
        meta: [['note', 'x'.repeat(i)]] as [string, string][],
      })),
    );
    const keys = listkeysObsolete(many);
    expect(keys.length).toBeGreaterThan(1);
    const block = markersFromListkeys(new Map([...keys, ['other', 'ignored']]))!;
    expect(block.ends).toHaveLength(120);
    expect(markersFromListkeys(new Map(keys.filter(([k]) => k !== 'dump0')))).toBeUndefined();
  });

  it("hg's fallbacks: an unreadable date is 0, a parent that is not a node drops the parents", () => {
    // a format-0 payload of one marker: version, no successors, metadata size, flags, predecessor
    const read = (meta: string): ObsMarker => {
      const head = Buffer.alloc(1 + 26, 0x11).fill(0, 0, 7);
      head.writeUInt32BE(meta.length, 2);
      const payload = Buffer.concat([head, Buffer.from(meta, 'latin1')]);
      return readObsstoreV1(Buffer.concat([Buffer.of(1), blockMarkers(readMarkersAsV1(payload))[0]!]))[0]!;
    };
    expect(read('date:soon 0\0user:u')).toMatchObject({ date: 0, tz: 0, meta: [['user', 'u']] });
    expect(read('date:1.5 -7200')).toMatchObject({ date: 1.5, tz: -120 });
    expect(read(`p1:${'zz'.repeat(20)}`)).toMatchObject({ parents: null, meta: [] });
    expect(read(`p1:${'ab'.repeat(20)}`).parents).toEqual([node(0xab)]);
  });
});

describe('addMarkersV1 (obsstore.add)', () => {
  it('appends only the markers the store lacks, journaled', async () => {
    const hgDir = join(work, 'repo', '.hg');
    mkdirSync(join(hgDir, 'store'), { recursive: true });
    const vfs = { hgDir, storeDir: join(hgDir, 'store'), encode: encodeStorePath };
    const block = (ms: Buffer[]): MarkerBlock => readMarkersAsV1(Buffer.concat([Buffer.of(1), ...ms]));
    const [a, b, c] = SAMPLE.map(fm1);
    let tx = Transaction.open(vfs);
    expect(addMarkersV1(vfs.storeDir, tx, block([a!, b!, a!]))).toBe(2);
    await tx.close();
    tx = Transaction.open(vfs);
    expect(addMarkersV1(vfs.storeDir, tx, block([b!, c!, a!]))).toBe(1);
    await tx.close();
    expect(
      readFileSync(join(vfs.storeDir, 'obsstore')).equals(Buffer.concat([Buffer.of(1), a!, b!, c!])),
    ).toBe(true);
    tx = Transaction.open(vfs);
    expect(addMarkersV1(vfs.storeDir, tx, block([c!]))).toBe(0);
    await tx.abort();
  });
});
