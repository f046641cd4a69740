// Hostile input: every malformed, lying or truncated stream is refused with the right
// SluiceError code, before any unsafe name is handed out, and never with another exception.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SluiceError, type ErrorCode } from '../../../../src/main/engine/errors';
import { Bundle2Reader, Bundle2Writer, int32, type Param } from '../../../../src/main/engine/format/bundle2';
import { openStreamBundle } from '../../../../src/main/engine/format/stream-bundle-file';
import { ByteSource } from '../../../../src/main/engine/format/byte-source';
import { packed1Header } from '../../../../src/main/engine/format/packed1';
import { readStreamOut } from '../../../../src/main/engine/format/stream-v1';
import {
  STREAM2_PARAMS,
  readStream2Part,
  stream2EntryHeader,
  stream2Params,
  writeUvarint,
} from '../../../../src/main/engine/format/stream2';
import { chunked, errorCode, fixture, readAll, source, splitAt } from '../../../support/format';

const ascii = (s: string): Buffer => Buffer.from(s, 'latin1');

interface RawEntry {
  name: string;
  data: string;
  /** announce this size instead of data.length */
  size?: number;
}

/** packed1 with raw (not encodedir'd) v1 entry lines. */
function packed1(
  entries: RawEntry[],
  opts: { files?: number; bytes?: number; reqs?: string[]; tail?: string } = {},
): Buffer {
  const bytes = opts.bytes ?? entries.reduce((s, e) => s + e.data.length, 0);
  const body = entries.map((e) => `${e.name}\0${e.size ?? e.data.length}\n${e.data}`).join('');
  return Buffer.concat([
    packed1Header(opts.files ?? entries.length, bytes, opts.reqs ?? ['revlogv1']),
    ascii(body + (opts.tail ?? '')),
  ]);
}

function streamOut(
  entries: RawEntry[],
  opts: { files?: number; bytes?: number; status?: string } = {},
): Buffer {
  const bytes = opts.bytes ?? entries.reduce((s, e) => s + e.data.length, 0);
  const body = entries.map((e) => `${e.name}\0${e.size ?? e.data.length}\n${e.data}`).join('');
  return ascii(`${opts.status ?? '0'}\n${opts.files ?? entries.length} ${bytes}\n${body}`);
}

async function v2Bundle(
  payload: Uint8Array,
  params: Param[],
  opts: { chunkSize?: number } = {},
): Promise<Buffer> {
  const w = new Bundle2Writer({ chunkSize: opts.chunkSize ?? 7 });
  async function* data(): AsyncGenerator<Uint8Array> {
    yield payload;
  }
  w.addPart({ type: 'stream2', mandatoryParams: params, data: data() });
  const out: Uint8Array[] = [];
  for await (const c of w.chunks()) out.push(c);
  return Buffer.concat(out);
}

function v2Payload(entries: (RawEntry & { vfs?: 's' | 'c' })[]): Buffer {
  return Buffer.concat(
    entries.flatMap((e) => [
      stream2EntryHeader(e.vfs ?? 's', e.name, e.size ?? e.data.length),
      ascii(e.data),
    ]),
  );
}

async function v2(
  entries: (RawEntry & { vfs?: 's' | 'c' })[],
  opts: { files?: number; bytes?: number } = {},
): Promise<Buffer> {
  const bytes = opts.bytes ?? entries.reduce((s, e) => s + e.data.length, 0);
  return v2Bundle(v2Payload(entries), stream2Params(opts.files ?? entries.length, bytes, ['revlogv1']));
}

/** Reads everything; returns the names handed out and the error code (or 'ok'). */
async function attempt(
  open: () => Promise<import('../../../../src/main/engine/format/stream-reader').StreamReader>,
): Promise<{ names: string[]; code: ErrorCode | 'ok' }> {
  const names: string[] = [];
  try {
    const reader = await open();
    for (;;) {
      const e = await reader.nextEntry();
      if (!e) break;
      names.push(e.name);
      await reader.copyData(() => undefined);
    }
    return { names, code: 'ok' };
  } catch (e) {
    if (!(e instanceof SluiceError)) throw e;
    return { names, code: e.code };
  }
}

