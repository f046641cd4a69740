// A differential sweep: varied repositories made by real hg from a seed (sweep-repo.py: branches
// with closed heads, several heads, merges over renames and copies, file <-> directory and
// symlink <-> file swaps, exec flips, names hg stores encoded, tags moved and removed, bookmarks,
// phases, long delta chains, each repository with a random mix of format options), and every
// Sluice path compared with hg's on each: stream and pull clones from hg serve, hg's clones and
// pulls from sluice serve, sluice apply of changegroup bundles into new and existing repositories,
// sluice update against hg update, sluice verify against hg verify.
//
// CI runs seed 1 (~40 s); SLUICE_SWEEP_SEEDS=1-40 (or 3,7,9) runs more, SLUICE_SWEEP_BIG=1 adds a
// 1-3 MB incompressible file with deltas to every repository.

import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { debugstateEntries, workingCopyTree } from './working-copy-support';
import { JobContext } from '../../src/main/engine/job/job-context';
import { runJob } from '../../src/main/engine/job/run-job';
import { verifyRepository } from '../../src/main/engine/verify/verify';
import { startServer, type RunningServer } from '../../src/main/engine/wire/server';
import { HG_ENV, HG_PYTHON, ROOT, type RunResult } from '../../src/main/engine/test-support';
import type { JobRequest } from '../../src/shared/jobs';
import {
  hgAsync,
  missing,
  removeDir,
  requiresOf,
  skipNote,
  startHgServe,
  storeDigest,
  tempDir,
  type HgServer,
} from './wire-support';

const GENERATOR = join(ROOT, 'test', 'interop', 'sweep-repo.py');

/** "1-3,7" -> [1, 2, 3, 7]; default: seed 1 (CI time). */
function seeds(spec = process.env.SLUICE_SWEEP_SEEDS ?? '1'): number[] {
  return spec.split(',').flatMap((part) => {
    const [a, b] = part.split('-').map(Number);
    return b === undefined ? [a!] : Array.from({ length: b - a! + 1 }, (_, i) => a! + i);
  });
}

// hg 6.3.2 without Rust opens dirstate-v2 and persistent-nodemap repositories only so
const SLOW_PATHS = [
  '--config',
  'storage.dirstate-v2.slow-path=allow',
  '--config',
  'storage.revlog.persistent-nodemap.slow-path=allow',
];

