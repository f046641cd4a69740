// Interop with real hg 6.3.2: one scenario, parametrized like hg's own test-clone-uncompressed.t
// (#testcases), over {packed1, v2 none, v2 zstd} x {closer on, off} x {4 KiB, 32 KiB bundle2
// chunks for v2}, for four source repositories: the two fixture shapes (default, legacy), the
// tiny corpus (hg's test repo, 1,034 files) and a 3,000-file corpus with hard names. The closer
// threshold is lowered for "on" so the background path really runs for every repository.
//
// Each case: (1) Sluice applies the bundle (hg's own for 32 KiB, Sluice's for 4 KiB: hg only
// writes 32 KiB chunks) -> `hg verify` passes, `hg log` equals the source's, store files are
// byte-identical (fncache: same lines, any order); (2) hg applies Sluice's bundle -> the same checks.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyBundleFile } from '../../src/main/engine/operations/apply/apply-stream-bundle';
import { writeStreamBundle } from '../../src/main/engine/streamclone/generate';
import { JobContext } from '../../src/main/engine/context/job-context';
import { MAKE_CORPUS, missing, skipNote, type Tool } from '../support/env';
import type { BundleCompression, BundleType } from '../../src/shared/jobs';

const FIXTURES = fileURLToPath(new URL('../fixtures/hg/', import.meta.url));
const HG_ENV = {
  ...process.env,
  HGPLAIN: '1',
  HGRCPATH: '/dev/null',
  HGUSER: 'Test <test@example.com>',
  LC_ALL: 'C',
};

function hg(args: string[], cwd?: string): string {
  return execFileSync('hg', args, { env: HG_ENV, cwd, encoding: 'latin1', maxBuffer: 64 << 20 });
}

function hgStatus(args: string[]): { status: number; out: string } {
  const r = spawnSync('hg', args, { env: HG_ENV, encoding: 'latin1', maxBuffer: 64 << 20 });
  return { status: r.status ?? -1, out: (r.stdout ?? '') + (r.stderr ?? '') };
}

/** relative path -> md5 of every file under dir */
function md5Tree(dir: string, base = dir, out = new Map<string, string>()): Map<string, string> {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) md5Tree(p, base, out);
    else out.set(relative(base, p), createHash('md5').update(readFileSync(p)).digest('hex'));
  }
  return out;
}

/** The store as a stream clone must reproduce it: no transaction leftovers, no local-only files. */
function comparableStore(repo: string): Map<string, string> {
  const all = md5Tree(join(repo, '.hg', 'store'));
  for (const k of [...all.keys()]) {
    if (k.startsWith('undo') || k === 'lock' || k === 'requires' || k === 'fncache' || k === 'phaseroots')
      all.delete(k);
  }
  return all;
}

const fncacheLines = (repo: string): string[] =>
  readFileSync(join(repo, '.hg', 'store', 'fncache'), 'latin1')
    .split('\n')
    .filter(Boolean)
    .sort();

interface Source {
  name: string;
  repo: string;
  log: string;
  store: Map<string, string>;
  fncache: string[];
  /** hg-made bundles: packed1, v2-none, v2-zstd */
  hgBundles: Record<string, string>;
}

type Variant = { type: BundleType; compression: BundleCompression; chunk?: number };
const VARIANTS: Variant[] = [
  { type: 'packed1', compression: 'none' },
  { type: 'v2', compression: 'none', chunk: 32768 },
  { type: 'v2', compression: 'none', chunk: 4096 },
  { type: 'v2', compression: 'zstd', chunk: 32768 },
  { type: 'v2', compression: 'zstd', chunk: 4096 },
];
const CASES = VARIANTS.flatMap((v) => (['on', 'off'] as const).map((closer) => ({ ...v, closer })));
const label = (c: (typeof CASES)[number]) =>
  `${c.type}${c.type === 'v2' ? ` ${c.compression} ${c.chunk! / 1024} KiB` : ''}, closer ${c.closer}`;