const bundleOf = (b: Uint8Array) => () => openStreamBundle(source(b));
const wireOf = (b: Uint8Array) => () => readStreamOut(source(b));

const GOOD: RawEntry = { name: 'data/a.i', data: 'AAAA' };

describe('unsafe names are refused before they are returned, in all three formats', () => {
  const unsafe = [
    '../../x',
    '/etc/passwd',
    'data/../../hgrc',
    'data/x\\..\\y.i',
    'C:x',
    'data//x.i',
    'data/./x.i',
    'hgrc',
    'requires',
    'data/a.txt',
    '',
    'data/a\rb.i',
  ];
  it.each(unsafe)('%j', async (name) => {
    const entries = [GOOD, { name, data: 'evil' }];
    for (const [label, run] of [
      ['packed1', bundleOf(packed1(entries))],
      ['stream_out', wireOf(streamOut(entries))],
      ['v2', bundleOf(await v2(entries))],
    ] as const) {
      const r = await attempt(run);
      expect(r, label).toEqual({
        names: ['data/a.i'],
        code: name === '' && label !== 'v2' ? r.code : 'UNSAFE_PATH',
      });
      expect(r.code, label).not.toBe('ok');
    }
  });

  it('NUL in a v2 name is UNSAFE_PATH; in v1 it cannot even be expressed (MALFORMED size)', async () => {
    expect((await attempt(bundleOf(await v2([{ name: 'data/a\0b.i', data: 'x' }])))).code).toBe(
      'UNSAFE_PATH',
    );
    expect((await attempt(bundleOf(packed1([{ name: 'data/a\0b.i', data: 'x' }])))).code).toBe('MALFORMED');
  });

  it('cache entries: single plain file names only', async () => {
    for (const name of ['../hgrc', 'sub/x', 'hgrc\\x', '.', '..']) {
      expect((await attempt(bundleOf(await v2([{ vfs: 'c', name, data: 'x' }])))).code, name).toBe(
        'UNSAFE_PATH',
      );
    }
    expect((await attempt(bundleOf(await v2([{ vfs: 'c', name: 'branch2-served', data: 'x' }])))).code).toBe(
      'ok',
    );
  });

  it('v1 names are decodedir’d before the check (data/x.hg.hg/../ cannot sneak through)', async () => {
    expect((await attempt(bundleOf(packed1([{ name: 'data/x.hg.hg/y.i', data: 'z' }])))).names).toEqual([
      'data/x.hg/y.i',
    ]);
    expect((await attempt(bundleOf(packed1([{ name: 'data/x.hg.hg/../../../y.i', data: 'z' }])))).code).toBe(
      'UNSAFE_PATH',
    );
  });

  it('unknown vfs key is MALFORMED', async () => {
    const payload = Buffer.concat([ascii('x'), Buffer.from([8, 1]), ascii('data/a.iZ')]);
    const b = await v2Bundle(payload, stream2Params(1, 1, []));
    expect((await attempt(bundleOf(b))).code).toBe('MALFORMED');
  });
});

