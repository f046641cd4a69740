// Live interop with the installed Mercurial (skipped without hg):
//   - bundles hg makes now, from the fixture repositories, parse to exactly their stores, and
//     Sluice makes the same bytes (packed1, none-v2);
//   - Sluice-made packed1 applied by `hg debugapplystreamclonebundle`, and Sluice-made v2 bundles
//     (none/gzip/zstd × 4 KiB/32 KiB chunks) applied by `hg unbundle`, give repositories that pass
//     `hg verify` with the source's history.

import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStreamBundleFile } from '../../src/main/engine/format/stream-bundle-file';
import {
  SHAPES,
  extractFixtureRepo,
  missing,
  skipNote,
  makeTempDir,
  readAll,
  removeDir,
  type Shape,
} from '../support/format';
import { encodeStorePath } from '../../src/main/engine/store/encoding';
import { writeStreamBundle } from '../../src/main/engine/streamclone/generate';

const run = promisify(execFile);
const HG_ENV = {
  ...process.env,
  HGPLAIN: '1',
  HGUSER: 'Test <test@example.com>',
  HGRCPATH: '/dev/null',
  TZ: 'UTC',
};

async function hg(args: string[], cwd?: string): Promise<string> {
  const { stdout } = await run('hg', args, { cwd, env: HG_ENV, maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

/** `hg verify -q` must be silent and succeed; returns the log the clone shows. */
async function applyAndCheck(bundle: string, target: string, how: 'packed1' | 'v2'): Promise<string> {
  await hg(['init', target]);
  if (how === 'packed1') await hg(['-R', target, 'debugapplystreamclonebundle', bundle]);
  else await hg(['-R', target, 'unbundle', '-q', bundle]);
  expect(await hg(['-R', target, 'verify', '-q'])).toBe('');
  return hg(['-R', target, 'log', '-T', '{rev}:{node}\n']);
}

/** Runs the tasks two at a time (two cores here). */
async function inPairs(tasks: (() => Promise<void>)[]): Promise<void> {
  for (let i = 0; i < tasks.length; i += 2) await Promise.all(tasks.slice(i, i + 2).map((t) => t()));
}

describe.skipIf(missing('hg'))(`live interop with hg${skipNote('hg')}`, () => {
  let tmp: string;
  const repos = new Map<Shape, string>();
  const logs = new Map<Shape, string>();
  beforeAll(async () => {
    tmp = makeTempDir('interop');
    for (const shape of SHAPES) {
      const dir = join(tmp, `src-${shape}`);
      mkdirSync(dir);
      repos.set(shape, extractFixtureRepo(shape, dir));
      logs.set(shape, await hg(['-R', dir, 'log', '-T', '{rev}:{node}\n']));
    }
  });
  afterAll(() => removeDir(tmp));

  it.each(SHAPES)(
    '%s: bundles hg makes now are the bytes Sluice makes, and parse to the store',
    async (shape) => {
      const repo = repos.get(shape)!;
      const dir = join(tmp, `hgmade-${shape}`);
      mkdirSync(dir);
      await hg(['debugcreatestreamclonebundle', '-q', join(dir, 'packed1.hg')], repo);
      await hg(['bundle', '-q', '-a', '-t', 'none-v2;stream=v2', join(dir, 'v2.hg')], repo);
      await hg(['bundle', '-q', '-a', '-t', 'zstd-v2;stream=v2', join(dir, 'v2-zstd.hg')], repo);
      await writeStreamBundle(repo, join(dir, 'ours-packed1.hg'), { type: 'packed1' });
      await writeStreamBundle(repo, join(dir, 'ours-v2.hg'), { type: 'v2' });
      expect(readFileSync(join(dir, 'ours-packed1.hg')).equals(readFileSync(join(dir, 'packed1.hg')))).toBe(
        true,
      );
      expect(readFileSync(join(dir, 'ours-v2.hg')).equals(readFileSync(join(dir, 'v2.hg')))).toBe(true);

      const packed = await readAll(await openStreamBundleFile(join(dir, 'packed1.hg')));
      const v2 = await readAll(await openStreamBundleFile(join(dir, 'v2.hg')));
      expect(await readAll(await openStreamBundleFile(join(dir, 'v2-zstd.hg')))).toEqual(v2);
      expect(v2.filter((e) => e.vfs === 's')).toEqual(packed);
      const { createHash } = await import('node:crypto');
      for (const e of packed) {
        const onDisk = readFileSync(join(repo, '.hg', 'store', encodeStorePath(e.name)));
        expect(e.size, e.name).toBe(onDisk.length);
        expect(e.md5, e.name).toBe(createHash('md5').update(onDisk).digest('hex'));
      }
    },
  );

  it.each(SHAPES)('%s: Sluice packed1 → hg debugapplystreamclonebundle → hg verify', async (shape) => {
    const bundle = join(tmp, `sluice-${shape}-packed1.hg`);
    await writeStreamBundle(repos.get(shape)!, bundle, { type: 'packed1' });
    expect(await applyAndCheck(bundle, join(tmp, `t-${shape}-packed1`), 'packed1')).toBe(logs.get(shape));
  });

  // the full matrix on the default (zstd, generaldelta) repository, a cross-section on legacy
  const matrix = (shape: Shape): ['none' | 'gzip' | 'zstd', number][] =>
    shape === 'default'
      ? (['none', 'gzip', 'zstd'] as const).flatMap((c) =>
          [4096, 32768].map((n) => [c, n] as ['none' | 'gzip' | 'zstd', number]),
        )
      : [
          ['none', 32768],
          ['gzip', 4096],
          ['zstd', 32768],
        ];

  it.each(SHAPES)(
    '%s: Sluice v2 (none/gzip/zstd × 4 KiB/32 KiB) → hg unbundle → hg verify',
    async (shape) => {
      const tasks: (() => Promise<void>)[] = [];
      for (const [compression, chunkSize] of matrix(shape)) {
        {
          tasks.push(async () => {
            const name = `${shape}-${compression}-${chunkSize}`;
            const bundle = join(tmp, `sluice-${name}.hg`);
            await writeStreamBundle(repos.get(shape)!, bundle, { type: 'v2', compression, chunkSize });
            const target = join(tmp, `t-${name}`);
            expect(await applyAndCheck(bundle, target, 'v2'), name).toBe(logs.get(shape));
            // hg unbundle of a stream bundle writes the streamed requirements
            const requires = readFileSync(join(target, '.hg', 'store', 'requires'), 'latin1');
            expect(requires.includes('revlog-compression-zstd'), name).toBe(shape === 'default');
          });
        }
      }
      await inPairs(tasks);
    },
    // 6 bundles through hg unbundle and hg verify: ~20 s alone, over a minute on a loaded machine
    180_000,
  );
});
