// A differential sweep: varied repositories made by real hg from a seed (sweep-repo.py: branches
// with closed heads, several heads, merges over renames and copies, file <-> directory and
// symlink <-> file swaps, exec flips, names hg stores encoded, tags moved and removed, bookmarks,
// phases, long delta chains, each repository with a random mix of format options), and every
// Sluice path compared with hg's on each: stream and pull clones from hg serve, hg's clones and
// pulls from sluice serve, sluice apply of changegroup bundles into new and existing repositories,
// sluice update against hg update, sluice verify against hg verify.
//
// Updates go into dirstate-v2 working copies on odd seeds. Then the legacy v1 stream (sluice clone
// --stream v1 from hg serve and sluice serve --v1-only, against hg's v2 clone; hg's v1 client
// from sluice against hg's v1 client from hg) and, with SLUICE_SWEEP_WIDE, an `hg share -B` of
// the repository (sluice verify and update in it, hg's clones from sluice serve of it against hg
// serve of it), ssh:// both ways (sshd-harness), clone bundles made by hg and served by sluice
// serve --clone-bundle, and obsolescence markers added to a copy (sweep-repo.py --markers)
// through pull, bundle apply and serve.
//
// CI runs seed 1 (~40 s); SLUICE_SWEEP_SEEDS=1-40 (or 3,7,9) runs more, SLUICE_SWEEP_BIG=1 adds a
// 1-3 MB incompressible file with deltas to every repository, SLUICE_SWEEP_WIDE=1 (or a list:
// ssh,bundles,obsmarkers) the heavier paths.
//
// Known differences (hg 6.3.2's client, not Sluice's, so compared as such):
// - hg's legacy (v1) stream clone and its clone through a packed1 bundle leave every changeset
//   public (no phaseroots in them; the pull after only advances phases); Sluice's keep the
//   server's draft roots, as hg's v2 clone does.
// - hg's clone through a packed1 bundle keeps the client's default requirements (applybundlev1
//   writes none of the bundle's: a repository without generaldelta arrives claiming it);
//   Sluice's takes the bundle's, as hg's stream clone from the server does.
// - hg clone (--pull, or --stream from a server with a secret changeset) applies a stream clone
//   bundle even when the server offers no stream: the bundle's secret changesets arrive public
//   (debugcreatestreamclonebundle warns). Sluice takes a stream bundle only when the server
//   streams, and pulls otherwise (taking a changegroup bundle).
// - Seed 9: hg 6.3.2's own v1 stream client (streamclone.consumev1) aborts with "path contains
//   illegal component" on that repository, from hg serve as from sluice serve, and so does its
//   clone through a packed1 bundle; Sluice's v1 clones of it pass. The v1, ssh and clone bundle
//   tests fail there on hg's reference clone (not reduced yet: found at the session's end).
// - Seeds 46 and 50 (wide): hg's v1 clone over HTTP, and its clone through hg's own packed1 bundle
//   served by sluice serve, arrive corrupt (hg verify: a filelog missing). The bytes served are
//   hg's (the bundle file as it is, Content-Length framing; hg serve's v1 stream the same); hg's
//   client logs a name with its first bytes missing (`adding wap/inner.i`): its v1 reader over
//   HTTP loses its place, the same bundle applied from disk verifies.
// - A share made with `hg share -B` reads its bookmarks from the source, as hg with the share
//   extension (the only way to make one); hg without the extension reads the share's own file.

import { spawnSync } from 'node:child_process';
import {
  appendFileSync,
  chmodSync,
  existsSync,
  lstatSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSshd, type Sshd } from '../../scripts/sshd-harness.mjs';
import { debugstateEntries, workingCopyTree } from './working-copy-support';
import { JobContext, type ConnectOptions } from '../../src/main/engine/context/job-context';
import { cloneFromUrl, type CloneResult } from '../../src/main/engine/operations/clone/clone';
import { runJob } from '../../src/main/engine/job/run-job';
import { workingCopyStatus } from '../../src/main/engine/operations/status/status';
import { HgConfig } from '../../src/main/engine/store/hgrc';
import { verifyRepository } from '../../src/main/engine/operations/verify/verify';
import { startServer, type RunningServer } from '../../src/main/engine/operations/serve/http-server';
import { HG_ENV, HG_PYTHON, ROOT, type RunResult } from '../support/env';
import type { CloneRequest, JobRequest } from '../../src/shared/jobs';
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