describe('lying counts and sizes', () => {
  const two = [GOOD, { name: 'data/b.i', data: 'BBBBBB' }];
  const cases: [
    string,
    (entries: RawEntry[], o: { files?: number; bytes?: number }) => Promise<() => Promise<unknown>>,
  ][] = [
    ['packed1', async (e, o) => bundleOf(packed1(e, o))],
    ['stream_out', async (e, o) => wireOf(streamOut(e, o))],
    ['v2', async (e, o) => bundleOf(await v2(e, o))],
  ];
  it.each(cases)('%s: more/fewer files or bytes than announced → SIZE_MISMATCH', async (_label, make) => {
    const run = async (entries: RawEntry[], o: { files?: number; bytes?: number }) =>
      attempt(
        (await make(entries, o)) as () => Promise<
          import('../../../../src/main/engine/format/stream-reader').StreamReader
        >,
      );
    expect((await run(two, {})).code).toBe('ok');
    expect((await run(two, { files: 3 })).code).toBe('SIZE_MISMATCH'); // fewer entries than announced
    expect((await run(two, { files: 1, bytes: 4 })).code).toBe('SIZE_MISMATCH'); // more
    expect((await run(two, { bytes: 11 })).code).toBe('SIZE_MISMATCH'); // bytes announced > data
    expect((await run(two, { bytes: 9 })).code).toBe('SIZE_MISMATCH'); // bytes announced < data
    // an entry that claims more than the whole stream announced is refused before its data
    const r = await run([{ name: 'data/a.i', data: 'AAAA', size: 1_000_000 }], { bytes: 4 });
    expect(r).toEqual({ names: [], code: 'SIZE_MISMATCH' });
  });

  it('an entry size larger than the remaining input is TRUNCATED', async () => {
    const b = packed1([{ name: 'data/a.i', data: 'AAAA', size: 10 }], { bytes: 10 });
    expect((await attempt(bundleOf(b))).code).toBe('TRUNCATED');
  });

  it('trailing garbage after the last packed1/stream_out entry → SIZE_MISMATCH; v2 part payload too', async () => {
    expect((await attempt(bundleOf(packed1([GOOD], { tail: 'x' })))).code).toBe('SIZE_MISMATCH');
    expect((await attempt(wireOf(Buffer.concat([streamOut([GOOD]), ascii('\n')])))).code).toBe(
      'SIZE_MISMATCH',
    );
    const payload = Buffer.concat([v2Payload([GOOD]), ascii('junk')]);
    expect((await attempt(bundleOf(await v2Bundle(payload, stream2Params(1, 4, []))))).code).toBe(
      'SIZE_MISMATCH',
    );
  });

  it('absurd announced counts are LIMIT', async () => {
    const huge = Buffer.from(packed1([GOOD]));
    huge.writeBigUInt64BE(1n << 60n, 6);
    expect((await attempt(bundleOf(huge))).code).toBe('LIMIT');
    const hugeBytes = Buffer.from(packed1([GOOD]));
    hugeBytes.writeBigUInt64BE(1n << 62n, 14);
    expect((await attempt(bundleOf(hugeBytes))).code).toBe('LIMIT');
    expect(await attempt(wireOf(ascii('0\n99999999 4\n')))).toEqual({ names: [], code: 'LIMIT' });
    expect(await attempt(wireOf(ascii('0\n1 99999999999999999999\n')))).toEqual({ names: [], code: 'LIMIT' });
    const p = stream2Params(1, 4, []);
    p[1] = ['filecount', '123456789012345678901234567890'];
    expect((await attempt(bundleOf(await v2Bundle(v2Payload([GOOD]), p)))).code).toBe('LIMIT');
    expect(
      await attempt(bundleOf(packed1([{ name: 'data/a.i', data: '', size: 2 ** 50 }], { bytes: 2 ** 50 }))),
    ).toEqual({
      names: [],
      code: 'LIMIT',
    });
  });

  it('absurd varints and name lengths in v2 entries are LIMIT', async () => {
    const nineBytes = Buffer.from([0x73, 0x88, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]);
    expect(await attempt(bundleOf(await v2Bundle(nineBytes, stream2Params(1, 4, []))))).toEqual({
      names: [],
      code: 'LIMIT',
    });
    const hugeSize = Buffer.alloc(20);
    hugeSize[0] = 0x73;
    let at = writeUvarint(hugeSize, 1, 8);
    at = writeUvarint(hugeSize, at, 2 ** 52);
    expect(
      await attempt(bundleOf(await v2Bundle(hugeSize.subarray(0, at), stream2Params(1, 2 ** 52, [])))),
    ).toEqual({
      names: [],
      code: 'LIMIT',
    });
    const longName = v2Payload([{ name: 'data/' + 'x'.repeat(5000) + '.i', data: 'x' }]);
    expect(await attempt(bundleOf(await v2Bundle(longName, stream2Params(1, 1, []))))).toEqual({
      names: [],
      code: 'LIMIT',
    });
    const longV1 = packed1([{ name: 'data/' + 'x'.repeat(5000) + '.i', data: 'x' }]);
    expect((await attempt(bundleOf(longV1))).code).toBe('LIMIT');
  });
});

