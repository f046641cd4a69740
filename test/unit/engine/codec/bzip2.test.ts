import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../../../src/main/engine/errors';
import { HG_PYTHON, missing, skipNote } from '../../../support/env';
import { bunzip2 } from '../../../../src/main/engine/codec/bzip2';
import { chunked, errorCode, splitAt } from '../../../support/format';

async function collect(it: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const c of it) parts.push(c);
  return Buffer.concat(parts);
}

/** bzip2 as hg writes it (Python's bz2 module), at `level` (100 kB blocks per level). */
function bz2(data: Uint8Array, level: number): Buffer {
  const r = spawnSync(
    HG_PYTHON,
    ['-c', `import bz2,sys; sys.stdout.buffer.write(bz2.compress(sys.stdin.buffer.read(), ${level}))`],
    { input: data, maxBuffer: 64 << 20 },
  );
  if (r.status !== 0) throw new Error(String(r.stderr));
  return r.stdout;
}

/** Text-like with some noise: several 100 kB blocks at level 1. */
function sample(n: number): Buffer {
  const out = Buffer.alloc(n);
  const rnd = randomBytes(n);
  for (let i = 0; i < n; i++) out[i] = i % 5 === 0 ? rnd[i]! : 97 + ((i >> 3) % 26);
  return out;
}

describe.skipIf(missing('hg-python'))(`bunzip2${skipNote('hg-python')}`, () => {
  const data = sample(350_000);
  const packed = bz2(data, 1);

  it('decodes a multi-block stream in any split, and streams concatenated', async () => {
    expect((await collect(bunzip2(chunked([packed])))).equals(data)).toBe(true);
    // the stream header alone, then the rest (unbzip2-stream's wrapper read past its input here)
    for (const cut of [1, 3, 4, 5])
      expect((await collect(bunzip2(chunked(splitAt(packed, [cut]))))).equals(data)).toBe(true);
    await fc.assert(
      fc.asyncProperty(fc.array(fc.nat(packed.length), { maxLength: 10 }), async (cuts) => {
        expect((await collect(bunzip2(chunked(splitAt(packed, cuts))))).equals(data)).toBe(true);
      }),
      { numRuns: 15 },
    );
    const small = Buffer.from('hello\n');
    const two = Buffer.concat([packed, bz2(small, 9)]);
    expect(
      (await collect(bunzip2(chunked(splitAt(two, [packed.length - 1, packed.length + 3]))))).equals(
        Buffer.concat([data, small]),
      ),
    ).toBe(true);
    expect((await collect(bunzip2(chunked([])))).length).toBe(0);
  });

  it('a truncated or corrupted stream is COMPRESSION, never silently short', async () => {
    for (const cut of [3, 20, packed.length >> 1, packed.length - 5, packed.length - 1])
      expect(await errorCode(() => collect(bunzip2(chunked([packed.subarray(0, cut)]))))).toBe('COMPRESSION');
    for (const at of [10, packed.length >> 2, packed.length >> 1]) {
      const bad = Buffer.from(packed);
      bad[at]! ^= 0x10;
      expect(await errorCode(() => collect(bunzip2(chunked([bad]))))).toBe('COMPRESSION');
    }
    expect(await errorCode(() => collect(bunzip2(chunked([Buffer.from('BZh9not bzip2 at all')]))))).toBe(
      'COMPRESSION',
    );
  });

  it('errors of the source pass through unchanged', async () => {
    const cut = new SluiceError('TRUNCATED', 'the connection closed early');
    async function* failing(): AsyncGenerator<Uint8Array> {
      yield packed.subarray(0, 1000);
      throw cut;
    }
    await expect(collect(bunzip2(failing()))).rejects.toBe(cut);
  });
});
