import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../../../src/main/engine/errors';
import {
  Bundle2Reader,
  Bundle2Writer,
  encodePartHeader,
  int32,
  parsePartHeader,
  parseStreamParams,
  quote,
  unquote,
  type Bundle2OutPart,
  type Bundle2ReaderOptions,
} from '../../../../src/main/engine/format/bundle2';
import { ByteSource } from '../../../../src/main/engine/format/byte-source';
import { chunked, errorCode, source, splitAt } from '../../../support/format';

const hex = (s: string): Buffer => Buffer.from(s.replace(/[^0-9a-f]/gi, ''), 'hex');
const ascii = (s: string): Buffer => Buffer.from(s, 'latin1');
const KNOWN: Bundle2ReaderOptions = {
  knownParts: {
    stream2: ['bytecount', 'filecount', 'requirements'],
    bookmarks: [],
    listkeys: ['namespace'],
    'test:part': [],
  },
};

async function collect(it: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const c of it) parts.push(c);
  return Buffer.concat(parts);
}

async function* gen(...pieces: Uint8Array[]): AsyncGenerator<Uint8Array> {
  for (const p of pieces) yield p;
}

async function readParts(
  bytes: Uint8Array,
  options = KNOWN,
): Promise<{ type: string; params: Record<string, string>; payload: string }[]> {
  const reader = await Bundle2Reader.open(source(bytes), options);
  const out = [];
  for (;;) {
    const part = await reader.nextPart();
    if (!part) break;
    const chunks: Uint8Array[] = [];
    await part.payload.copy(0, () => undefined);
    for (;;) {
      const piece = await part.payload.readSome(1 << 20);
      if (!piece) break;
      chunks.push(piece.slice());
    }
    out.push({
      type: part.type,
      params: Object.fromEntries(part.params),
      payload: Buffer.concat(chunks).toString('latin1'),
    });
  }
  return out;
}

describe('bundle2 part headers', () => {
  it('encodes hg’s BOOKMARKS and LISTKEYS headers byte for byte (hg-stream-formats §3.3)', () => {
    expect(encodePartHeader({ type: 'bookmarks' }, 1)).toEqual(
      Buffer.concat([int32(16), hex('09 42 4f 4f 4b 4d 41 52 4b 53 00 00 00 01 00 00')]),
    );
    const listkeys = encodePartHeader({ type: 'listkeys', mandatoryParams: [['namespace', 'bookmarks']] }, 2);
    expect(listkeys).toEqual(
      Buffer.concat([
        int32(35),
        hex('08'),
        ascii('LISTKEYS'),
        hex('00 00 00 02 01 00 09 09'),
        ascii('namespacebookmarks'),
      ]),
    );
    const parsed = parsePartHeader(listkeys.subarray(4));
    expect(parsed).toEqual({
      type: 'listkeys',
      id: 2,
      mandatory: true,
      mandatoryParams: [['namespace', 'bookmarks']],
      advisoryParams: [],
    });
  });

  it('advisory = all lower case; matching is case-insensitive', () => {
    const h = encodePartHeader({ type: 'Test:Part', mandatory: false, advisoryParams: [['k', 'v']] }, 0);
    expect(h.subarray(5, 14).toString('latin1')).toBe('test:part');
    expect(parsePartHeader(h.subarray(4))).toMatchObject({
      type: 'test:part',
      mandatory: false,
      advisoryParams: [['k', 'v']],
    });
    expect(
      parsePartHeader(Buffer.concat([hex('07'), ascii('Stream2'), hex('00000000 0000')])).mandatory,
    ).toBe(true);
  });

  it('short, overlong or invalid headers are MALFORMED', () => {
    const good = encodePartHeader(
      { type: 'listkeys', mandatoryParams: [['namespace', 'bookmarks']] },
      2,
    ).subarray(4);
    for (let cut = 0; cut < good.length; cut++) {
      expect(() => parsePartHeader(good.subarray(0, cut))).toThrow(SluiceError);
    }
    expect(() => parsePartHeader(Buffer.concat([good, hex('00')]))).toThrow(/trailing/);
    expect(() => parsePartHeader(Buffer.concat([hex('03'), ascii('a/b'), hex('00000000 0000')]))).toThrow(
      /invalid bundle2 part type/,
    );
  });
});

