// The synchronous fast path of the stream readers (tryNextEntry / tryCopyData) must give exactly
// what the awaiting path gives, for any split of the input: the same entries and bytes, and on
// damaged input the same error (code and message).
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isSluiceError } from '../../../../src/main/engine/errors';
import { ByteSource } from '../../../../src/main/engine/format/byte-source';
import { openStreamBundle } from '../../../../src/main/engine/format/stream-bundle-file';
import type { StreamReader } from '../../../../src/main/engine/format/stream-reader';
import { SHAPES, chunked, fixture, splitAt } from '../../../support/format';

type Outcome = { entries: string[]; error?: string };

/** Reads everything, through the fast path when `fast` (falling back like the applier does). */
async function drain(reader: StreamReader, fast: boolean): Promise<string[]> {
  const out: string[] = [];
  try {
    for (;;) {
      const e = (fast && reader.tryNextEntry?.()) || (await reader.nextEntry());
      if (e === null) break;
      const h = createHash('md5');
      const write = (c: Uint8Array): void => void h.update(c);
      if (!(fast && reader.tryCopyData?.(write))) await reader.copyData(write);
      out.push(`${e.vfs} ${e.name} ${e.size} ${h.digest('hex')}`);
    }
  } finally {
    await reader.close();
  }
  return out;
}

async function outcome(pieces: Uint8Array[], fast: boolean): Promise<Outcome> {
  const entries: string[] = [];
  try {
    const reader = await openStreamBundle(new ByteSource(chunked(pieces)));
    entries.push(...(await drain(reader, fast)));
    return { entries };
  } catch (e) {
    if (!isSluiceError(e)) throw e;
    return { entries, error: `${e.code}: ${e.message}` };
  }
}

/** Deterministic pseudo-random numbers (xorshift32). */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 0x100000000;
  };
}

function randomSplit(buf: Uint8Array, rand: () => number, maxPiece: number): Uint8Array[] {
  const cuts: number[] = [];
  for (let at = 0; at < buf.length; at += 1 + Math.floor(rand() * maxPiece)) cuts.push(at);
  return splitAt(buf, cuts);
}

const ones = (buf: Uint8Array): Uint8Array[] =>
  Array.from({ length: buf.length }, (_, i) => buf.subarray(i, i + 1));

describe.each(SHAPES)('fast path = awaiting path (%s fixtures)', (shape) => {
  it.each(['packed1.hg', 'stream-v2.hg'])(
    '%s: 1-byte chunks and one big chunk read the same',
    async (name) => {
      const bundle = fixture(shape, name);
      const whole = await outcome([bundle], true);
      expect(whole.error).toBeUndefined();
      expect(whole.entries.length).toBeGreaterThan(10);
      expect(await outcome(ones(bundle), true)).toEqual(whole);
      expect(await outcome([bundle], false)).toEqual(whole);
    },
  );

  it.each(['packed1.hg', 'stream-v2.hg'])(
    '%s: damaged bytes fail alike on every path and split',
    async (name) => {
      const bundle = fixture(shape, name);
      const rand = rng(name.length * 7919 + shape.length);
      // where the entry headers are: around each entry name (vfs and varints before it, v1 size after)
      const names = (await outcome([bundle], false)).entries.map((e) => e.split(' ')[1]!);
      const namePositions = names.map((n) => bundle.indexOf(Buffer.from(n, 'latin1'))).filter((p) => p > 0);
      expect(namePositions.length).toBeGreaterThan(names.length / 2);
      let failures = 0;
      for (let i = 0; i < 150; i++) {
        const damaged = Buffer.from(bundle);
        // mostly in entry headers, some anywhere
        const at =
          i % 3 === 2
            ? Math.floor(rand() * damaged.length)
            : namePositions[Math.floor(rand() * namePositions.length)]! - 4 + Math.floor(rand() * 24);
        damaged[at] = [0x00, 0x0a, 0x2f, 0x80, 0xff, Math.floor(rand() * 256)][i % 6]!;
        const cut = i % 4 === 3 ? damaged.subarray(0, Math.floor(rand() * damaged.length)) : damaged;
        const reference = await outcome([cut], false);
        if (reference.error) failures++;
        expect(await outcome([cut], true), `damage at ${at}`).toEqual(reference);
        expect(await outcome(randomSplit(cut, rand, 40), true), `damage at ${at}, split`).toEqual(reference);
      }
      expect(failures).toBeGreaterThan(50); // the damage really reaches the parsers' error paths
    },
  );
});

describe('an entry header bad in two ways fails alike in any split', () => {
  const uvarintLength = (n: number): number => {
    let len = 1;
    while (n >= 0x80) {
      n = Math.floor(n / 128);
      len++;
    }
    return len;
  };

  it.each(SHAPES)(
    '%s stream-v2.hg: an unknown vfs key before an over-long varint is MALFORMED',
    async (shape) => {
      const bundle = fixture(shape, 'stream-v2.hg');
      const [, name, size] = (await outcome([bundle], false)).entries[3]!.split(' ');
      const at = bundle.indexOf(Buffer.from(name!, 'latin1'));
      const header = at - 1 - uvarintLength(name!.length) - uvarintLength(Number(size));
      const damaged = Buffer.from(bundle);
      damaged[header] = 0x26; // neither s nor c
      damaged.fill(0xff, header + 1, header + 11); // a varint that never ends: LIMIT, if read first
      const reference = await outcome([damaged], false);
      expect(reference.error).toMatch(/^MALFORMED: unknown stream2 vfs key 0x26/);
      expect(await outcome([damaged], true)).toEqual(reference);
      expect(await outcome(ones(damaged), true)).toEqual(reference);
    },
  );
});
