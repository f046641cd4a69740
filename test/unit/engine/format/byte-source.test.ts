import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../../../src/main/engine/errors';
import { ByteSource } from '../../../../src/main/engine/format/byte-source';
import { writeUvarint } from '../../../../src/main/engine/format/stream2';
import { chunked, errorCode, source, splitAt } from '../../../support/format';

const bytes = (...xs: number[]): Uint8Array => Uint8Array.from(xs);
const text = (s: string): Uint8Array => Buffer.from(s, 'latin1');

describe('ByteSource reads', () => {
  it('readExact across chunk boundaries, zero-copy inside one chunk', async () => {
    const a = text('hello ');
    const src = source(a, text('wor'), text('ld!'));
    const first = await src.readExact(5);
    expect(first.buffer).toBe(a.buffer); // a view, not a copy
    expect(Buffer.from(first).toString()).toBe('hello');
    expect(Buffer.from(await src.readExact(6)).toString()).toBe(' world');
    expect(src.offset).toBe(11);
    expect(Buffer.from(await src.readExact(1)).toString()).toBe('!');
    expect(await src.atEof()).toBe(true);
  });

  it('TRUNCATED with the offset when the input ends inside a read', async () => {
    const src = source(text('abc'));
    await src.readExact(2);
    const err = await src.readExact(5).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SluiceError);
    expect((err as SluiceError).code).toBe('TRUNCATED');
    expect((err as SluiceError).message).toMatch(/got 1 bytes, expected 5/);
  });

  it('tryReadExact serves only what the current chunk holds', async () => {
    const src = source(text('ab'), text('cd'));
    expect(src.tryReadExact(1)).toBeNull(); // nothing pulled yet
    await src.peek(1);
    expect(src.tryReadExact(1)).toEqual(text('a'));
    expect(src.tryReadExact(2)).toBeNull(); // straddles
    expect(Buffer.from(await src.readExact(2))).toEqual(text('bc'));
    expect(src.buffered).toBe(1);
  });

  it('uvarint: hg examples, overlong and oversized values are LIMIT', async () => {
    // util.py uvarintencode doctests: 0, 1, 127, 1337 = b9 0a, 65536 = 80 80 04
    const src = source(bytes(0x00, 0x01, 0x7f, 0xb9, 0x0a, 0x80, 0x80, 0x04));
    for (const v of [0, 1, 127, 1337, 65536]) expect(await src.readUvarint()).toBe(v);
    const max = new Uint8Array(10);
    const end = writeUvarint(max, 0, Number.MAX_SAFE_INTEGER);
    expect(await source(max.subarray(0, end)).readUvarint()).toBe(Number.MAX_SAFE_INTEGER);
    // nine continuation bytes: more than 8 bytes
    expect(
      await errorCode(() =>
        source(bytes(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01)).readUvarint(),
      ),
    ).toBe('LIMIT');
    // 8 bytes but 2^55
    expect(
      await errorCode(() => source(bytes(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40)).readUvarint()),
    ).toBe('LIMIT');
    // same, split so the slow path decodes it
    expect(
      await errorCode(() =>
        new ByteSource(chunked([bytes(0x80, 0x80, 0x80), bytes(0x80, 0x80, 0x80, 0x80, 0x40)])).readUvarint(),
      ),
    ).toBe('LIMIT');
    // util.py doctest: b'\x80' alone -> stream ended unexpectedly
    expect(await errorCode(() => source(bytes(0x80)).readUvarint())).toBe('TRUNCATED');
  });

  it('tryReadUvarint returns -1 without consuming when the varint straddles', async () => {
    const src = source(bytes(0xb9), bytes(0x0a));
    await src.peek(1);
    expect(src.tryReadUvarint()).toBe(-1);
    expect(src.buffered).toBe(1);
    expect(await src.readUvarint()).toBe(1337);
  });

  it('readLine: newline required, bounded length, any split', async () => {
    const src = new ByteSource(chunked([text('0'), text('\n12 3'), text('4\nrest')]));
    expect(Buffer.from(await src.readLine(10)).toString()).toBe('0');
    expect(Buffer.from(await src.readLine(10)).toString()).toBe('12 34');
    expect(await errorCode(() => src.readLine(10))).toBe('TRUNCATED');
    expect(await errorCode(() => source(text('abcdefgh\n')).readLine(7))).toBe('LIMIT');
    expect(await errorCode(() => source(text('abcd'), text('efgh\n')).readLine(7))).toBe('LIMIT');
    expect(Buffer.from(await source(text('abcd'), text('efg\n')).readLine(7)).toString()).toBe('abcdefg');
  });

  it('peek does not consume, even across chunks; short at EOF', async () => {
    const src = source(text('H'), text('G'), text('2'), text('0rest'));
    expect(Buffer.from(await src.peek(4)).toString()).toBe('HG20');
    expect(Buffer.from(await src.readExact(6)).toString()).toBe('HG20re');
    expect(Buffer.from(await source(text('HG')).peek(4)).toString()).toBe('HG');
  });

  it('copy streams exactly n bytes as views that stay valid after later reads', async () => {
    const data = Uint8Array.from({ length: 1000 }, (_, i) => i & 255);
    const src = new ByteSource(chunked(splitAt(data, [3, 100, 101, 700])));
    await src.readExact(2);
    const kept: Uint8Array[] = [];
    await src.copy(900, (c) => {
      kept.push(c);
    });
    await src.readExact(50); // straddling reads use the carry-over buffer, never the copied views
    await src.readExact(48);
    expect(Buffer.concat(kept)).toEqual(Buffer.from(data.subarray(2, 902)));
    expect(await src.atEof()).toBe(true);
    expect(await errorCode(() => source(text('abc')).copy(4, () => undefined))).toBe('TRUNCATED');
  });

  it('copy awaits asynchronous writers', async () => {
    const src = source(text('abc'), text('def'));
    const order: string[] = [];
    await src.copy(6, async (c) => {
      await new Promise((r) => setTimeout(r, 1));
      order.push(Buffer.from(c).toString());
    });
    expect(order).toEqual(['abc', 'def']);
  });

  it('skip, readSome, drain', async () => {
    const src = source(text('abcdef'), text('ghij'));
    await src.skip(4);
    expect(Buffer.from((await src.readSome(100))!).toString()).toBe('ef');
    expect(Buffer.from((await src.readSome(3))!).toString()).toBe('ghi');
    expect(await src.drain()).toBe(1);
    expect(await src.readSome(1)).toBeNull();
    expect(await errorCode(() => source(text('ab')).skip(3))).toBe('TRUNCATED');
  });

  it('upstream failures surface as SluiceError (I/O keeps its errno)', async () => {
    async function* failing(): AsyncGenerator<Uint8Array> {
      yield text('ab');
      throw Object.assign(new Error('disk on fire'), { code: 'EIO' });
    }
    const src = new ByteSource(failing());
    const err = await src.readExact(3).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SluiceError);
    expect((err as SluiceError).code).toBe('IO');
    expect((err as SluiceError).details).toEqual({ errno: 'EIO' });
  });

  it('close ends the upstream generator (runs its finally)', async () => {
    let closed = false;
    async function* gen(): AsyncGenerator<Uint8Array> {
      try {
        yield text('abc');
        yield text('def');
      } finally {
        closed = true;
      }
    }
    const src = new ByteSource(gen());
    await src.readExact(1);
    await src.close();
    expect(closed).toBe(true);
    expect(await src.atEof()).toBe(true);
  });

  it('any split, any sequence of reads: same bytes as reading the whole buffer', async () => {
    type Op = { kind: 'exact' | 'skip' | 'copy' | 'varint' | 'line'; n: number };
    const op = fc.record({
      kind: fc.constantFrom('exact', 'skip', 'copy', 'varint', 'line'),
      n: fc.integer({ min: 0, max: 40 }),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ minLength: 0, maxLength: 300 }),
        fc.array(fc.nat(300), { maxLength: 20 }),
        fc.array(op, { maxLength: 30 }),
        async (data, cuts, ops: Op[]) => {
          const run = async (src: ByteSource): Promise<string[]> => {
            const log: string[] = [];
            try {
              for (const o of ops) {
                if (o.kind === 'exact') log.push(Buffer.from(await src.readExact(o.n)).toString('hex'));
                else if (o.kind === 'skip') await src.skip(o.n);
                else if (o.kind === 'varint') log.push(String(await src.readUvarint()));
                else if (o.kind === 'line') log.push(Buffer.from(await src.readLine(o.n)).toString('hex'));
                else {
                  const parts: Uint8Array[] = [];
                  await src.copy(o.n, (c) => {
                    parts.push(c);
                  });
                  log.push(Buffer.concat(parts).toString('hex'));
                }
                log.push(`@${src.offset}`);
              }
            } catch (e) {
              log.push(`error ${(e as SluiceError).code}`);
            }
            return log;
          };
          const whole = await run(source(data));
          const split = await run(new ByteSource(chunked(splitAt(data, cuts))));
          expect(split).toEqual(whole);
        },
      ),
      { numRuns: 300 },
    );
  });
});