describe('bundle2 stream parameters', () => {
  it('parses quoted names and values like _processallparams', () => {
    const p = parseStreamParams('Compression=GZ advisory e%20x=a%3Db%zz');
    expect([...p]).toEqual([
      ['Compression', 'GZ'],
      ['advisory', null],
      ['e x', 'a=b%zz'],
    ]);
    expect(() => parseStreamParams('a  b')).toThrow(/empty/);
    expect(() => parseStreamParams('1abc')).toThrow(/non-letter/);
    expect(() => parseStreamParams(Array.from({ length: 100 }, (_, i) => `p${i}`).join(' '))).toThrow(
      /exceeds the limit/,
    );
  });

  it('quote/unquote follow urllib (safe="/")', () => {
    expect(quote('generaldelta,revlog-compression-zstd,revlogv1,sparserevlog')).toBe(
      'generaldelta%2Crevlog-compression-zstd%2Crevlogv1%2Csparserevlog',
    );
    expect(quote('a b/c~d_e.f-g\xff')).toBe('a%20b/c~d_e.f-g%FF');
    expect(unquote('%2c%2C%zz%4')).toBe(',,%zz%4');
  });

  it('unknown mandatory stream param: UNKNOWN_PARAM; unknown advisory: ignored; bad Compression: UNSUPPORTED_COMPRESSION', async () => {
    const bundle = (params: string): Buffer =>
      Buffer.concat([ascii('HG20'), int32(params.length), ascii(params), int32(0)]);
    expect(await errorCode(() => Bundle2Reader.open(source(bundle('Frobnicate=1')), KNOWN))).toBe(
      'UNKNOWN_PARAM',
    );
    const r = await Bundle2Reader.open(source(bundle('frobnicate=1 other')), KNOWN);
    expect(await r.nextPart()).toBeNull();
    expect(await errorCode(() => Bundle2Reader.open(source(bundle('Compression=XZ')), KNOWN))).toBe(
      'UNSUPPORTED_COMPRESSION',
    );
    expect(await errorCode(() => Bundle2Reader.open(source(bundle('Compression')), KNOWN))).toBe(
      'UNSUPPORTED_COMPRESSION',
    );
    const err = (await Bundle2Reader.open(source(bundle('compression=LZ')), KNOWN).catch(
      (e: unknown) => e,
    )) as SluiceError;
    expect(err.message).toContain('LZ');
    // negative and absurd sizes
    expect(
      await errorCode(() => Bundle2Reader.open(source(Buffer.concat([ascii('HG20'), int32(-5)])), KNOWN)),
    ).toBe('MALFORMED');
    expect(
      await errorCode(() =>
        Bundle2Reader.open(source(Buffer.concat([ascii('HG20'), int32(1 << 30)])), KNOWN),
      ),
    ).toBe('LIMIT');
    expect(await errorCode(() => Bundle2Reader.open(source(ascii('HG2')), KNOWN))).toBe('TRUNCATED');
    expect(await errorCode(() => Bundle2Reader.open(source(ascii('HG19xxxx')), KNOWN))).toBe('BAD_MAGIC');
  });
});

