import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../../../src/main/engine/errors';
import { ByteSource } from '../../../../src/main/engine/format/byte-source';
import { ChangegroupReader, type DeltaChunk } from '../../../../src/main/engine/changegroup/reader';

function chunk(data: Buffer): Buffer {
  const l = Buffer.alloc(4);
  l.writeInt32BE(data.length + 4);
  return Buffer.concat([l, data]);
}
const END = Buffer.alloc(4);
const node = (b: number) => Buffer.alloc(20, b);

/** cg2: a changelog group of two deltas, empty manifests, one file with one delta. */
function cg2(): Buffer {
  const d = (n: number, base: number, data: string) =>
    chunk(Buffer.concat([node(n), node(0), node(0), node(base), node(n), Buffer.from(data)]));
  return Buffer.concat([
    d(1, 0, 'first'),
    d(2, 1, 'second'),
    END,
    END,
    chunk(Buffer.from('dir/file')),
    d(3, 0, 'x'),
    END,
    END,
  ]);
}

async function readAll(bytes: Buffer, split: number): Promise<{ groups: DeltaChunk[][]; names: string[] }> {
  const pieces: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += split) pieces.push(bytes.subarray(i, i + split));
  const r = new ChangegroupReader(ByteSource.fromBytes(...pieces), '02');
  const groups: DeltaChunk[][] = [];
  const names: string[] = [];
  const group = async () => {
    const g: DeltaChunk[] = [];
    await r.readGroup((d) => void g.push(d));
    groups.push(g);
  };
  await group();
  await group();
  for (let name = await r.nextName(); name !== null; name = await r.nextName()) {
    names.push(name);
    await group();
  }
  return { groups, names };
}

describe('ChangegroupReader', () => {
  it.each([1, 3, 64, 1 << 20])('reads cg2 split every %i bytes', async (split) => {
    const { groups, names } = await readAll(cg2(), split);
    expect(groups.map((g) => g.length)).toEqual([2, 0, 1]);
    expect(names).toEqual(['dir/file']);
    expect(Buffer.from(groups[0]![1]!.deltaBase)).toEqual(node(1));
    expect(Buffer.from(groups[0]![1]!.delta).toString()).toBe('second');
  });

  it('cg1: the delta base is the previous node, p1 for the first', async () => {
    const d = (n: number, p1: number) =>
      chunk(Buffer.concat([node(n), node(p1), node(0), node(n), Buffer.from('d')]));
    const r = new ChangegroupReader(ByteSource.fromBytes(Buffer.concat([d(1, 9), d(2, 1), END])), '01');
    const bases: Buffer[] = [];
    await r.readGroup((x) => void bases.push(Buffer.from(x.deltaBase)));
    expect(bases).toEqual([node(9), node(1)]);
  });

  it.each([
    ['a length of 1..4', Buffer.from([0, 0, 0, 3]), 'MALFORMED'],
    ['a chunk shorter than its header', chunk(Buffer.alloc(50)), 'MALFORMED'],
    ['a length past the end', Buffer.from([0x00, 0x10, 0, 0, 1, 2, 3]), 'TRUNCATED'],
    [
      'a length past the revision bound (maxRevisionSize), before any byte',
      Buffer.from([0x7f, 0, 0, 0]),
      'LIMIT',
    ],
    ['a negative length', Buffer.from([0xff, 0xff, 0xff, 0x00]), 'MALFORMED'],
  ])('%s is a typed error', async (_what, bytes, code) => {
    const r = new ChangegroupReader(ByteSource.fromBytes(bytes), '02');
    const err = await r.readGroup(() => undefined).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SluiceError);
    expect((err as SluiceError).code).toBe(code);
  });

  it('a file name longer than the limit is LIMIT', async () => {
    const r = new ChangegroupReader(ByteSource.fromBytes(chunk(Buffer.alloc(5000, 0x61))), '02');
    expect(((await r.nextName().catch((e: unknown) => e)) as SluiceError).code).toBe('LIMIT');
  });
});
