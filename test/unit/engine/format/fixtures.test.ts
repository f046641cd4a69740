// Every hg-made fixture (packed1, stream v2 in all compressions, stream_out capture, getbundle
// capture) parses to exactly the files and bytes of the source store, in hg's order.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeDir, encodeStorePath } from '../../../../src/main/engine/store/encoding';
import { Bundle2Reader } from '../../../../src/main/engine/format/bundle2';
import { openStreamBundle } from '../../../../src/main/engine/format/stream-bundle-file';
import { ByteSource } from '../../../../src/main/engine/format/byte-source';
import { readStreamOut } from '../../../../src/main/engine/format/stream-v1';
import { STREAM2_PARAMS, readStream2Part } from '../../../../src/main/engine/format/stream2';
import {
  SHAPES,
  chunked,
  extractFixture,
  fixture,
  makeTempDir,
  readAll,
  removeDir,
  source,
  splitAt,
  storeMd5,
  type ParsedEntry,
  type Shape,
} from '../../../support/format';
import { createHash } from 'node:crypto';

const repos = new Map<Shape, string>();
let tmp: string;
beforeAll(() => {
  tmp = makeTempDir('fixtures');
  for (const shape of SHAPES) repos.set(shape, extractFixture(shape, tmp));
});
afterAll(() => removeDir(tmp));

/** Store entries must be exactly the store's revlogs (md5 of each), caches the repo's cache files. */
function expectMatchesStore(
  shape: Shape,
  entries: ParsedEntry[],
  opts: { caches: boolean; phaseroots?: boolean },
): void {
  const md5 = storeMd5(shape);
  const revlogs = [...md5.keys()].filter((p) => /\.(i|d)$/.test(p));
  const store = entries.filter((e) => e.vfs === 's' && e.name !== 'phaseroots');
  expect(store.map((e) => encodeStorePath(e.name)).sort()).toEqual(revlogs.sort());
  for (const e of store) expect(e.md5, e.name).toBe(md5.get(encodeStorePath(e.name)));
  // hg's order: fncache entries sorted, then top-level revlogs, changelog index last
  const dataNames = store.filter((e) => e.name.startsWith('data/')).map((e) => e.name);
  expect(dataNames).toEqual([...dataNames].sort());
  expect(store.slice(-2).map((e) => e.name)).toEqual(['00manifest.i', '00changelog.i']);
  const phaseroots = entries.filter((e) => e.name === 'phaseroots');
  expect(phaseroots.length).toBe(opts.phaseroots ? 1 : 0);
  if (opts.phaseroots) expect(phaseroots[0]!.md5).toBe(md5.get('phaseroots'));
  const caches = entries.filter((e) => e.vfs === 'c');
  if (!opts.caches) {
    expect(caches).toEqual([]);
    return;
  }
  expect(caches.map((e) => e.name)).toEqual([
    'branch2-served',
    'rbc-names-v1',
    'rbc-revs-v1',
    'tags2',
    'tags2-visible',
  ]);
  for (const c of caches) {
    const onDisk = readFileSync(join(repos.get(shape)!, '.hg', 'cache', c.name));
    expect(c.md5, c.name).toBe(createHash('md5').update(onDisk).digest('hex'));
  }
}