/**
 * The heavier paths, each on with SLUICE_SWEEP_WIDE=1 (all) or a list (ssh,bundles,obsmarkers,
 * share): ssh starts an sshd and some 15 ssh sessions per seed, clone bundles make three bundles
 * and twelve clones, obsmarkers a second repository and its own servers, share two shares and
 * their servers (CI keeps the sweep under a minute).
 */
type WidePath = 'ssh' | 'bundles' | 'obsmarkers' | 'share';
const wideSpec = (process.env.SLUICE_SWEEP_WIDE ?? '').split(',').map((s) => s.trim());
const wide = (path: WidePath): boolean =>
  wideSpec.includes('1') || wideSpec.includes('all') || wideSpec.includes(path);
const wideNote = (path: WidePath, cost: string): string =>
  wide(path) ? '' : ` (skipped: SLUICE_SWEEP_WIDE=${path} or =1 runs it; ${cost})`;

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
const EVOLVE = ['--config', 'experimental.evolution=all'];
const logOf = (repo: string): Promise<string> => hg(['-R', repo, 'log', '-T', LOG]);

async function job(request: JobRequest, connect?: ConnectOptions): Promise<void> {
  await runJob(request, new JobContext({ sink: () => undefined, ...(connect ? { connect } : {}) }));
}

/** cloneFromUrl without a checkout, with its logs (which path it took shows in `via`). */
async function clone(
  url: string,
  dest: string,
  opts: Omit<CloneRequest, 'kind' | 'url' | 'dest'> = {},
  connect?: ConnectOptions,
): Promise<CloneResult & { logs: string[] }> {
  const logs: string[] = [];
  const ctx = new JobContext({
    fileEvents: false,
    ...(connect ? { connect } : {}),
    sink: (e) => void (e.type === 'log' && logs.push(e.message)),
  });
  return { ...(await cloneFromUrl({ kind: 'clone', url, dest, update: false, ...opts }, ctx)), logs };
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

/**
 * Edits a working copy in every way `hg status` reports, picked from the seed: appends (M), a
 * same-size rewrite (M, or a mtime hg must compare), a file removed from disk (!), an exec flip, a
 * new file to add and one left unknown (?), and an ignored one (I) through a new `.hgignore`.
 */
function editEveryKind(wc: string, files: string[], seed: number): void {
  let x = seed * 2654435761 || 1;
  files = files.filter((f) => lstatSync(join(wc, f), { throwIfNoEntry: false })?.isFile());
  const pick = (): string => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return files[x % files.length]!;
  };
  const regular = (f: string): boolean => {
    const st = lstatSync(join(wc, f), { throwIfNoEntry: false });
    return st !== undefined && st.isFile();
  };
  for (let i = 0; i < 3; i++) {
    const f = pick();
    if (regular(f)) appendFileSync(join(wc, f), `sweep edit ${i}\n`);
  }
  const same = pick();
  if (regular(same)) {
    const bytes = readFileSync(join(wc, same));
    if (bytes.length > 0) writeFileSync(join(wc, same), Buffer.from(bytes.map((b) => b ^ 1)));
  }
  const gone = pick();
  if (regular(gone)) rmSync(join(wc, gone));
  const flip = pick();
  if (regular(flip)) chmodSync(join(wc, flip), statSync(join(wc, flip)).mode ^ 0o111);
  writeFileSync(join(wc, 'sweep-added.txt'), 'added\n');
  writeFileSync(join(wc, 'sweep-unknown.txt'), 'unknown\n');
  writeFileSync(join(wc, '.hgignore'), 'syntax: glob\n*.sweeplog\n');
  writeFileSync(join(wc, 'build.sweeplog'), 'ignored\n');
}

