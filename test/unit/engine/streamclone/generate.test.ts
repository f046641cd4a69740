import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Bundle2Writer } from '../../../../src/main/engine/format/bundle2';
import { openStreamBundle } from '../../../../src/main/engine/format/stream-bundle-file';
import { decompressStream } from '../../../../src/main/engine/codec/compression';
import { readStreamOut } from '../../../../src/main/engine/format/stream-v1';
import {
  SHAPES,
  countZstdFrames,
  errorCode,
  extractFixture,
  extractFixtureRepo,
  fixture,
  makeTempDir,
  readAll,
  removeDir,
  source,
  type Shape,
} from '../../../support/format';
import { listStreamFiles } from '../../../../src/main/engine/store/walk';
import {
  packed1Chunks,
  stream2BundleChunks,
  stream2Part,
  streamOutBody,
  writeStreamBundle,
} from '../../../../src/main/engine/streamclone/generate';
import { v1Entries } from '../../../../src/main/engine/streamclone/entries';

let tmp: string;
const repos = new Map<Shape, string>();
beforeAll(() => {
  tmp = makeTempDir('generate');
  for (const shape of SHAPES) repos.set(shape, extractFixture(shape, tmp));
});
afterAll(() => removeDir(tmp));

async function collect(it: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const c of it) parts.push(c);
  return Buffer.concat(parts);
}

let outCounter = 0;
const outFile = (name: string): string => join(tmp, `out-${outCounter++}-${name}`);

/** The bundle2 core of a bundle (after magic, params size, params), decompressed. */
async function core(bytes: Buffer): Promise<Buffer> {
  const paramsLength = bytes.readInt32BE(4);
  const params = bytes.subarray(8, 8 + paramsLength).toString('latin1');
  const kind = (/Compression=(\w\w)/.exec(params)?.[1] ?? 'UN') as 'UN' | 'GZ' | 'ZS';
  const rest = bytes.subarray(8 + paramsLength);
  return kind === 'UN'
    ? rest
    : collect(decompressStream(kind, [rest] as unknown as AsyncIterable<Uint8Array>));
}

describe.each(SHAPES)('generated from the %s fixture repository', (shape) => {
  const repo = (): string => repos.get(shape)!;

  it('packed1 is byte-identical to hg debugcreatestreamclonebundle', async () => {
    const out = outFile('packed1.hg');
    const r = await writeStreamBundle(repo(), out, { type: 'packed1' });
    expect(readFileSync(out).equals(fixture(shape, 'packed1.hg'))).toBe(true);
    expect(r).toMatchObject({
      type: 'packed1',
      compression: 'UN',
      files: 23,
      size: fixture(shape, 'packed1.hg').length,
    });
  });

  it('none-v2 is byte-identical to hg bundle -t none-v2;stream=v2 (publishing and not)', async () => {
    const out = outFile('v2.hg');
    await writeStreamBundle(repo(), out, { type: 'v2', compression: 'none' });
    expect(readFileSync(out).equals(fixture(shape, 'stream-v2.hg'))).toBe(true);
    const phases = outFile('v2-phases.hg');
    await writeStreamBundle(repo(), phases, { type: 'v2', publishing: false });
    expect(readFileSync(phases).equals(fixture(shape, 'stream-v2-phases.hg'))).toBe(true);
  });

  it.each(['gzip', 'zstd'] as const)(
    '%s-v2: Compression param, core identical to hg’s once decompressed',
    async (compression) => {
      const out = outFile(`v2-${compression}.hg`);
      const r = await writeStreamBundle(repo(), out, { type: 'v2', compression });
      const ours = readFileSync(out);
      const key = compression === 'gzip' ? 'GZ' : 'ZS';
      expect(r.compression).toBe(key);
      expect(ours.subarray(0, 22)).toEqual(
        Buffer.concat([Buffer.from('HG20'), Buffer.from([0, 0, 0, 14]), Buffer.from(`Compression=${key}`)]),
      );
      const hgMade = fixture(shape, compression === 'gzip' ? 'stream-v2-gzip.hg' : 'stream-v2-zstd.hg');
      expect((await core(ours)).equals(await core(hgMade))).toBe(true);
      expect((await core(ours)).equals(fixture(shape, 'stream-v2.hg').subarray(8))).toBe(true);
      if (compression === 'zstd') expect(countZstdFrames(ours.subarray(22))).toBe(1);
      expect(await readAll(await openStreamBundle(source(ours)))).toEqual(
        await readAll(await openStreamBundle(source(hgMade))),
      );
    },
  );

  it('4 KiB chunks: every payload chunk 4096 bytes but the last, same entries', async () => {
    const out = outFile('v2-4k.hg');
    await writeStreamBundle(repo(), out, { type: 'v2', chunkSize: 4096 });
    const bytes = readFileSync(out);
    let at = 8;
    at += 4 + bytes.readInt32BE(at); // part header
    const sizes: number[] = [];
    for (let size = bytes.readInt32BE(at); size !== 0; size = bytes.readInt32BE(at)) {
      sizes.push(size);
      at += 4 + size;
    }
    expect(sizes.slice(0, -1).every((s) => s === 4096)).toBe(true);
    expect(sizes.at(-1)).toBeLessThanOrEqual(4096);
    expect(bytes.readInt32BE(at + 4)).toBe(0); // end of bundle
    expect(at + 8).toBe(bytes.length);
    expect(await readAll(await openStreamBundle(source(bytes)))).toEqual(
      await readAll(await openStreamBundle(source(fixture(shape, 'stream-v2.hg')))),
    );
  });

  it('streamOutBody is byte-identical to the stream_out hg serve sent', async () => {
    const body = await collect(streamOutBody(repo()));
    expect(body.equals(fixture(shape, 'stream_out.bin'))).toBe(true);
    expect((await readAll(await readStreamOut(source(body)))).length).toBe(23);
  });

  it('stream2Part in a bundle2 is byte-identical to hg serve’s getbundle reply (after the 0.2 framing)', async () => {
    const part = await stream2Part(repo());
    expect(part).toMatchObject({ files: 28 });
    const w = new Bundle2Writer();
    w.addPart(part);
    expect((await collect(w.chunks())).equals(fixture(shape, 'getbundle-stream2.bin').subarray(5))).toBe(
      true,
    );
  });
});

