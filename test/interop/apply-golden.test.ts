// Golden apply tests (no hg needed): applying the committed hg-made fixture bundles must yield
// store files whose md5 equal those of the source repository (test/fixtures/hg/*/store.md5).
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { applyBundleFile } from '../../src/main/engine/operations/apply/apply-stream-bundle';
import { applyStream } from '../../src/main/engine/streamclone/consume';
import { ByteSource } from '../../src/main/engine/format/byte-source';
import { openStreamBundle } from '../../src/main/engine/format/stream-bundle-file';
import { readStreamOut } from '../../src/main/engine/format/stream-v1';
import { JobContext } from '../../src/main/engine/context/job-context';
import { FIXTURES, FIXTURE_BUNDLES } from '../support/env';
import type { SluiceEvent } from '../../src/shared/events';

const work = mkdtempSync(join(tmpdir(), 'sluice-apply-golden-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** `md5  ./path` lines of store.md5 → path → md5 */
function readStoreMd5(shape: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of readFileSync(join(FIXTURES, shape, 'store.md5'), 'latin1').split('\n')) {
    if (!line) continue;
    const m = /^([0-9a-f]{32}) {2}\.\/(.*)$/.exec(line);
    if (!m) throw new Error(`bad store.md5 line ${line}`);
    out.set(m[2]!, m[1]!);
  }
  return out;
}

function walk(dir: string, base = dir, out = new Map<string, string>()): Map<string, string> {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, base, out);
    else
      out.set(
        relative(base, p).split('\\').join('/'),
        createHash('md5').update(readFileSync(p)).digest('hex'),
      );
  }
  return out;
}

let n = 0;

describe.each(['default', 'legacy'])('golden apply of the %s fixture bundles', (shape) => {
  const expected = readStoreMd5(shape);
  it.each(FIXTURE_BUNDLES)('%s', async (bundle) => {
    const dest = join(work, `${shape}-${n++}`);
    const events: SluiceEvent[] = [];
    const ctx = new JobContext({ sink: (e) => events.push(e) });
    const stats = await applyBundleFile(join(FIXTURES, shape, bundle), dest, {}, ctx);
    const got = walk(join(dest, '.hg', 'store'));
    // streamed files: byte-identical. phaseroots only travels in a non-publishing v2 stream;
    // fncache line order is free; requires is compared below.
    const skip = new Set(['fncache', 'requires', ...(bundle.includes('phases') ? [] : ['phaseroots'])]);
    for (const [path, md5] of expected) {
      if (skip.has(path)) continue;
      expect(got.get(path), path).toBe(md5);
    }
    const extra = [...got.keys()].filter((p) => !expected.has(p) && p !== 'requires');
    expect(extra).toEqual([]);
    // fncache: same set of lines as hg's
    const lines = (b: Buffer) => b.toString('latin1').split('\n').filter(Boolean).sort();
    expect(lines(readFileSync(join(dest, '.hg/store/fncache')))).toEqual(
      lines(readFileSync(join(FIXTURES, shape, 'fncache'))),
    );
    // requirements of a 6.3.2 stream clone: local defaults (share-safe split) + streamed
    const storeReqs = readFileSync(join(dest, '.hg/store/requires'), 'latin1');
    expect(readFileSync(join(dest, '.hg/requires'), 'latin1')).toBe('share-safe\n');
    expect(storeReqs).toBe(
      shape === 'default'
        ? 'dotencode\nfncache\ngeneraldelta\nrevlog-compression-zstd\nrevlogv1\nsparserevlog\nstore\n'
        : 'dotencode\nfncache\nrevlogv1\nstore\n',
    );
    expect(readFileSync(join(dest, '.hg/00changelog.i')).length).toBe(57);
    // events: start, a final progress at 100 %, no temp left beside DEST
    const start = events.find((e) => e.type === 'start');
    const last = events.filter((e) => e.type === 'progress').at(-1);
    expect(start).toMatchObject({ kind: 'apply', files: stats.files, bytes: stats.bytes });
    expect(last).toMatchObject({ bytes: stats.bytes, totalBytes: stats.bytes, files: stats.files, etaMs: 0 });
    expect(readdirSync(work).filter((f) => f.includes('sluice-tmp'))).toEqual([]);
  });
});

/** `stream` / `streamreqs=a,b` from the captured capabilities (what a client streams with over v1). */
function streamedRequirements(shape: string): string[] {
  const caps = readFileSync(join(FIXTURES, shape, 'capabilities.txt'), 'latin1').split(' ');
  const reqs = caps.find((c) => c.startsWith('streamreqs='));
  if (reqs) return reqs.slice('streamreqs='.length).split(',');
  if (caps.includes('stream')) return ['revlogv1'];
  throw new Error('no stream capability');
}

describe.each(['default', 'legacy'])(
  'golden apply of the %s wire captures (stream_out, getbundle)',
  (shape) => {
    const expected = readStoreMd5(shape);
    const check = (dest: string) => {
      const got = walk(join(dest, '.hg', 'store'));
      for (const [path, md5] of expected) {
        if (path === 'fncache' || path === 'requires' || path === 'phaseroots') continue;
        expect(got.get(path), path).toBe(md5);
      }
    };

    it('stream_out body (v1, names encodedir-ed on the wire), requirements from the capabilities', async () => {
      const dest = join(work, `${shape}-${n++}`);
      const reader = await readStreamOut(
        ByteSource.fromBytes(readFileSync(join(FIXTURES, shape, 'stream_out.bin'))),
      );
      const stats = await applyStream(
        reader,
        dest,
        { requirements: streamedRequirements(shape), closer: { backgroundClose: 'on', minFileCount: 1 } },
        new JobContext(),
      );
      expect(stats.format).toBe('stream-v1');
      expect(stats.close.background).toBe(true);
      check(dest);
    });

    it('getbundle reply (0.2 `none` prefix + HG20 with stream2)', async () => {
      const body = readFileSync(join(FIXTURES, shape, 'getbundle-stream2.bin'));
      expect(body.subarray(0, 5).toString('latin1')).toBe('\x04none');
      const reader = await openStreamBundle(ByteSource.fromBytes(body.subarray(5)));
      const dest = join(work, `${shape}-${n++}`);
      await applyStream(reader, dest, {}, new JobContext());
      check(dest);
    });
  },
);