describe('headers', () => {
  it('packed1: only UN, requirements NUL-terminated, printable', async () => {
    const gz = Buffer.from(packed1([GOOD]));
    gz.write('GZ', 4, 'latin1');
    const err = (await openStreamBundle(source(gz)).catch((e: unknown) => e)) as SluiceError;
    expect(err.code).toBe('UNSUPPORTED_COMPRESSION');
    expect(err.message).toContain('GZ');
    const noNul = Buffer.from(packed1([GOOD]));
    noNul[24 + 'revlogv1'.length] = 0x41;
    expect(await errorCode(() => openStreamBundle(source(noNul)))).toBe('MALFORMED');
    const zeroLength = Buffer.from(packed1([GOOD]));
    zeroLength.writeUInt16BE(0, 22);
    expect(await errorCode(() => openStreamBundle(source(zeroLength)))).toBe('MALFORMED');
    const weird = packed1([GOOD], { reqs: ['revlogv1', 'bad req'] });
    expect(await errorCode(() => openStreamBundle(source(weird)))).toBe('MALFORMED');
    const none = await openStreamBundle(source(packed1([GOOD], { reqs: [] })));
    expect(none.header.requirements).toEqual([]);
  });

  it('stream_out status lines carry hg’s messages', async () => {
    const fail = async (body: string) =>
      (await readStreamOut(source(ascii(body))).catch((e: unknown) => e)) as SluiceError;
    expect(await fail('1\n')).toMatchObject({ code: 'NO_STREAM', message: 'operation forbidden by server' });
    expect(await fail('2\n')).toMatchObject({
      code: 'REMOTE_ABORT',
      message: 'locking the remote repository failed',
    });
    expect(await fail('3\n')).toMatchObject({
      code: 'PROTOCOL',
      message: 'the server sent an unknown error code',
    });
    expect((await fail('<html>\n')).code).toBe('PROTOCOL');
    expect((await fail('0\n12\n')).code).toBe('MALFORMED');
    expect((await fail('0\n1 -2\n')).code).toBe('MALFORMED');
    expect((await fail('0\n1 2')).code).toBe('TRUNCATED');
    expect((await fail('')).code).toBe('TRUNCATED');
    expect((await fail('0'.repeat(100) + '\n')).code).toBe('LIMIT');
    expect((await fail('0\ndata/a.i 4\nAAAA')).code).toBe('MALFORMED');
    const ok = await readStreamOut(source(ascii(' 0 \n0 0\n')));
    expect(await ok.nextEntry()).toBeNull();
  });

  it('v1 entry lines: NUL required, strict decimal size', async () => {
    for (const line of [
      'data/a.i 4\n',
      'data/a.i\0+4\n',
      'data/a.i\0 4\n',
      'data/a.i\0\n',
      'data/a.i\x004x\n',
    ]) {
      const b = Buffer.concat([packed1Header(1, 4, ['revlogv1']), ascii(line + 'AAAA')]);
      expect((await attempt(bundleOf(b))).code, JSON.stringify(line)).toBe('MALFORMED');
    }
  });

  it('stream2 params: all three required, decimal, requirements unquoted and split', async () => {
    const run = async (params: Param[]) => attempt(bundleOf(await v2Bundle(v2Payload([GOOD]), params)));
    expect(
      (
        await run([
          ['bytecount', '4'],
          ['filecount', '1'],
        ])
      ).code,
    ).toBe('MALFORMED');
    expect(
      (
        await run([
          ['bytecount', '4'],
          ['filecount', '1'],
          ['requirements', ''],
          ['frob', '1'],
        ])
      ).code,
    ).toBe('UNKNOWN_PARAM');
    expect(
      (
        await run([
          ['bytecount', '0x4'],
          ['filecount', '1'],
          ['requirements', ''],
        ])
      ).code,
    ).toBe('MALFORMED');
    const reader = await openStreamBundle(
      source(
        await v2Bundle(v2Payload([GOOD]), [
          ['bytecount', '4'],
          ['filecount', '1'],
          ['requirements', 'revlogv1%2Cgeneraldelta'],
        ]),
      ),
    );
    expect(reader.header.requirements).toEqual(['revlogv1', 'generaldelta']);
  });

  it('bad magic names what it saw; HG10 and changegroup bundles say they are not stream clones', async () => {
    const err = (await openStreamBundle(source(ascii('PK\x03\x04rest'))).catch(
      (e: unknown) => e,
    )) as SluiceError;
    expect(err.code).toBe('BAD_MAGIC');
    expect(err.message).toContain('50 4b 03 04');
    const text = (await openStreamBundle(source(ascii('<htm'))).catch((e: unknown) => e)) as SluiceError;
    expect(text.message).toContain('"<htm"');
    const hg10 = (await openStreamBundle(source(ascii('HG10UNxxxx'))).catch(
      (e: unknown) => e,
    )) as SluiceError;
    expect(hg10.code).toBe('BAD_MAGIC');
    expect(hg10.message).toContain('not a stream clone bundle (changegroup bundle');
    const w = new Bundle2Writer();
    w.addPart({ type: 'changegroup', mandatoryParams: [['version', '02']], data: ascii('x') });
    const parts: Uint8Array[] = [];
    for await (const c of w.chunks()) parts.push(c);
    const cg = (await openStreamBundle(source(Buffer.concat(parts))).catch((e: unknown) => e)) as SluiceError;
    expect(cg.message).toContain('not a stream clone bundle (changegroup bundle');
    expect(await errorCode(() => openStreamBundle(source(ascii('HG'))))).toBe('TRUNCATED');
  });

  it('a bundle with two stream2 parts or an unknown mandatory part after it is refused', async () => {
    const w = new Bundle2Writer();
    w.addPart({ type: 'stream2', mandatoryParams: stream2Params(1, 4, []), data: v2Payload([GOOD]) });
    w.addPart({ type: 'stream2', mandatoryParams: stream2Params(1, 4, []), data: v2Payload([GOOD]) });
    const parts: Uint8Array[] = [];
    for await (const c of w.chunks()) parts.push(c);
    expect(await attempt(bundleOf(Buffer.concat(parts)))).toEqual({ names: ['data/a.i'], code: 'MALFORMED' });
    const w2 = new Bundle2Writer();
    w2.addPart({ type: 'stream2', mandatoryParams: stream2Params(1, 4, []), data: v2Payload([GOOD]) });
    w2.addPart({ type: 'output', mandatory: false, data: ascii('advisory, ignored') });
    w2.addPart({ type: 'obsmarkers', data: ascii('mandatory, unknown') });
    const parts2: Uint8Array[] = [];
    for await (const c of w2.chunks()) parts2.push(c);
    expect(await attempt(bundleOf(Buffer.concat(parts2)))).toEqual({
      names: ['data/a.i'],
      code: 'UNKNOWN_PART',
    });
  });
});

