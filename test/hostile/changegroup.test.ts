// Hostile changegroups and bundle2 containers, crafted byte by byte (./craft.ts): each fails with
// a typed SluiceError naming the problem, reads no more than it must, and leaves the repository
// byte-identical. The honest version of each input applies (and passes hg verify when hg is here).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  applyBundle2ToRepo,
  applyBundleBytesToRepo,
  createEmptyRepository,
} from '../../src/main/engine/changegroup';
import { SluiceError } from '../../src/main/engine/errors';
import { JobContext } from '../../src/main/engine/job/job-context';
import { hgSync, missing, skipNote } from '../../src/main/engine/test-support';
import { treeHash } from '../interop/changegroup-support';
import { bundle2Of, craftCg2, pieces } from './craft';

const work = mkdtempSync(join(tmpdir(), 'sluice-hostile-cg-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

let n = 0;
async function emptyRepo(): Promise<string> {
  const dir = join(work, `r${n++}`);
  await createEmptyRepository(dir);
  return dir;
}

type Apply = typeof applyBundle2ToRepo;

/** Applies `bytes` to a fresh repository; returns the error (a SluiceError) and checks nothing changed. */
async function refused(bytes: Buffer, apply: Apply = applyBundle2ToRepo): Promise<SluiceError> {
  const repo = await emptyRepo();
  const before = treeHash(repo);
  const err = await apply(repo, pieces(bytes), new JobContext()).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(SluiceError);
  expect(treeHash(repo)).toBe(before);
  return err as SluiceError;
}

const files = [
  { name: 'a.txt', content: 'alpha\n' },
  { name: 'dir/b.txt', content: 'beta\n' },
];

describe('crafted changegroups', () => {
  it.skipIf(missing('hg'))(`the honest crafted bundle applies and hg verify passes${skipNote('hg')}`, async () => {
    const repo = await emptyRepo();
    const r = await applyBundle2ToRepo(repo, pieces(await bundle2Of(craftCg2(files).cg)), new JobContext());
    expect(r.changesets).toBe(1);
    expect(r.files).toBe(2);
    const v = hgSync(['verify'], repo);
    expect(v.status, v.stdout + v.stderr).toBe(0);
  });
});

describe('bytes after the bundle2 end-of-stream marker', () => {
  it('a pull reply or bundle going on past its end marker applies nothing (MALFORMED)', async () => {
    const honest = await bundle2Of(craftCg2(files).cg);
    // a second, complete bundle appended: hg would stop at the first marker and never see it
    const second = await bundle2Of(craftCg2([{ name: 'c.txt', content: 'gamma\n' }], 'second').cg);
    for (const tail of [Buffer.from('x'), second.subarray(8)]) {
      const bytes = Buffer.concat([honest, tail]);
      for (const apply of [applyBundle2ToRepo, applyBundleBytesToRepo]) {
        const err = await refused(bytes, apply);
        expect(err.code).toBe('MALFORMED');
        expect(err.message).toMatch(/after the end of the bundle2 stream/);
      }
    }
  });

  it('inside a compressed core too (GZ, ZS): the decompressed core must end at the marker', async () => {
    for (const compression of ['GZ', 'ZS'] as const) {
      const honest = await bundle2Of(craftCg2(files).cg, { compression });
      const repo = await emptyRepo();
      expect((await applyBundleBytesToRepo(repo, pieces(honest), new JobContext())).changesets).toBe(1);
      // the same core with garbage after the end marker, recompressed
      const { compressStream } = await import('../../src/main/engine/format/compression');
      const core = Buffer.concat([(await bundle2Of(craftCg2(files).cg)).subarray(8), Buffer.from('junk')]);
      const out: Uint8Array[] = [];
      for await (const c of compressStream(compression, pieces(core))) out.push(c);
      const head = Buffer.from(`HG20\0\0\0\x0eCompression=${compression}`, 'latin1');
      const err = await refused(Buffer.concat([head, ...out]), applyBundleBytesToRepo);
      expect(err.code).toBe('MALFORMED');
    }
  });

  it('an ssh reply (the pipe goes on) is not checked past the marker: trailing: ignore', async () => {
    const repo = await emptyRepo();
    const bytes = Buffer.concat([await bundle2Of(craftCg2(files).cg), Buffer.from('next reply')]);
    const r = await applyBundle2ToRepo(repo, pieces(bytes), new JobContext(), { trailing: 'ignore' });
    expect(r.changesets).toBe(1);
  });
});