function hgRun(args: string[], cwd?: string): Promise<RunResult> {
  return hgAsync([...SLOW_PATHS, ...args], { cwd });
}
async function hg(args: string[], cwd?: string): Promise<string> {
  const r = await hgRun(args, cwd);
  if (r.status !== 0) throw new Error(`hg ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

const LOG = '{rev}:{node} {phase} {branch} {bookmarks} {tags}\n';
const logOf = (repo: string): Promise<string> => hg(['-R', repo, 'log', '-T', LOG]);

async function job(request: JobRequest): Promise<void> {
  await runJob(request, new JobContext({ sink: () => undefined }));
}

/** hg verify and sluice verify pass and count the same; hg log (nodes, phases, branches, bookmarks, tags) equals ref's. */
async function expectLike(repo: string, ref: string): Promise<void> {
  await expectVerified(repo);
  expect(await logOf(repo), repo).toBe(await logOf(ref));
}

async function expectVerified(repo: string): Promise<void> {
  const v = await hgRun(['-R', repo, 'verify']);
  expect(v.status, `hg verify ${repo}: ${v.stdout}${v.stderr}`).toBe(0);
  const report = await verifyRepository(repo, new JobContext({ sink: () => undefined }));
  expect(report.errors + report.warnings, JSON.stringify(report.problems)).toBe(0);
  expect(v.stdout, repo).toContain(
    `checked ${report.changesets} changesets with ${report.changes} changes to ${report.files} files`,
  );
}

async function debugstate(repo: string): Promise<string[]> {
  return debugstateEntries(await hg(['debugstate', '--no-dates'], repo));
}

const readOr = (p: string): string => (existsSync(p) ? readFileSync(p, 'latin1') : '<none>');

async function expectSameCheckout(ours: string, theirs: string, rev: string): Promise<void> {
  const what = `update to ${rev}`;
  expect(workingCopyTree(ours), what).toEqual(workingCopyTree(theirs));
  expect(await debugstate(ours), what).toEqual(await debugstate(theirs));
  expect(await hg(['status'], ours), what).toBe('');
  expect(await hg(['id', '-i'], ours), what).toBe(await hg(['id', '-i'], theirs));
  for (const f of ['branch', 'bookmarks.current'])
    expect(readOr(join(ours, '.hg', f)), `${what}: .hg/${f}`).toBe(readOr(join(theirs, '.hg', f)));
}

interface Made {
  config: string[];
  branches: string[];
  tags: string[];
}

describe.skipIf(missing('hg', 'hg-python'))(
  `sweep over generated repositories${skipNote('hg', 'hg-python')}`,
  () => {
    for (const seed of seeds()) {
      describe(`seed ${seed}`, () => {
        let work = '';
        let src = '';
        let made: Made;
        let hgServe: HgServer;
        let sluiceServe: RunningServer;
        let middle = '';
        let refPull = '';
        let refStream = '';
        let hasSecret = false;

        beforeAll(async () => {
          work = tempDir(`sweep-${seed}`);
          src = join(work, 'src');
          const args = [GENERATOR, String(seed), src];
          if (process.env.SLUICE_SWEEP_BIG) args.push('--big');
          const r = spawnSync(HG_PYTHON, args, { env: HG_ENV, encoding: 'utf8', maxBuffer: 64 << 20 });
          if (r.status !== 0) throw new Error(`sweep-repo.py ${seed}: ${r.stderr}`);
          made = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as Made;
          const revs = (await hg(['-R', src, 'log', '-r', 'not secret()', '-T', '{node}\n']))
            .trim()
            .split('\n');
          middle = revs[Math.floor(revs.length / 2)]!;
          hasSecret = (await hg(['-R', src, 'log', '-r', 'secret()', '-T', '{rev}'])) !== '';
          hgServe = await startHgServe(
            src,
            SLOW_PATHS.filter((a) => a !== '--config'),
          );
          sluiceServe = await startServer({ repo: src });
          refPull = join(work, 'ref-pull');
          refStream = join(work, 'ref-stream');
          await hg(['clone', '-q', '-U', '--pull', hgServe.url, refPull]);
          await hg(['clone', '-q', '-U', '--stream', hgServe.url, refStream]);
        }, 120_000);
        afterAll(async () => {
          hgServe?.stop();
          await sluiceServe?.close();
          if (work && !process.env.SLUICE_SWEEP_KEEP) removeDir(work);
        });

        it('sluice verify agrees with hg verify', async () => {
          await expectVerified(src);
        }, 60_000);

        it('stream clone from hg serve and from sluice serve', async () => {
          for (const [label, url] of [
            ['hg', hgServe.url],
            ['sluice', sluiceServe.url],
          ] as const) {
            const dest = join(work, `stream-${label}`);
            await job({ kind: 'clone', url, dest, update: false });
            await expectLike(dest, refStream);
            // hg's own stream clone is the reference (a clone encodes names with its own
            // requirements: a dotencode=no source gives a dotencoded clone). With a secret
            // changeset hg serves no stream (streamclone.allowservergeneration): both clients pull
            // instead, and their bytes differ (see the pull test).
            expect(requiresOf(dest), `${label} ${made.config.join(' ')}`).toBe(requiresOf(refStream));
            if (!hasSecret) expect(storeDigest(dest), label).toEqual(storeDigest(refStream));
          }
          const hgDest = join(work, 'hg-stream-from-sluice');
          await hg(['clone', '-q', '-U', '--stream', sluiceServe.url, hgDest]);
          await expectLike(hgDest, refStream);
        }, 120_000);

        it('sluice clone --pull from hg serve; hg clone --pull and an incremental hg pull from sluice serve', async () => {
          const dest = join(work, 'pull-sluice');
          await job({ kind: 'clone', url: hgServe.url, dest, pull: true, update: false });
          // not compared: the store bytes and delta chains of a pull. hg 6.3.2 compresses revlog
          // chunks with its vendored libzstd 1.4.4, Sluice with node:zlib's or the wasm libzstd
          // 1.5: a chunk may differ by a byte, which can flip hg's own delta rule (the chain's
          // compressed size against twice the text, revlogutils/deltas.py is_good_delta_info)
          // at its border and start a new chain one revision apart (seed 17).
          await expectLike(dest, refPull);
          expect(requiresOf(dest)).toBe(requiresOf(refPull));
          const hgDest = join(work, 'hg-pull-from-sluice');
          await hg(['clone', '-q', '-U', '--pull', sluiceServe.url, hgDest]);
          await expectLike(hgDest, refPull);
          const incr = join(work, 'hg-incr-from-sluice');
          await hg(['clone', '-q', '-U', '-r', middle, sluiceServe.url, incr]);
          await hg(['-R', incr, 'pull', '-q', sluiceServe.url]);
          // revision numbers depend on the history's order of arrival: hg's own incremental pull
          const refIncr = join(work, 'ref-incr');
          await hg(['clone', '-q', '-U', '-r', middle, hgServe.url, refIncr]);
          await hg(['-R', refIncr, 'pull', '-q']);
          await expectLike(incr, refIncr);
          const ours = join(work, 'sluice-incr-from-hg');
          await hg(['clone', '-q', '-U', '-r', middle, hgServe.url, ours]);
          await job({ kind: 'pull', repo: ours });
          await expectLike(ours, refIncr);
        }, 120_000);

        it('sluice apply of hg bundle --all (gzip-v2, bzip2-v1, zstd-v2) into new and existing repositories', async () => {
          const types = ['gzip-v2', 'bzip2-v1', 'zstd-v2'];
          for (const type of types) {
            const bundle = join(work, `all-${type}.hg`);
            await hg(['-R', src, 'bundle', '-q', '--all', '-t', type, bundle]);
            const ref = join(work, `ref-unbundle-${type}`);
            await hg(['init', ref]);
            await hg(['-R', ref, 'unbundle', '-q', bundle]);
            const dest = join(work, `apply-${type}`);
            await job({ kind: 'apply', bundlePath: bundle, dest });
            await expectLike(dest, ref);
            // into an existing repository: one type per seed (CI time)
            if (type !== types[seed % types.length]) continue;
            const refOld = join(work, `ref-unbundle-old-${type}`);
            const old = join(work, `apply-old-${type}`);
            for (const d of [refOld, old]) await hg(['clone', '-q', '-U', '-r', middle, src, d]);
            await hg(['-R', refOld, 'unbundle', '-q', bundle]);
            await job({ kind: 'apply', bundlePath: bundle, dest: old });
            await expectLike(old, refOld);
          }
        }, 120_000);

        it('sluice clone checks out what hg clone does (the @ bookmark, else the tip of default)', async () => {
          const ours = join(work, 'clone-wc-sluice');
          const theirs = join(work, 'clone-wc-hg');
          await job({ kind: 'clone', url: hgServe.url, dest: ours });
          await hg(['clone', '-q', hgServe.url, theirs]);
          await expectSameCheckout(ours, theirs, 'the clone default');
        }, 120_000);

        it('sluice update matches hg update: tip, an old revision, a closed branch, a tag, a bookmark', async () => {
          const ours = join(work, 'wc-sluice');
          const theirs = join(work, 'wc-hg');
          for (const d of [ours, theirs]) await hg(['clone', '-q', '-U', src, d]);
          // the tags hg sees (a random removal of .hgtags may have dropped the generator's)
          const tags = (await hg(['-R', src, 'tags', '-q'])).split('\n').filter((t) => t && t !== 'tip');
          const revs = ['tip', '1', 'closedtip', ...tags.slice(0, 1), 'book', '0', 'default', 'null'];
          for (const rev of revs) {
            await job({ kind: 'update', repo: ours, rev });
            await hg(['update', '-q', rev], theirs);
            await expectSameCheckout(ours, theirs, rev);
          }
        }, 120_000);
      });
    }
  },
);