/** `sluice status -mardu -i -c` of a working copy, as hg prints it (paths from the root). */
async function sluiceStatusLines(wc: string): Promise<string> {
  const r = await workingCopyStatus(wc, {
    listUnknown: true,
    listIgnored: true,
    listClean: true,
    warn: () => undefined,
    userConfig: new HgConfig(),
  });
  const kinds: [string, string[]][] = [
    ['M', r.modified],
    ['A', r.added],
    ['R', r.removed],
    ['!', r.deleted],
    ['?', r.unknown],
    ['I', r.ignored],
    ['C', r.clean],
  ];
  const text = kinds.flatMap(([code, paths]) => paths.map((p) => `${code} ${p}\n`)).join('');
  return Buffer.from(text, 'latin1').toString('utf8'); // paths are byte strings; hg's output is read as UTF-8
}

describe.skipIf(missing('hg', 'hg-python'))(
  `sweep over generated repositories${skipNote('hg', 'hg-python')}`,
  () => {
    // one sshd for every seed (the harness of wire-ssh.test.ts); remote commands run with the
    // temp home's .hgrc (the slow paths hg needs for some formats) and Sluice from source
    let sshd: Sshd | undefined;
    let sluiceRemote = '';
    const sshOn = (): boolean => wide('ssh') && !missing('sshd', 'ssh');
    beforeAll(async () => {
      if (!sshOn()) return;
      sshd = await startSshd();
      writeFileSync(
        join(sshd.home, '.hgrc'),
        '[storage]\ndirstate-v2.slow-path = allow\nrevlog.persistent-nodemap.slow-path = allow\n',
      );
      sluiceRemote = join(sshd.home, 'sluice-remote');
      const sluice = `SLUICE_FROM_SOURCE=1 exec '${process.execPath}' '${join(ROOT, 'bin', 'sluice.cjs')}'`;
      // the same remote serving only the legacy stream (serve --v1-only)
      for (const [path, extra] of [
        [sluiceRemote, ''],
        [`${sluiceRemote}-v1`, ' --v1-only'],
      ] as const) {
        writeFileSync(path, `#!/bin/sh\n${sluice} "$@"${extra}\n`);
        chmodSync(path, 0o755);
      }
    }, 60_000);
    afterAll(async () => {
      await sshd?.stop();
    });

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
        let refV1Made: Promise<string> | undefined;
        /**
         * hg's own legacy (v1) stream clone from hg serve: hg's v1 client leaves every changeset
         * public (no phaseroots in the stream, and the pull after only advances phases), so it
         * is the reference for hg's v1 clients of Sluice (Sluice's own keep the drafts: refStream)
         */
        const refV1 = (): Promise<string> =>
          (refV1Made ??= (async () => {
            const ref = join(work, 'ref-v1');
            const v1 = await startHgServe(src, [
              ...SLOW_PATHS.filter((a) => a !== '--config'),
              'server.bundle2.stream=false',
            ]);
            try {
              await hg(['clone', '-q', '-U', '--stream', v1.url, ref]);
            } finally {
              v1.stop();
            }
            return ref;
          })());
        let refIncrMade: Promise<string> | undefined;
        /** hg's own clone -r middle and pull from hg serve (revision numbers follow arrival order) */
        const refIncr = (): Promise<string> =>
          (refIncrMade ??= (async () => {
            const ref = join(work, 'ref-incr');
            await hg(['clone', '-q', '-U', '-r', middle, hgServe.url, ref]);
            await hg(['-R', ref, 'pull', '-q']);
            return ref;
          })());

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
          await expectLike(incr, await refIncr());
          const ours = join(work, 'sluice-incr-from-hg');
          await hg(['clone', '-q', '-U', '-r', middle, hgServe.url, ours]);
          await job({ kind: 'pull', repo: ours });
          await expectLike(ours, await refIncr());
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

        // odd seeds (CI's 1 too) check out into dirstate-v2 working copies, even seeds into v1
        const dirstateV2 = seed % 2 === 1;
        it(`sluice update matches hg update: tip, an old revision, a closed branch, a tag, a bookmark (dirstate-v${dirstateV2 ? 2 : 1})`, async () => {
          const ours = join(work, 'wc-sluice');
          const theirs = join(work, 'wc-hg');
          const format = ['--config', `format.use-dirstate-v2=${dirstateV2 ? 'yes' : 'no'}`];
          for (const d of [ours, theirs]) await hg(['clone', '-q', '-U', ...format, src, d]);
          expect(requiresOf(ours).includes('dirstate-v2')).toBe(dirstateV2);
          // the tags hg sees (a random removal of .hgtags may have dropped the generator's)
          const tags = (await hg(['-R', src, 'tags', '-q'])).split('\n').filter((t) => t && t !== 'tip');
          const revs = ['tip', '1', 'closedtip', ...tags.slice(0, 1), 'book', '0', 'default', 'null'];
          for (const rev of revs) {
            await job({ kind: 'update', repo: ours, rev });
            await hg(['update', '-q', rev], theirs);
            await expectSameCheckout(ours, theirs, rev);
          }
        }, 120_000);

        it(`sluice status matches hg status after edits of every kind (dirstate-v${dirstateV2 ? 2 : 1})`, async () => {
          const wc = join(work, 'wc-status');
          await hg([
            'clone',
            '-q',
            '--config',
            `format.use-dirstate-v2=${dirstateV2 ? 'yes' : 'no'}`,
            src,
            wc,
          ]);
          editEveryKind(wc, (await hg(['files'], wc)).split('\n').filter(Boolean), seed);
          await hg(['add', '-q', 'sweep-added.txt'], wc);
          const victim = (await hg(['files'], wc)).split('\n').find((f) => f && !f.startsWith('.hg'));
          if (victim) await hg(['rm', '-q', '-f', victim], wc); // R, whether edited or gone
          const flags = ['-m', '-a', '-r', '-d', '-u', '-i', '-c'];
          // ours first (it may record clean files in the dirstate), then hg's, then ours again
          const first = await sluiceStatusLines(wc);
          const theirs = await hg(['-R', wc, 'status', ...flags], work);
          expect(first, 'sluice status before hg status').toBe(theirs);
          expect(await sluiceStatusLines(wc), 'sluice status after hg status').toBe(theirs);
          expect(theirs).toMatch(/^A sweep-added\.txt$/m);
          expect(theirs).toMatch(/^I build\.sweeplog$/m);
        }, 120_000);

        it('legacy v1 stream: sluice clone --stream v1 from hg serve and sluice serve --v1-only; hg clone --stream from the latter', async () => {
          const v1 = await startServer({ repo: src, streamV2: false });
          try {
            for (const [label, url] of [
              ['hg', hgServe.url],
              ['sluice', v1.url],
            ] as const) {
              const dest = join(work, `v1-${label}`);
              const r = await clone(url, dest, { stream: 'v1' });
              // a secret changeset: neither server streams (stream_out answers 1), both are pulled from
              expect(r.via, label).toBe(hasSecret ? 'pull' : 'stream-v1');
              // hg's v2 stream clone is the reference: the same store files, the phases from listkeys
              await expectLike(dest, refStream);
              expect(requiresOf(dest), label).toBe(requiresOf(refStream));
              if (!hasSecret) expect(storeDigest(dest), label).toEqual(storeDigest(refStream));
            }
            // hg's v1 client against hg's v1 server (see refV1)
            const hgDest = join(work, 'hg-v1-from-sluice');
            await hg(['clone', '-q', '-U', '--stream', v1.url, hgDest]);
            await expectLike(hgDest, await refV1());
            if (!hasSecret) expect(storeDigest(hgDest)).toEqual(storeDigest(await refV1()));
          } finally {
            await v1.close();
          }
        }, 120_000);

        it.skipIf(!wide('share'))(
          `an hg share -B of the repository: sluice verify and update in it, sluice serve from it, against hg${wideNote('share', 'two shares, two servers and four clones per seed')}`,
          async () => {
            const SHARE = ['--config', 'extensions.share='];
            const ours = join(work, 'share-sluice');
            const theirs = join(work, 'share-hg');
            for (const d of [ours, theirs]) await hg([...SHARE, 'share', '-q', '-U', '-B', src, d]);
            await expectVerified(ours);
            for (const rev of ['tip', 'book', '1', 'null']) {
              await job({ kind: 'update', repo: ours, rev });
              await hg([...SHARE, 'update', '-q', rev], theirs);
              await expectSameCheckout(ours, theirs, rev);
            }
            // served: hg serve of the same share is the reference (its bookmarks are the source's)
            const served = await startServer({ repo: ours });
            const hgServed = await startHgServe(theirs, [
              'extensions.share=',
              ...SLOW_PATHS.filter((a) => a !== '--config'),
            ]);
            try {
              for (const how of ['--pull', '--stream']) {
                const a = join(work, `from-share-sluice${how}`);
                const b = join(work, `from-share-hg${how}`);
                await hg(['clone', '-q', '-U', how, served.url, a]);
                await hg(['clone', '-q', '-U', how, hgServed.url, b]);
                await expectLike(a, b);
                expect(requiresOf(a), how).toBe(requiresOf(b));
                if (how === '--stream' && !hasSecret) expect(storeDigest(a)).toEqual(storeDigest(b));
              }
            } finally {
              hgServed.stop();
              await served.close();
            }
          },
          120_000,
        );

        it.skipIf(!sshOn())(
          `ssh://: sluice clone (stream v2, v1, --pull) and sluice pull from hg and sluice serve --stdio; hg clone and pull from sluice serve --stdio${wideNote('ssh', 'an sshd and ~15 ssh sessions per seed')}${wide('ssh') ? skipNote('sshd', 'ssh') : ''}`,
          async () => {
            const s = sshd!;
            const url = s.url(src);
            const remotes = [
              ['hg', 'hg'],
              ['sluice', sluiceRemote],
            ] as const;
            for (const [label, remoteCommand] of remotes) {
              const connect = { sshCommand: s.sshCommand, remoteCommand };
              for (const stream of ['v2', 'v1'] as const) {
                const dest = join(work, `ssh-${stream}-${label}`);
                const r = await clone(url, dest, { stream }, connect);
                expect(r.via, `${label} ${stream}`).toBe(hasSecret ? 'pull' : `stream-${stream}`);
                await expectLike(dest, refStream);
                expect(requiresOf(dest), label).toBe(requiresOf(refStream));
                if (!hasSecret)
                  expect(storeDigest(dest), `${label} ${stream}`).toEqual(storeDigest(refStream));
              }
              const pulled = join(work, `ssh-pull-${label}`);
              await clone(url, pulled, { pull: true }, connect);
              await expectLike(pulled, refPull);
              const incr = join(work, `ssh-incr-${label}`);
              await hg(['clone', '-q', '-U', '-r', middle, hgServe.url, incr]);
              await job({ kind: 'pull', repo: incr, source: url }, connect);
              await expectLike(incr, await refIncr());
            }
            const ssh = ['--ssh', s.sshCommand, '--remotecmd', sluiceRemote];
            const st = join(work, 'hg-ssh-stream');
            await hg(['clone', '-q', '-U', '--stream', ...ssh, url, st]);
            await expectLike(st, refStream);
            if (!hasSecret) expect(storeDigest(st)).toEqual(storeDigest(refStream));
            const v1 = join(work, 'hg-ssh-stream-v1');
            await hg([
              'clone',
              '-q',
              '-U',
              '--stream',
              '--ssh',
              s.sshCommand,
              '--remotecmd',
              `${sluiceRemote}-v1`,
              url,
              v1,
            ]);
            await expectLike(v1, await refV1());
            const pl = join(work, 'hg-ssh-pull');
            await hg(['clone', '-q', '-U', '--pull', ...ssh, url, pl]);
            await expectLike(pl, refPull);
            const incr = join(work, 'hg-ssh-incr');
            await hg(['clone', '-q', '-U', '-r', middle, ...ssh, url, incr]);
            await hg(['-R', incr, 'pull', '-q', ...ssh, url]);
            await expectLike(incr, await refIncr());
          },
          240_000,
        );

        it.skipIf(!wide('bundles'))(
          `clone bundles (packed1, v2 stream, gzip-v2 changegroup made by hg) served by sluice serve --clone-bundle: Sluice's clone and clone --pull against hg's clone --stream and clone --pull through them${wideNote('bundles', 'three bundles and twelve clones per seed')}`,
          async () => {
            const made = [
              ['packed1', ['debugcreatestreamclonebundle']],
              // hg bundle makes no v2 stream bundle of a repository with a secret changeset
              ...(hasSecret ? [] : [['stream-v2', ['bundle', '-q', '-a', '-t', 'none-v2;stream=v2']]]),
              ['gzip-v2', ['bundle', '-q', '-a', '-t', 'gzip-v2']],
            ] as const;
            const nodes = (repo: string): Promise<string> => hg(['-R', repo, 'log', '-T', '{rev}:{node}\n']);
            for (const [type, args] of made) {
              const file = join(work, `cb-${type}.hg`);
              await hg(['-R', src, ...args, file]);
              const server = await startServer({ repo: src, cloneBundles: { files: [{ path: file }] } });
              try {
                // sluice clone streams, as hg clone --stream: stream bundles only; clone --pull:
                // hg takes any bundle, Sluice a changegroup bundle only
                const hgClone = (how: string): string => join(work, `cb-${type}-hg${how}`);
                for (const how of ['--stream', '--pull'] as const) {
                  const out = await hg(['clone', '-U', how, server.url, hgClone(how)]);
                  // hg clone --stream filters out a changegroup bundle ("not a stream clone")
                  expect(out.includes('applying clone bundle'), `${type} ${how}`).toBe(
                    type !== 'gzip-v2' || how === '--pull',
                  );
                  await expectVerified(hgClone(how));
                }
                for (const how of ['--stream', '--pull'] as const) {
                  const ours = join(work, `cb-${type}-sluice${how}`);
                  const theirs = hgClone(how);
                  const r = await clone(server.url, ours, how === '--pull' ? { pull: true } : {});
                  const what = `${type} ${how}`;
                  if (type === 'gzip-v2') {
                    // Sluice pulls through a changegroup bundle (--pull, or a server that
                    // offers no stream), else streams from the server
                    const used = how === '--pull' || hasSecret;
                    expect(r.via, what).toBe(used ? 'clone-bundle' : 'stream-v2');
                    expect(
                      r.logs.some((l) => l.startsWith('applying clone bundle')),
                      what,
                    ).toBe(used);
                    // a server with nothing to stream: Sluice's clone is hg clone (--pull)'s
                    await expectLike(ours, hgClone(used ? '--pull' : '--stream'));
                  } else if (hasSecret || how === '--pull') {
                    // a stream bundle, which the server does not offer (a secret changeset) or
                    // not asked for (--pull): Sluice pulls from the server. hg applies the bundle
                    // (with a secret changeset in it, debugcreatestreamclonebundle warns)
                    expect(r.via, what).toBe('pull');
                    await expectLike(ours, refPull);
                  } else {
                    expect(r.via, what).toBe('clone-bundle');
                    // Sluice's clone is the server's, as hg's stream clone from it; hg's client
                    // leaves everything public after a packed1 bundle (no phaseroots in it, and
                    // the pull after it only advances phases), as after its legacy stream clone
                    await expectLike(ours, refStream);
                    // and keeps its own default requirements (streamclone.applybundlev1 writes
                    // none of the bundle's; applybundlev2 does): Sluice's are the stream's (seed 7,
                    // no generaldelta)
                    if (type === 'packed1') expect(await nodes(ours), what).toBe(await nodes(theirs));
                    else await expectLike(ours, theirs);
                    expect(requiresOf(ours), what).toBe(requiresOf(type === 'packed1' ? refStream : theirs));
                    expect(storeDigest(ours), what).toEqual(storeDigest(theirs));
                  }
                }
              } finally {
                await server.close();
              }
            }
          },
          240_000,
        );

        it.skipIf(!wide('obsmarkers'))(
          `obsolescence markers (an amend, prunes, orphans, an unknown predecessor) on a copy: sluice pull, sluice apply of a bundle with markers, hg pull and stream clone from sluice serve, against hg${wideNote('obsmarkers', 'a second repository, its two servers and ten clones per seed')}`,
          async () => {
            const obs = join(work, 'obs');
            const cp = spawnSync('cp', ['-a', src, obs], { encoding: 'utf8' });
            if (cp.status !== 0) throw new Error(`cp: ${cp.stderr}`);
            const g = spawnSync(HG_PYTHON, [GENERATOR, String(seed), obs, '--markers'], {
              env: HG_ENV,
              encoding: 'utf8',
            });
            if (g.status !== 0) throw new Error(`sweep-repo.py ${seed} --markers: ${g.stderr}`);
            const evo = (args: string[]): Promise<string> => hg([...EVOLVE, ...args]);
            const expectSameObs = async (ours: string, theirs: string, what: string): Promise<void> => {
              const v = await hgRun([...EVOLVE, '-R', ours, 'verify', '-q']);
              expect(v.status, `${what}: hg verify: ${v.stdout}${v.stderr}`).toBe(0);
              const report = await verifyRepository(ours, new JobContext({ sink: () => undefined }));
              expect(report.errors + report.warnings, `${what}: ${JSON.stringify(report.problems)}`).toBe(0);
              for (const args of [['debugobsolete'], ['log', '--hidden', '-T', LOG], ['log', '-T', LOG]])
                expect(await evo(['-R', ours, ...args]), `${what}: ${args.join(' ')}`).toBe(
                  await evo(['-R', theirs, ...args]),
                );
            };
            const evolving = (repo: string): void =>
              writeFileSync(join(repo, '.hg', 'hgrc'), '[experimental]\nevolution = all\n', { flag: 'a' });
            const hgObs = await startHgServe(
              obs,
              SLOW_PATHS.filter((a) => a !== '--config'),
            );
            const sluiceObs = await startServer({ repo: obs });
            try {
              // pulled into clones of the root with evolution on
              const [ours, theirs] = [join(work, 'obs-pull-sluice'), join(work, 'obs-pull-hg')];
              for (const d of [ours, theirs]) {
                await evo(['clone', '-q', '-U', '-r', '0', hgObs.url, d]);
                evolving(d);
              }
              await job({ kind: 'pull', repo: ours, source: hgObs.url });
              await evo(['-R', theirs, 'pull', '-q', hgObs.url]);
              await expectSameObs(ours, theirs, 'sluice pull');
              expect(readOr(join(ours, '.hg', 'store', 'obsstore'))).toBe(
                readOr(join(theirs, '.hg', 'store', 'obsstore')),
              );
              // served: hg's clients with evolution on, from sluice serve and from hg serve
              for (const how of ['--pull', '--stream']) {
                const a = join(work, `obs-served-sluice${how}`);
                const b = join(work, `obs-served-hg${how}`);
                await evo(['clone', '-q', '-U', how, sluiceObs.url, a]);
                await evo(['clone', '-q', '-U', how, hgObs.url, b]);
                await expectSameObs(a, b, `hg clone ${how} from sluice serve`);
                if (how === '--stream' && !hasSecret) expect(storeDigest(a)).toEqual(storeDigest(b));
              }
              // the listkeys `obsolete` namespace (every marker in format 0, base85), what hg's
              // client pulls markers through from a server without the bundle2 part
              expect(await hg(['debugpushkey', sluiceObs.url, 'obsolete'])).toBe(
                await hg(['debugpushkey', hgObs.url, 'obsolete']),
              );
              // Sluice's stream clone taking the markers, against hg's evolution stream clone
              const sc = join(work, 'obs-sluice-stream');
              await clone(hgObs.url, sc, { obsmarkers: true });
              await expectSameObs(sc, join(work, 'obs-served-hg--stream'), 'sluice clone --obsmarkers');
              // a bundle carrying markers, applied into repositories with evolution on
              const bundle = join(work, 'obs.hg');
              await evo([
                '-R',
                obs,
                'bundle',
                '-q',
                '-a',
                '-t',
                'gzip-v2',
                '--config',
                'experimental.evolution.bundle-obsmarker=true',
                bundle,
              ]);
              const [ao, at] = [join(work, 'obs-apply-sluice'), join(work, 'obs-apply-hg')];
              for (const d of [ao, at]) {
                await hg(['init', d]);
                evolving(d);
              }
              await job({ kind: 'apply', bundlePath: bundle, dest: ao });
              await evo(['-R', at, 'unbundle', '-q', bundle]);
              await expectSameObs(ao, at, 'sluice apply');
            } finally {
              hgObs.stop();
              await sluiceObs.close();
            }
          },
          240_000,
        );
      });
    }
  },
);