describe('fuzz', () => {
  it('mutated fixtures: only SluiceError, never a hang', async () => {
    const inputs = ['packed1.hg', 'stream-v2.hg', 'stream-v2-zstd.hg', 'stream-v2-gzip.hg'].map((f) =>
      fixture('legacy', f),
    );
    const structural = (b: Buffer): number => Math.floor(Math.random() * Math.min(b.length, 4096));
    await fc.assert(
      fc.asyncProperty(
        fc.nat(inputs.length - 1),
        fc.array(fc.tuple(fc.boolean(), fc.nat(), fc.integer({ min: 1, max: 255 })), {
          minLength: 1,
          maxLength: 6,
        }),
        async (which, edits) => {
          const b = Buffer.from(inputs[which]!);
          for (const [nearStart, pos, xor] of edits) {
            const at = nearStart ? structural(b) : pos % b.length;
            b[at] = b[at]! ^ xor;
          }
          const r = await attempt(bundleOf(b));
          expect(typeof r.code).toBe('string');
        },
      ),
      { numRuns: 250 },
    );
  });

  it('hostile inputs fail the same way in any split', async () => {
    const hostile = [
      packed1([GOOD, { name: '../../x', data: 'evil' }]),
      packed1([GOOD], { files: 2 }),
      await v2([GOOD, { name: 'data/../../hgrc', data: 'x' }]),
      await v2([GOOD], { bytes: 5 }),
      Buffer.concat([await v2([GOOD]), Buffer.from('trailing ignored')]),
    ];
    const reference = await Promise.all(hostile.map((h) => attempt(bundleOf(h))));
    await fc.assert(
      fc.asyncProperty(
        fc.nat(hostile.length - 1),
        fc.array(fc.nat(400), { maxLength: 30 }),
        async (i, cuts) => {
          const split = await attempt(() =>
            openStreamBundle(new ByteSource(chunked(splitAt(hostile[i]!, cuts)))),
          );
          expect(split).toEqual(reference[i]);
        },
      ),
      { numRuns: 200 },
    );
  });
});

