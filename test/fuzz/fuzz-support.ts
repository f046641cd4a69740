// Shared machinery of the fuzz suite: the property every parser of untrusted bytes must hold
// ("each input either parses, into a result that holds the format's invariants, or throws a
// SluiceError with a code that describes input: no other exception, no hang, no huge
// allocation"), mutation of real fixture bytes (bit flips, truncation, insertion, splices,
// overwritten integers) and random splits of the input into pieces.
//
// Budget: FUZZ_RUNS (default 1 = the bounded run inside `vitest run`, the whole suite well under a
// minute) multiplies every property's run count; FUZZ_SEED fixes fast-check's seed so a failure
// printed by scripts/fuzz-long.mjs can be replayed.
import fc from 'fast-check';
import { createHash } from 'node:crypto';
import { expect } from 'vitest';
import { isSluiceError, type ErrorCode } from '../../src/main/engine/errors';
import { Bundle2Reader } from '../../src/main/engine/format/bundle2';
import type { ByteSource } from '../../src/main/engine/format/byte-source';
import { MAX_ENTRY_SIZE } from '../../src/main/engine/format/limits';
import type { StreamReader } from '../../src/main/engine/format/stream-reader';
import { STREAM2_PARAMS, readStream2Part } from '../../src/main/engine/format/stream2';
import { entryNameProblem } from '../../src/main/engine/store/paths';

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
 * The codes a parser may refuse untrusted bytes with: each says what is wrong with the input or
 * what the peer said. Anything else (IO, CANCELLED, USAGE...) from a parser is a bug in it.
 */
export const INPUT_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'BAD_MAGIC',
  'TRUNCATED',
  'MALFORMED',
  'LIMIT',
  'SIZE_MISMATCH',
  'UNSAFE_PATH',
  'UNSUPPORTED_REQUIREMENTS',
  'UNSUPPORTED_COMPRESSION',
  'UNKNOWN_PART',
  'UNKNOWN_PARAM',
  'COMPRESSION',
  'REMOTE_ABORT',
  'OBSOLESCENCE_DISABLED',
  'HTTP',
  'PROTOCOL',
  'AUTH',
  'ACCESS_DENIED',
  'NO_STREAM',
  'UNRELATED',
  'REVLOG',
]);

/** What a case came to: the value `fn` returned, or the code of the SluiceError it threw. */
export type Outcome<T> = { ok: true; value: T } | { ok: false; code: ErrorCode };

/**
 * Runs fn; resolves with its value or the code of the SluiceError it threw; rejects (failing the
 * property) on any other exception, on a SluiceError whose code is not one of INPUT_CODES, on a
 * timeout and when memory ballooned.
 */
export async function outcomeOf<T>(fn: () => T | Promise<T>, label = 'case'): Promise<Outcome<T>> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${label}: no answer within ${CASE_TIMEOUT_MS} ms (hang?)`)),
      CASE_TIMEOUT_MS,
    );
  });
  try {
    const outcome = await Promise.race([
      (async (): Promise<Outcome<T>> => {
        try {
          return { ok: true, value: await fn() };
        } catch (e) {
          if (isSluiceError(e) && INPUT_CODES.has(e.code)) return { ok: false, code: e.code };
          const what = e instanceof Error ? `${e.name}: ${e.message}\n${e.stack}` : String(e);
          const not = isSluiceError(e)
            ? `a SluiceError of code ${e.code}, not one that describes input`
            : 'something other than a SluiceError';
          throw new NotSluiceError(`${label}: threw ${not}: ${what}`);
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

/** outcomeOf as a string: 'ok' or 'sluice:<code>'. */
export async function parsesOrSluiceError(fn: () => unknown, label = 'case'): Promise<string> {
  const o = await outcomeOf(fn, label);
  return o.ok ? 'ok' : `sluice:${o.code}`;
}

/**
 * The same bytes read whole and in the pieces `cuts` makes come to the same outcome: the same
 * value (compared deeply) or the same refusal. A parser's answer never depends on how its input
 * arrived. The one latitude: a corrupt compressed stream may be caught by the decompressor
 * (COMPRESSION) or, when it decoded to garbage first, by the parser reading that garbage,
 * depending on where the pieces end.
 */
export async function sameInAnySplit<T>(
  bytes: Uint8Array,
  cuts: readonly number[],
  read: (pieces: Uint8Array[]) => Promise<T>,
  label: string,
): Promise<Outcome<T>> {
  const pieces = splitBy(bytes, cuts);
  const split = await outcomeOf(() => read(pieces), label);
  const whole = await outcomeOf(() => read([bytes]), `${label} (whole)`);
  const what = `${label}: read in ${pieces.length} pieces vs whole`;
  if (!split.ok && !whole.ok && [split.code, whole.code].includes('COMPRESSION')) return split;
  expect(split, what).toEqual(whole);
  return split;
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

/** One entry a stream reader accepted: where it goes, its size and a digest of its data. */
export interface EntrySummary {
  vfs: 's' | 'c';
  name: string;
  size: number;
  sha1: string;
}

/**
 * Reads every entry and all its data; the reader is closed whatever happens. What it accepted
 * holds the format's invariants: each entry's data is exactly its size, within MAX_ENTRY_SIZE,
 * under a name the path checks pass; the entries are as many as the header announced and their
 * sizes add up to the announced byte count.
 */
export async function drain(reader: StreamReader): Promise<EntrySummary[]> {
  const entries: EntrySummary[] = [];
  try {
    for (;;) {
      const e = await reader.nextEntry();
      if (!e) break;
      const hash = createHash('sha1');
      let got = 0;
      await reader.copyData((c) => {
        got += c.length;
        hash.update(c);
      });
      expect(got).toBe(e.size);
      expect(e.size).toBeLessThanOrEqual(MAX_ENTRY_SIZE);
      expect(entryNameProblem(e.vfs, e.name), e.name).toBeNull();
      entries.push({ vfs: e.vfs, name: e.name, size: e.size, sha1: hash.digest('hex') });
    }
  } finally {
    await reader.close();
  }
  expect(entries.length).toBe(reader.header.files);
  expect(entries.reduce((n, e) => n + e.size, 0)).toBe(reader.header.bytes);
  return entries;
}

/** One part a bundle2 reader accepted: its type, params, payload size and digest (stream2: entries). */
export interface PartSummary {
  type: string;
  params: [string, string][];
  size: number;
  sha1: string;
  entries?: EntrySummary[];
}

/**
 * Every part of a bundle2 stream (a bundle file's or a getbundle body) with its payload read, as
 * the clone reads it: stream2 parts through their reader (with drain's invariants).
 */
export async function drainBundle2(src: ByteSource): Promise<PartSummary[]> {
  const b = await Bundle2Reader.open(src, {
    knownParts: {
      stream2: STREAM2_PARAMS,
      listkeys: ['namespace'],
      'phase-heads': [],
      bookmarks: [],
      changegroup: ['version', 'nbchanges'],
    },
  });
  const parts: PartSummary[] = [];
  try {
    for (;;) {
      const part = await b.nextPart();
      if (!part) break;
      const summary: PartSummary = { type: part.type, params: [...part.params], size: 0, sha1: '' };
      if (part.type === 'stream2') summary.entries = await drain(readStream2Part(part, b.compression));
      else {
        const hash = createHash('sha1');
        for (let c = await part.payload.readSome(1 << 16); c; c = await part.payload.readSome(1 << 16)) {
          summary.size += c.length;
          hash.update(c);
        }
        summary.sha1 = hash.digest('hex');
      }
      parts.push(summary);
    }
  } finally {
    await b.close();
  }
  return parts;
}