describe('writeStreamBundle behaviour', () => {
  it('refuses compressed packed1 and unknown options with USAGE', async () => {
    const repo = repos.get('default')!;
    expect(
      await errorCode(() =>
        writeStreamBundle(repo, outFile('x.hg'), { type: 'packed1', compression: 'gzip' }),
      ),
    ).toBe('USAGE');
    expect(await errorCode(() => writeStreamBundle(repo, outFile('x.hg'), { type: 'v3' as 'v2' }))).toBe(
      'USAGE',
    );
    expect(
      await errorCode(() => writeStreamBundle(repo, outFile('x.hg'), { type: 'v2', chunkSize: 0 })),
    ).toBe('USAGE');
    expect(
      await errorCode(() => writeStreamBundle(join(tmp, 'nope'), outFile('x.hg'), { type: 'v2' })),
    ).not.toBe('USAGE');
  });

  it('sends exactly the listed size when a file grew, and fails like hg when it shrank; no temp file left', async () => {
    const dir = join(tmp, 'mutating');
    mkdirSync(dir);
    extractFixtureRepo('default', dir);
    const listing = await listStreamFiles(dir, { version: 'v1' });
    const readme = listing.files.find((f) => f.name === 'data/README.txt.i')!;
    appendFileSync(readme.path, 'appended after listing');
    const grown = await collect(packed1Chunks(listing));
    expect(grown.equals(fixture('default', 'packed1.hg'))).toBe(true);

    truncateSync(readme.path, readme.size - 1);
    expect(await errorCode(() => collect(packed1Chunks(listing)))).toBe('SIZE_MISMATCH');

    // through writeStreamBundle: a file that shrinks after listing fails the job, and neither the
    // bundle nor its temporary is left behind
    const outDir = join(tmp, 'out-fail');
    mkdirSync(outDir);
    for (const type of ['packed1', 'v2'] as const) {
      const p = writeStreamBundle(dir, join(outDir, `b-${type}.hg`), {
        type,
        onListed: (l) => truncateSync(l.files.find((f) => f.name === 'data/big.bin.d')!.path, 1000),
      });
      expect(await errorCode(() => p)).toBe('SIZE_MISMATCH');
      appendFileSync(listing.files.find((f) => f.name === 'data/big.bin.d')!.path, Buffer.alloc(300_000)); // regrow
    }
    expect(readdirSync(outDir)).toEqual([]);
  });

  it('a failing v2 payload ends the bundle like hg (interrupt + error:abort), which readers report as REMOTE_ABORT', async () => {
    const listed = await listStreamFiles(repos.get('legacy')!, { version: 'v2' });
    const broken = {
      ...listed,
      files: listed.files.map((f, i) => (i === 2 ? { ...f, path: join(tmp, 'missing-file') } : f)),
    };
    const parts: Uint8Array[] = [];
    const err = await errorCode(async () => {
      for await (const c of stream2BundleChunks(broken)) parts.push(c);
    });
    expect(err).toBe('IO');
    const bytes = Buffer.concat(parts);
    expect(bytes.includes(Buffer.from('error:abort'))).toBe(true);
    expect(await errorCode(async () => readAll(await openStreamBundle(source(bytes))))).toBe('REMOTE_ABORT');
  });

  it('cancel removes the temporary file and reports CANCELLED', async () => {
    const outDir = join(tmp, 'out-cancel');
    mkdirSync(outDir);
    const ac = new AbortController();
    const p = writeStreamBundle(repos.get('default')!, join(outDir, 'b.hg'), {
      type: 'v2',
      signal: ac.signal,
      onProgress: (files) => {
        if (files === 3) ac.abort();
      },
    });
    expect(await errorCode(() => p)).toBe('CANCELLED');
    expect(readdirSync(outDir)).toEqual([]);
  });

  it('reports progress and the listing', async () => {
    const seen: number[] = [];
    let listed = 0;
    const out = outFile('progress.hg');
    const r = await writeStreamBundle(repos.get('default')!, out, {
      type: 'v2',
      onListed: (l) => (listed = l.files.length),
      onProgress: (files, bytes, totalFiles, totalBytes) => {
        seen.push(files);
        expect(totalFiles).toBe(28);
        expect(bytes).toBeLessThanOrEqual(totalBytes);
      },
    });
    expect(listed).toBe(28);
    expect(seen).toEqual(Array.from({ length: 28 }, (_, i) => i + 1));
    expect(existsSync(out)).toBe(true);
    expect(r.bytes).toBe(145019);
  });

  it('stream v1 carries store files only', () => {
    expect(() => v1Entries([{ vfs: 'c', name: 'tags2', size: 1, path: '/nonexistent' }])).toThrow(
      /store files only/,
    );
  });
});