// --- truncation at every byte ----------------------------------------------------------------

const TRUNCATION_CODES: ErrorCode[] = ['TRUNCATED', 'SIZE_MISMATCH', 'COMPRESSION'];

/** Every prefix shorter than the whole input must fail with a truncation code. */
async function sweep(
  whole: Buffer,
  open: (src: ByteSource) => Promise<unknown>,
  offsets: Iterable<number>,
): Promise<number> {
  let n = 0;
  for (const k of offsets) {
    let code: string;
    try {
      const reader = (await open(
        source(whole.subarray(0, k)),
      )) as import('../../../../src/main/engine/format/stream-reader').StreamReader;
      for (let e = await reader.nextEntry(); e; e = await reader.nextEntry())
        await reader.copyData(() => undefined);
      code = 'ok';
    } catch (e) {
      if (!(e instanceof SluiceError)) throw new Error(`prefix ${k}: ${String(e)}`);
      code = e.code;
    }
    if (!TRUNCATION_CODES.includes(code as ErrorCode))
      throw new Error(`prefix ${k} of ${whole.length}: ${code}`);
    n++;
  }
  return n;
}

const all = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

/**
 * SLUICE_FULL_TRUNCATION=1 sweeps literally every prefix (≈ 3 minutes here). By default every
 * byte of every structure is swept (headers, entry headers, chunk frames, the first and last
 * 256 bytes of each entry's data) and the inside of the one large entry (big.bin's 140 KB of
 * random bytes, where all prefixes take the same path) every 61st byte.
 */
const FULL = process.env.SLUICE_FULL_TRUNCATION === '1';

async function largestEntryEdges(
  whole: Buffer,
  open: (src: ByteSource) => Promise<unknown>,
): Promise<[Buffer, Buffer]> {
  const reader = (await open(
    source(whole),
  )) as import('../../../../src/main/engine/format/stream-reader').StreamReader;
  let best: Buffer = Buffer.alloc(0);
  for (let e = await reader.nextEntry(); e; e = await reader.nextEntry()) {
    const parts: Uint8Array[] = [];
    await reader.copyData((c) => {
      parts.push(c);
    });
    if (e.size > best.length) best = Buffer.concat(parts);
  }
  return [best.subarray(0, 256), best.subarray(best.length - 256)];
}