describe('Bundle2Writer + Bundle2Reader', () => {
  const parts = (): Bundle2OutPart[] => [
    { type: 'bookmarks', data: hex('a6730d050fcf9f306f673a5185e6d2a95b3dbc6d 0006') },
    { type: 'output', mandatory: false, data: ascii('ignored advisory part') },
    {
      type: 'listkeys',
      mandatoryParams: [['namespace', 'bookmarks']],
      advisoryParams: [['extra', 'x']],
      data: gen(ascii('mybook\t'), ascii('a6730d05')),
    },
    { type: 'test:part', mandatory: false, data: new Uint8Array(0) },
  ];

  it.each(['UN', 'GZ', 'ZS'] as const)('round trip, compression %s, any split', async (compression) => {
    const w = new Bundle2Writer({ compression, chunkSize: 5 });
    for (const p of parts()) w.addPart(p);
    const bytes = await collect(w.chunks());
    if (compression !== 'UN')
      expect(bytes.subarray(8, 8 + 14).toString('latin1')).toBe(`Compression=${compression}`);
    const expected = [
      {
        type: 'bookmarks',
        params: {},
        payload: hex('a6730d050fcf9f306f673a5185e6d2a95b3dbc6d 0006').toString('latin1'),
      },
      { type: 'listkeys', params: { namespace: 'bookmarks', extra: 'x' }, payload: 'mybook\ta6730d05' },
      { type: 'test:part', params: {}, payload: '' },
    ];
    expect(await readParts(bytes)).toEqual(expected);
    for (let i = 0; i < 10; i++) {
      const cuts = Array.from({ length: 20 }, () => Math.floor(Math.random() * bytes.length));
      const reader = await Bundle2Reader.open(new ByteSource(chunked(splitAt(bytes, cuts))), KNOWN);
      const types = [];
      for (let p = await reader.nextPart(); p; p = await reader.nextPart()) types.push(p.type);
      expect(types).toEqual(['bookmarks', 'listkeys', 'test:part']);
    }
  });

  it('re-chunks iterable payloads into exactly chunkSize pieces (bytes payloads: one chunk)', async () => {
    const w = new Bundle2Writer({ chunkSize: 4 });
    w.addPart({ type: 'test:part', mandatory: false, data: gen(ascii('abc'), ascii('defghij'), ascii('')) });
    w.addPart({ type: 'test:part', mandatory: false, data: ascii('0123456789') });
    const bytes = await collect(w.chunks());
    const header = encodePartHeader({ type: 'test:part', mandatory: false }, 0);
    const header1 = encodePartHeader({ type: 'test:part', mandatory: false }, 1);
    // prettier-ignore
    expect(bytes).toEqual(
      Buffer.concat([
        ascii('HG20'), int32(0),
        header, int32(4), ascii('abcd'), int32(4), ascii('efgh'), int32(2), ascii('ij'), int32(0),
        header1, int32(10), ascii('0123456789'), int32(0),
        int32(0),
      ]),
    );
  });

  it('the next part skips the unread rest of the current one', async () => {
    const w = new Bundle2Writer({ chunkSize: 3 });
    w.addPart({ type: 'test:part', mandatory: false, data: gen(ascii('long payload nobody reads')) });
    w.addPart({ type: 'bookmarks', data: ascii('x') });
    const reader = await Bundle2Reader.open(source(await collect(w.chunks())), KNOWN);
    const first = (await reader.nextPart())!;
    expect(Buffer.from(await first.payload.readExact(4)).toString()).toBe('long');
    const second = (await reader.nextPart())!;
    expect(second.type).toBe('bookmarks');
    expect(Buffer.from(await second.payload.readExact(1)).toString()).toBe('x');
    expect(await reader.nextPart()).toBeNull();
  });

  it('closing a part’s payload early does not lose the container’s place', async () => {
    const w = new Bundle2Writer({ chunkSize: 3 });
    w.addPart({ type: 'test:part', mandatory: false, data: gen(ascii('a payload closed after 2 bytes')) });
    w.addPart({ type: 'bookmarks', data: ascii('next') });
    const reader = await Bundle2Reader.open(
      new ByteSource(chunked(splitAt(await collect(w.chunks()), [20, 40]))),
      KNOWN,
    );
    const first = (await reader.nextPart())!;
    await first.payload.readExact(2);
    await first.payload.close();
    const second = (await reader.nextPart())!;
    expect(Buffer.from(await second.payload.readExact(4)).toString()).toBe('next');
    expect(await reader.nextPart()).toBeNull();
  });

  it('unknown mandatory part: UNKNOWN_PART; unknown mandatory param of a known part: UNKNOWN_PARAM', async () => {
    const w = new Bundle2Writer();
    w.addPart({ type: 'changegroup', mandatoryParams: [['version', '02']], data: ascii('x') });
    expect(await errorCode(() => readParts(Buffer.from([])))).toBe('TRUNCATED');
    expect(await errorCode(async () => readParts(await collect(w.chunks())))).toBe('UNKNOWN_PART');
    const w2 = new Bundle2Writer();
    w2.addPart({
      type: 'listkeys',
      mandatoryParams: [
        ['namespace', 'bookmarks'],
        ['frobnicate', '1'],
      ],
    });
    expect(await errorCode(async () => readParts(await collect(w2.chunks())))).toBe('UNKNOWN_PARAM');
    // the same param as advisory is fine
    const w3 = new Bundle2Writer();
    w3.addPart({
      type: 'listkeys',
      mandatoryParams: [['namespace', 'bookmarks']],
      advisoryParams: [['frobnicate', '1']],
    });
    expect((await readParts(await collect(w3.chunks())))[0]!.params.frobnicate).toBe('1');
  });

  it('part types named like Object.prototype members are just unknown parts', async () => {
    for (const [type, mandatory] of [
      ['constructor', false],
      ['__proto__', false],
      ['CONSTRUCTOR', true],
      ['__PROTO__', true],
    ] as const) {
      const w = new Bundle2Writer();
      w.addPart({ type, mandatory, data: ascii('x') });
      const bytes = await collect(w.chunks());
      if (mandatory) expect(await errorCode(() => readParts(bytes))).toBe('UNKNOWN_PART');
      else expect(await readParts(bytes)).toEqual([]);
    }
  });

  it('negative sizes are MALFORMED, a missing end marker is TRUNCATED', async () => {
    const head = Buffer.concat([ascii('HG20'), int32(0)]);
    const part = encodePartHeader({ type: 'bookmarks' }, 0);
    expect(await errorCode(() => readParts(Buffer.concat([head, int32(-2)])))).toBe('MALFORMED');
    expect(await errorCode(() => readParts(Buffer.concat([head, part, int32(-7)])))).toBe('MALFORMED');
    expect(await errorCode(() => readParts(Buffer.concat([head, part, int32(-2147483648)])))).toBe(
      'MALFORMED',
    );
    expect(
      await errorCode(() => readParts(Buffer.concat([head, part, int32(3), ascii('abc'), int32(0)]))),
    ).toBe('TRUNCATED');
    expect(await errorCode(() => readParts(Buffer.concat([head, part, int32(3), ascii('ab')])))).toBe(
      'TRUNCATED',
    );
    expect(await errorCode(() => readParts(Buffer.concat([head, int32(70_000)])))).toBe('LIMIT');
    // the smallest valid bundle
    expect(await readParts(Buffer.concat([head, int32(0)]))).toEqual([]);
  });
});