describe.each(SHAPES)('hg fixtures of the %s repository', (shape) => {
  const requirements =
    shape === 'default'
      ? ['generaldelta', 'revlog-compression-zstd', 'revlogv1', 'sparserevlog']
      : ['revlogv1'];

  it('packed1.hg', async () => {
    const reader = await openStreamBundle(source(fixture(shape, 'packed1.hg')));
    expect(reader.header).toMatchObject({ format: 'packed1', compression: 'UN', requirements, files: 23 });
    const entries = await readAll(reader);
    expect(entries.length).toBe(reader.header.files);
    expect(entries.reduce((s, e) => s + e.size, 0)).toBe(reader.header.bytes);
    expectMatchesStore(shape, entries, { caches: false });
    // v1 names arrive encodedir'd and are handed out decoded
    expect(entries.map((e) => e.name)).toContain('data/dir.hg/file.txt.i');
    expect(entries.map((e) => e.name)).toContain('data/foo.i/bar.i');
  });

  it.each([
    ['stream-v2.hg', 'UN'],
    ['stream-v2-zstd.hg', 'ZS'],
    ['stream-v2-gzip.hg', 'GZ'],
    ['stream-v2-bzip2.hg', 'BZ'],
  ] as const)('%s', async (file, compression) => {
    const reader = await openStreamBundle(source(fixture(shape, file)));
    expect(reader.header).toMatchObject({ format: 'stream-v2', compression, requirements, files: 28 });
    const entries = await readAll(reader);
    expect(entries.length).toBe(28);
    expect(entries.reduce((s, e) => s + e.size, 0)).toBe(reader.header.bytes);
    expectMatchesStore(shape, entries, { caches: true });
  });

  it('stream-v2-phases.hg (non-publishing: phaseroots streamed after the revlogs)', async () => {
    const entries = await readAll(await openStreamBundle(source(fixture(shape, 'stream-v2-phases.hg'))));
    expectMatchesStore(shape, entries, { caches: true, phaseroots: true });
    expect(entries.findIndex((e) => e.name === 'phaseroots')).toBe(
      entries.findIndex((e) => e.vfs === 'c') - 1,
    );
  });

  it('stream_out.bin (v1 wire body)', async () => {
    const reader = await readStreamOut(source(fixture(shape, 'stream_out.bin')));
    expect(reader.header).toMatchObject({ format: 'stream-v1', files: 23, requirements: [] });
    const entries = await readAll(reader);
    expectMatchesStore(shape, entries, { caches: false });
    const packed = await readAll(await openStreamBundle(source(fixture(shape, 'packed1.hg'))));
    expect(entries).toEqual(packed);
  });

  it('getbundle-stream2.bin (0.2 `none` framing, HG20, one STREAM2 part: cg=0&stream=1)', async () => {
    const body = fixture(shape, 'getbundle-stream2.bin');
    expect(body.subarray(0, 5).toString('latin1')).toBe('\x04none');
    const bundle = await Bundle2Reader.open(source(body.subarray(5)), {
      knownParts: { stream2: STREAM2_PARAMS, bookmarks: [], listkeys: ['namespace'], 'phase-heads': [] },
    });
    const part = (await bundle.nextPart())!;
    expect(part.type).toBe('stream2');
    expect(part.mandatory).toBe(true);
    const entries = await readAll(readStream2Part(part));
    expectMatchesStore(shape, entries, { caches: true });
    expect(await bundle.nextPart()).toBeNull();
    expect(bundle.atEnd).toBe(true);
  });

  it('every fixture parses identically in random splits (socket-like chunks)', async () => {
    for (const file of ['packed1.hg', 'stream-v2.hg', 'stream-v2-zstd.hg', 'stream-v2-gzip.hg']) {
      const whole = fixture(shape, file);
      const reference = await readAll(await openStreamBundle(source(whole)));
      for (let run = 0; run < 4; run++) {
        const cuts = Array.from({ length: 1 + run * 40 }, () => Math.floor(Math.random() * whole.length));
        const split = await readAll(await openStreamBundle(new ByteSource(chunked(splitAt(whole, cuts)))));
        expect(split, `${file} cuts ${cuts.slice(0, 8).join(',')}`).toEqual(reference);
      }
      // one byte at a time: every structure straddles
      if (file === 'stream-v2.hg' || file === 'packed1.hg') {
        const bytewise = Array.from({ length: whole.length }, (_, i) => whole.subarray(i, i + 1));
        expect(await readAll(await openStreamBundle(new ByteSource(bytewise)))).toEqual(reference);
      }
    }
    const v1 = fixture(shape, 'stream_out.bin');
    const ref = await readAll(await readStreamOut(source(v1)));
    const bytewise = Array.from({ length: v1.length }, (_, i) => v1.subarray(i, i + 1));
    expect(await readAll(await readStreamOut(new ByteSource(bytewise)))).toEqual(ref);
  });
});

it('v1 wire names in the fixture are encodedir(name)', () => {
  const body = fixture('default', 'stream_out.bin').toString('latin1');
  expect(body).toContain(encodeDir('data/dir.hg/file.txt.i') + '\0');
  expect(body).toContain('data/dir.hg.hg/file.txt.i\0');
});
