// Shared machinery of the fuzz suite: the property every parser of untrusted bytes must hold
// ("each input either parses or throws a SluiceError: no other exception, no hang, no huge
// allocation"), mutation of real fixture bytes (bit flips, truncation, insertion, splices,
// overwritten integers) and random splits of the input into pieces.
//
// Budget: FUZZ_RUNS (default 1 = the bounded run inside `vitest run`, the whole suite well under a
// minute) multiplies every property's run count; FUZZ_SEED fixes fast-check's seed so a failure
// printed by scripts/fuzz-long.mjs can be replayed.
import fc from 'fast-check';
import { expect } from 'vitest';
import { isSluiceError } from '../../src/main/engine/errors';
import { Bundle2Reader } from '../../src/main/engine/format/bundle2';
import type { ByteSource } from '../../src/main/engine/format/byte-source';
import type { StreamReader } from '../../src/main/engine/format/stream-reader';
import { STREAM2_PARAMS, readStream2Part } from '../../src/main/engine/format/stream2';

export { FIXTURES, FIXTURE_BUNDLES, SHAPES, chunked as asyncPieces, fixture } from '../support/env';

const MULT = Math.max(0, Number(process.env.FUZZ_RUNS ?? 1));
const SEED = process.env.FUZZ_SEED !== undefined ? Number(process.env.FUZZ_SEED) : undefined;

/** fast-check parameters for a property: runs scaled by FUZZ_RUNS, optional fixed seed. */
export function params(runs: number): fc.Parameters<unknown> {
  return {
    numRuns: Math.max(1, Math.round(runs * MULT)),
    ...(SEED !== undefined ? { seed: SEED } : {}),
    endOnFailure: true,
  };
}

/** Per-case wall limit: a parser that loops or waits forever fails the property. */
export const CASE_TIMEOUT_MS = Number(process.env.FUZZ_CASE_TIMEOUT_MS ?? 10_000);
/** Memory a single case may leave allocated (heap + array buffers) before it counts as unbounded. */
const MEMORY_LIMIT = 1.5 * 2 ** 30;

export class NotSluiceError extends Error {}

/**
 * Runs fn; resolves 'ok' or 'sluice:<code>' when it threw a SluiceError; rejects (failing the
 * property) on any other exception, on a timeout and when memory ballooned.
 */