async function sweepOffsets(whole: Buffer, open: (src: ByteSource) => Promise<unknown>): Promise<number[]> {
  if (FULL) return all(whole.length);
  const [head, tail] = await largestEntryEdges(whole, open);
  const from = whole.indexOf(head) + head.length;
  const to = whole.lastIndexOf(tail);
  expect(from).toBeGreaterThan(head.length);
  expect(to).toBeGreaterThan(from + 100_000);
  // bundle2 payload frames (i32 32768) inside the data stay dense
  const frames: number[] = [];
  for (
    let at = whole.indexOf(Buffer.from('00008000', 'hex'), from);
    at >= 0 && at < to;
    at = whole.indexOf(Buffer.from('00008000', 'hex'), at + 1)
  ) {
    frames.push(at);
  }
  const opaque = (k: number): boolean => k > from && k < to && !frames.some((f) => Math.abs(k - f) < 40);
  return all(whole.length).filter((k) => !opaque(k) || k % 61 === 0);
}

describe('truncation at every byte of the small fixtures', { timeout: FULL ? 1_800_000 : 60_000 }, () => {
  it('packed1.hg', async () => {
    const whole = fixture('legacy', 'packed1.hg');
    const offsets = await sweepOffsets(whole, openStreamBundle);
    expect(await sweep(whole, openStreamBundle, offsets)).toBe(offsets.length);
  });

  it('stream-v2.hg (none)', async () => {
    const whole = fixture('legacy', 'stream-v2.hg');
    const offsets = await sweepOffsets(whole, openStreamBundle);
    expect(await sweep(whole, openStreamBundle, offsets)).toBe(offsets.length);
  });

  it('stream_out.bin', async () => {
    const whole = fixture('legacy', 'stream_out.bin');
    const offsets = await sweepOffsets(whole, readStreamOut);
    expect(await sweep(whole, readStreamOut, offsets)).toBe(offsets.length);
  });

  it('getbundle-stream2.bin (after the 0.2 framing)', async () => {
    const whole = Buffer.from(fixture('legacy', 'getbundle-stream2.bin').subarray(5));
    const open = async (src: ByteSource) => {
      const bundle = await Bundle2Reader.open(src, { knownParts: { stream2: STREAM2_PARAMS } });
      const part = await bundle.nextPart();
      if (!part) throw new SluiceError('TRUNCATED', 'no part');
      const reader = readStream2Part(part);
      return {
        header: reader.header,
        nextEntry: async () => {
          const e = await reader.nextEntry();
          if (!e && (await bundle.nextPart()) !== null) throw new Error('extra part');
          return e;
        },
        copyData: reader.copyData.bind(reader),
        close: reader.close.bind(reader),
      };
    };
    const offsets = await sweepOffsets(whole, open);
    expect(await sweep(whole, open, offsets)).toBe(offsets.length);
  });

  it('stream-v2-zstd.hg: every byte of the container header, the first 3 KiB and last 512 bytes of the frame', async () => {
    // Each prefix decompresses up to 145 KB again (~1.5 ms): the opaque middle of the frame is
    // taken every 97th byte unless SLUICE_FULL_TRUNCATION=1.
    const whole = fixture('legacy', 'stream-v2-zstd.hg');
    const offsets = all(whole.length).filter(
      (k) => FULL || k < 3072 || k > whole.length - 512 || k % 97 === 0,
    );
    expect(await sweep(whole, openStreamBundle, offsets)).toBe(offsets.length);
  });

  it('the whole inputs themselves parse', async () => {
    for (const f of ['packed1.hg', 'stream-v2.hg', 'stream-v2-zstd.hg']) {
      expect((await readAll(await openStreamBundle(source(fixture('legacy', f))))).length).toBeGreaterThan(
        20,
      );
    }
    expect(int32(0).length).toBe(4);
  });
});