const work = mkdtempSync(join(tmpdir(), 'sluice-apply-interop-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
let counter = 0;
const fresh = (what: string) => join(work, `${what}-${counter++}`);

/**
 * `closerOnly`: run only the closer-on half (the 3,000-file corpus: its point is the background
 * path under load; the closer-off half and hg applying Sluice's bundles are covered by the
 * smaller repositories, and every extra 3,000-file tree costs seconds to write and delete).
 */
function describeSource(name: string, make: (dir: string) => void, tools: Tool[], closerOnly = false) {
  describe.skipIf(missing(...tools))(`apply interop with hg: ${name}${skipNote(...tools)}`, () => {
    const src = {} as Source;
    beforeAll(() => {
      const repo = join(work, `src-${name}`);
      mkdirSync(repo, { recursive: true });
      make(repo);
      src.name = name;
      src.repo = repo;
      src.log = hg(['log', '-R', repo, '-T', '{rev}:{node}\n']);
      src.store = comparableStore(repo);
      src.fncache = fncacheLines(repo);
      src.hgBundles = {};
      const b = (f: string) => join(work, `${name}-hg-${f}`);
      hg(['debugcreatestreamclonebundle', '-q', b('packed1.hg')], repo);
      hg(['bundle', '-q', '-a', '-t', 'none-v2;stream=v2', b('v2-none.hg')], repo);
      hg(['bundle', '-q', '-a', '-t', 'zstd-v2;stream=v2', b('v2-zstd.hg')], repo);
      src.hgBundles = { packed1: b('packed1.hg'), 'v2-none': b('v2-none.hg'), 'v2-zstd': b('v2-zstd.hg') };
    });

    /** hg verify clean, same changesets, byte-identical store (fncache: same lines). */
    function expectSameRepository(clone: string) {
      const v = hgStatus(['verify', '-q', '-R', clone]);
      expect(v, `hg verify of ${clone}`).toEqual({ status: 0, out: '' });
      expect(hg(['log', '-R', clone, '-T', '{rev}:{node}\n'])).toBe(src.log);
      expect(comparableStore(clone)).toEqual(src.store);
      expect(fncacheLines(clone)).toEqual(src.fncache);
    }

    const cases = closerOnly ? CASES.filter((c) => c.closer === 'on') : CASES;
    it.each(cases)('%#: $type $compression $chunk, closer $closer', async (c) => {
      // Sluice's bundle of this variant (also what hg applies in part 2)
      const ours = fresh(`${name}-sluice.hg`);
      await writeStreamBundle(src.repo, ours, {
        type: c.type,
        compression: c.compression,
        ...(c.chunk ? { chunkSize: c.chunk } : {}),
      });
      // (1) Sluice applies: hg's bundle where hg makes this variant, else Sluice's
      const input =
        c.type === 'packed1'
          ? src.hgBundles['packed1']!
          : c.chunk === 32768
            ? src.hgBundles[`v2-${c.compression}`]!
            : ours;
      const clone = fresh(`${name}-clone`);
      const closer =
        c.closer === 'on'
          ? { backgroundClose: 'on' as const, minFileCount: 1, closeThreads: 4, maxQueue: 64 }
          : { backgroundClose: 'off' as const };
      const stats = await applyBundleFile(input, clone, { closer }, new JobContext());
      expect(stats.close.background, label(c)).toBe(c.closer === 'on');
      if (c.closer === 'on') expect(stats.close.backgroundClosed).toBe(stats.files);
      expectSameRepository(clone);
      // streamed requirements end up in the clone like an hg stream clone's (share-safe split)
      expect(hg(['debugrequires', '-R', clone]).split('\n').filter(Boolean)).toEqual(
        stats.requirements.slice().sort(),
      );
      rmSync(clone, { recursive: true, force: true });

      // (2) hg applies Sluice's bundle (once per bundle: the closer does not matter to hg)
      if (c.closer === 'off') {
        const byHg = fresh(`${name}-byhg`);
        hg(['init', byHg]);
        if (c.type === 'packed1') hg(['debugapplystreamclonebundle', '-R', byHg, ours]);
        else hg(['unbundle', '-q', '-R', byHg, ours]);
        expectSameRepository(byHg);
        rmSync(byHg, { recursive: true, force: true });
      }
      rmSync(ours, { force: true });
    });
  });
}

function extractFixture(shape: string) {
  return (dir: string) => {
    execFileSync('tar', ['-xzf', join(FIXTURES, shape, 'repo.tar.gz'), '-C', dir]);
  };
}
const corpus = (args: string[]) => (dir: string) => {
  rmSync(dir, { recursive: true, force: true });
  execFileSync(MAKE_CORPUS, [...args, dir], { env: HG_ENV, stdio: 'ignore' });
};

describeSource('default fixture', extractFixture('default'), ['hg']);
describeSource('legacy fixture', extractFixture('legacy'), ['hg']);
describeSource('tiny corpus', corpus(['--preset', 'tiny']), ['hg', 'make-corpus']);
describeSource(
  '3000-file corpus',
  corpus(['--files', '3000', '--commits', '20', '--big-files', '3']),
  ['hg', 'make-corpus'],
  true,
);