export async function parsesOrSluiceError(
  fn: () => unknown | Promise<unknown>,
  label = 'case',
): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${label}: no answer within ${CASE_TIMEOUT_MS} ms (hang?)`)),
      CASE_TIMEOUT_MS,
    );
  });
  try {
    const outcome = await Promise.race([
      (async () => {
        try {
          await fn();
          return 'ok';
        } catch (e) {
          if (isSluiceError(e)) return `sluice:${e.code}`;
          const what = e instanceof Error ? `${e.name}: ${e.message}\n${e.stack}` : String(e);
          throw new NotSluiceError(`${label}: threw something other than a SluiceError: ${what}`);
        }
      })(),
      timeout,
    ]);
    const m = process.memoryUsage();
    if (m.heapUsed + m.arrayBuffers > MEMORY_LIMIT) {
      throw new Error(
        `${label}: ${Math.round((m.heapUsed + m.arrayBuffers) / 2 ** 20)} MiB in use after the case`,
      );
    }
    return outcome;
  } finally {
    clearTimeout(timer);
  }
}

/** One mutation of a byte string. */
export type Mutation =
  | { kind: 'flip'; at: number; bit: number }
  | { kind: 'byte'; at: number; value: number }
  | { kind: 'truncate'; at: number }
  | { kind: 'insert'; at: number; bytes: Uint8Array }
  | { kind: 'delete'; at: number; len: number }
  | { kind: 'splice'; at: number; from: number; len: number }
  | { kind: 'int32'; at: number; value: number };

/** Interesting 32-bit values: boundaries, sizes, what hg's test-parseindex.t pokes in. */
const INTS = [
  0,
  1,
  2,
  -1,
  -2,
  63,
  64,
  65,
  0x7f,
  0xff,
  0x100,
  0xffff,
  0x10000,
  65536,
  0x7fffffff,
  -0x80000000,
  0x40000000,
  2 ** 24,
];

export function mutationArb(): fc.Arbitrary<Mutation> {
  const at = fc.nat({ max: 1 << 20 });
  return fc.oneof(
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('flip' as const), at, bit: fc.nat({ max: 7 }) }) },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('byte' as const),
        at,
        value: fc.oneof(fc.constantFrom(0, 0xff, 0x78, 0x28, 0x75, 0x0a), fc.nat({ max: 255 })),
      }),
    },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('truncate' as const), at }) },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('insert' as const),
        at,
        bytes: fc.uint8Array({ minLength: 1, maxLength: 16 }),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('delete' as const),
        at,
        len: fc.integer({ min: 1, max: 64 }),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('splice' as const),
        at,
        from: at,
        len: fc.integer({ min: 1, max: 256 }),
      }),
    },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('int32' as const),
        at,
        value: fc.oneof(fc.constantFrom(...INTS), fc.integer()),
      }),
    },
  );
}

/** Applies mutations (positions taken modulo the current length). */
export function mutate(input: Uint8Array, mutations: readonly Mutation[]): Buffer {
  let b = Buffer.from(input);
  for (const m of mutations) {
    const n = b.length;
    if (n === 0 && m.kind !== 'insert') continue;
    const at = n === 0 ? 0 : m.at % n;
    switch (m.kind) {
      case 'flip':
        b[at] = b[at]! ^ (1 << m.bit);
        break;
      case 'byte':
        b[at] = m.value;
        break;
      case 'truncate':
        b = b.subarray(0, at);
        break;
      case 'insert':
        b = Buffer.concat([b.subarray(0, at), m.bytes, b.subarray(at)]);
        break;
      case 'delete':
        b = Buffer.concat([b.subarray(0, at), b.subarray(at + m.len)]);
        break;
      case 'splice': {
        const from = m.from % n;
        b = Buffer.concat([b.subarray(0, at), b.subarray(from, from + m.len), b.subarray(at)]);
        break;
      }
      case 'int32':
        if (at + 4 <= n) b.writeInt32BE(m.value | 0, at);
        break;
    }
  }
  return b;
}

/** A fixture (or any byte string) mutated 1-4 times. */
export function mutatedArb(
  inputs: readonly Uint8Array[],
): fc.Arbitrary<{ input: number; bytes: Buffer; mutations: Mutation[] }> {
  return fc
    .record({
      input: fc.nat({ max: inputs.length - 1 }),
      mutations: fc.array(mutationArb(), { minLength: 1, maxLength: 4 }),
    })
    .map(({ input, mutations }) => ({ input, mutations, bytes: mutate(inputs[input]!, mutations) }));
}

/** Cut points for splitting an input into pieces (1-byte pieces included). */
export function cutsArb(): fc.Arbitrary<number[]> {
  return fc.oneof(
    fc.array(fc.nat({ max: 1 << 20 }), { maxLength: 12 }),
    fc.constant<number[]>([-1]), // marker: every byte its own piece
  );
}

export function splitBy(buf: Uint8Array, cuts: readonly number[]): Uint8Array[] {
  if (cuts.length === 1 && cuts[0] === -1) {
    if (buf.length > 4096)
      return splitBy(
        buf,
        Array.from({ length: 64 }, (_, i) => Math.floor((i * buf.length) / 64) + (i % 7)),
      );
    return Array.from(buf, (b) => Uint8Array.of(b));
  }
  const points = [...new Set(cuts.map((c) => (buf.length ? c % (buf.length + 1) : 0)))].sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let prev = 0;
  for (const p of points) {
    out.push(buf.subarray(prev, p));
    prev = p;
  }
  out.push(buf.subarray(prev));
  return out;
}

/** Reads every entry and all its data; the reader is closed whatever happens. */
export async function drain(reader: StreamReader): Promise<number> {
  let total = 0;
  try {
    for (;;) {
      const e = await reader.nextEntry();
      if (!e) break;
      let got = 0;
      await reader.copyData((c) => {
        got += c.length;
      });
      expect(got).toBe(e.size);
      total += got;
    }
  } finally {
    await reader.close();
  }
  return total;
}

/**
 * Every part of a bundle2 stream (a bundle file's or a getbundle body) with its payload read, as
 * the clone reads it: stream2 parts through their reader.
 */
export async function drainBundle2(src: ByteSource): Promise<void> {
  const b = await Bundle2Reader.open(src, {
    knownParts: {
      stream2: STREAM2_PARAMS,
      listkeys: ['namespace'],
      'phase-heads': [],
      bookmarks: [],
      changegroup: ['version', 'nbchanges'],
    },
  });
  try {
    for (;;) {
      const part = await b.nextPart();
      if (!part) break;
      if (part.type === 'stream2') await drain(readStream2Part(part, b.compression));
      else await part.payload.drain();
    }
  } finally {
    await b.close();
  }
}