describe('errors from the peer', () => {
  it('error:abort part → REMOTE_ABORT with message and hint (real getbundle reply, §3.7)', async () => {
    const message = 'stream data requested but server does not allow this feature';
    const hint =
      'well-behaved clients should not be requesting stream data from servers not advertising it; the client may be buggy';
    // prettier-ignore
    const bytes = Buffer.concat([
      ascii('HG20'), int32(0), hex('000000cf 0b'), ascii('ERROR:ABORT'), hex('00000000 01 01 07 3c 04 72'),
      ascii('message'), ascii(message), ascii('hint'), ascii(hint), int32(0), int32(0),
    ]);
    const err = (await readParts(bytes).catch((e: unknown) => e)) as SluiceError;
    expect(err.code).toBe('REMOTE_ABORT');
    expect(err.message).toBe(message);
    expect(err.details).toEqual({ message, hint });
  });

  it('interrupt with an out-of-band error:abort → REMOTE_ABORT (real bytes, §3.5)', async () => {
    // prettier-ignore
    const bytes = Buffer.concat([
      ascii('HG20'), int32(0), hex('00000010 09'), ascii('test:part'), hex('00000000 00 00'), hex('ffffffff'),
      hex('00000031 0b'), ascii('error:abort'), hex('00000000 01 00 07 16'), ascii('message'), ascii('unexpected error: boom'), int32(0),
      int32(0),
    ]);
    const reader = await Bundle2Reader.open(source(bytes), KNOWN);
    const part = (await reader.nextPart())!;
    const err = (await part.payload.readExact(1).catch((e: unknown) => e)) as SluiceError;
    expect(err.code).toBe('REMOTE_ABORT');
    expect(err.message).toBe('unexpected error: boom');
  });

  it('an advisory out-of-band part is processed and the payload resumes', async () => {
    const oob = Buffer.concat([
      encodePartHeader({ type: 'output', mandatory: false }, 0),
      int32(2),
      ascii('hi'),
      int32(0),
    ]);
    // prettier-ignore
    const bytes = Buffer.concat([
      ascii('HG20'), int32(0), encodePartHeader({ type: 'bookmarks' }, 0),
      int32(3), ascii('abc'), int32(-1), oob, int32(-1), int32(0), int32(2), ascii('de'), int32(0), int32(0),
    ]);
    expect(await readParts(bytes)).toEqual([{ type: 'bookmarks', params: {}, payload: 'abcde' }]);
    const mandatoryOob = Buffer.concat([encodePartHeader({ type: 'pushkey' }, 0), int32(0)]);
    /** a bundle of one bookmarks part whose payload is only an interrupt carrying `inner` */
    const interrupted = (inner: Buffer): Buffer =>
      Buffer.concat([
        ascii('HG20'),
        int32(0),
        encodePartHeader({ type: 'bookmarks' }, 0),
        int32(-1),
        inner,
        int32(0),
        int32(0),
      ]);
    const bad = interrupted(mandatoryOob);
    expect(await errorCode(() => readParts(bad))).toBe('UNKNOWN_PART');
    // interrupts nested deeper than any producer writes them
    let nested = Buffer.concat([encodePartHeader({ type: 'output', mandatory: false }, 0), int32(0)]);
    for (let i = 0; i < 6; i++)
      nested = Buffer.concat([
        encodePartHeader({ type: 'output', mandatory: false }, 0),
        int32(-1),
        nested,
        int32(0),
      ]);
    const deep = interrupted(nested);
    expect(await errorCode(() => readParts(deep))).toBe('LIMIT');
  });

  it('the writer ends a failing payload like hg: interrupt, error:abort, 0, no end marker', async () => {
    async function* failing(): AsyncGenerator<Uint8Array> {
      yield ascii('partial');
      throw new Error('boom');
    }
    const w = new Bundle2Writer();
    w.addPart({ type: 'test:part', mandatory: false, data: failing() });
    const out: Uint8Array[] = [];
    let thrown: unknown;
    try {
      for await (const c of w.chunks()) out.push(c);
    } catch (e) {
      thrown = e;
    }
    expect((thrown as Error).message).toBe('boom');
    // hg buffers a whole chunk before emitting, so `partial` (shorter than a chunk) never leaves
    // prettier-ignore
    expect(Buffer.concat(out)).toEqual(
      Buffer.concat([
        ascii('HG20'), int32(0), hex('00000010 09'), ascii('test:part'), hex('00000000 00 00'), hex('ffffffff'),
        hex('00000031 0b'), ascii('error:abort'), hex('00000000 01 00 07 16'), ascii('message'), ascii('unexpected error: boom'), int32(0),
        int32(0),
      ]),
    );
  });

  it('other error parts are REMOTE_ABORT naming the part', async () => {
    const w = new Bundle2Writer();
    w.addPart({ type: 'error:unsupportedcontent', mandatoryParams: [['parttype', 'frob']] });
    const err = (await collect(w.chunks())
      .then(readParts)
      .catch((e: unknown) => e)) as SluiceError;
    expect(err.code).toBe('REMOTE_ABORT');
    expect(err.message).toContain('error:unsupportedcontent');
    expect(err.message).toContain('parttype=frob');
  });
});
