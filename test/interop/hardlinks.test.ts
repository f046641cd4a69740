// Writing into a repository made by `hg clone /local/path`, whose store hg hard-links to the
// source's: every writing command (sluice pull, pull -u, apply, update, and the app library's Pull
// and Update through the job registry) leaves every byte of the source's .hg as it was, and both
// repositories verify (repo/vfs.ts breaks a link before the first write, as hg's vfs does).

import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineWorkerHost } from '../../src/main/host/engine-worker-host';
import { cleanStaleTemporaries } from '../../src/main/host/engine-api';
import { HistoryStore } from '../../src/main/host/history-store';
import { JobLogStore } from '../../src/main/host/job-log-store';
import { JobRegistry } from '../../src/main/host/job-registry';
import { SOURCE_WORKER } from '../../src/main/host/source-worker';
import type { JobRequest } from '../../src/shared/jobs';
import { hgOrThrow as hg, sluice } from './cli-support';
import { hgSync, missing, prng, removeDir, skipNote, tempDirMaker } from '../support/env';

/** Every file under `repo/.hg` (relative path → sha256): what must not change in a clone's source. */
function hgDirDigest(repo: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (rel: string): void => {
    for (const e of readdirSync(join(repo, '.hg', rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(r);
      else
        out.set(
          r,
          createHash('sha256')
            .update(readFileSync(join(repo, '.hg', r)))
            .digest('hex'),
        );
    }
  };
  walk('');
  return out;
}

const nlink = (path: string): number => statSync(path).nlink;
const nodes = (repo: string): string => hg(['-R', repo, 'log', '-r', 'all()', '-T', '{node}\n']);

function expectVerifies(repo: string): void {
  const v = hgSync(['-R', repo, 'verify', '-q']);
  expect(v.stderr, `hg verify ${repo}`).toBe('');
  expect(v.status, `hg verify ${repo}`).toBe(0);
}

/** Bytes that do not compress: a filelog's size on disk follows its text's. */
function noise(seed: number, bytes: number): Buffer {
  const next = prng(seed);
  return Buffer.from(Array.from({ length: bytes }, () => Math.floor(next() * 256)));
}

describe.skipIf(missing('hg'))(
  `writing into a hard-linked local clone leaves its source unchanged${skipNote('hg')}`,
  () => {
    const tempDir = tempDirMaker('hardlinks');
    let work = '';
    let up = '';
    let bundle = '';
    let bundleNone = '';
    let registryDir = '';
    let registry: JobRegistry;
    /** the changesets (and phases) of `up`, which the pulling clones end with */
    let upNodes = '';
    let cases = 0;

    beforeAll(() => {
      work = tempDir('repos');
      up = join(work, 'up');
      hg(['init', up]);
      // big.bin's filelog stays inline (< 128 KiB) up to rev 2, and is split by rev 3: a pull
      // appends to it and converts it to .i + .d in the clone
      const files: [string, Buffer][][] = [
        [
          ['f.txt', Buffer.from('one\n')],
          ['big.bin', noise(1, 90_000)],
        ],
        [['f.txt', Buffer.from('one\ntwo\n')]],
        [['d/g.txt', Buffer.from('g\n')]],
        [['big.bin', Buffer.concat([noise(1, 90_000), noise(2, 60_000)])]],
        [
          ['f.txt', Buffer.from('one\ntwo\nthree\n')],
          ['d/new.txt', Buffer.from('new\n')],
        ],
      ];
      for (const [i, changes] of files.entries()) {
        for (const [name, data] of changes) {
          mkdirSync(join(up, name, '..'), { recursive: true });
          writeFileSync(join(up, name), data);
        }
        hg(['commit', '-q', '-A', '-m', `commit ${i}`, '-d', `${i} 0`], up);
      }
      hg(['bookmark', '-q', '-r', '4', 'mark'], up);
      upNodes = nodes(up);
      bundle = join(work, 'rest.hg');
      hg(['-R', up, 'bundle', '-q', '--base', '2', '-r', 'tip', bundle]);
      bundleNone = join(work, 'rest-none.hg');
      hg(['-R', up, 'bundle', '-q', '-t', 'none-v2', '--base', '2', '-r', 'tip', bundleNone]);

      registryDir = tempDir('registry');
      registry = new JobRegistry({
        createWorker: (start) => new EngineWorkerHost(start, SOURCE_WORKER),
        history: new HistoryStore(join(registryDir, 'history.json')),
        logs: new JobLogStore(join(registryDir, 'logs')),
        cleanStaleTemporaries,
        batchIntervalMs: 10,
      });
    });
    afterAll(async () => {
      await registry?.dispose();
      if (work) removeDir(work);
      if (registryDir) removeDir(registryDir);
    });

    /**
     * A source (its own history: a pull-clone of up's first three changesets, nothing shared with
     * up) and `hg clone` of it, whose store is hard-linked to the source's: checked, so no test
     * here passes because there was no link to break.
     */
    function linkedClone(label: string, workingCopy: boolean): { src: string; clone: string } {
      const src = join(work, `${label}-src`);
      const clone = join(work, `${label}-clone`);
      hg(['clone', '-q', '-r', '2', up, src]);
      hg(['clone', '-q', ...(workingCopy ? [] : ['-U']), src, clone]);
      for (const f of ['00changelog.i', '00manifest.i', 'data/big.bin.i', 'data/f.txt.i'])
        expect(nlink(join(clone, '.hg', 'store', f)), f).toBe(2);
      return { src, clone };
    }

    /** The library's job through the registry and a real engine worker, to its end. */
    async function libraryJob(request: JobRequest): Promise<string> {
      const { jobId } = registry.start(request);
      await registry.whenEnded(jobId);
      return registry.list().find((j) => j.jobId === jobId)!.state;
    }

    type Command = (clone: string) => Promise<void>;
    const pulls: [string, Command][] = [
      ['sluice pull', async (clone) => expect((await sluice(['pull', clone, up])).code).toBe(0)],
      ['sluice pull -u', async (clone) => expect((await sluice(['pull', clone, up, '-u'])).code).toBe(0)],
      [
        'sluice apply BUNDLE (a changegroup into the existing repository)',
        async (clone) => expect((await sluice(['apply', bundle, clone])).code).toBe(0),
      ],
      [
        "the library's Pull",
        async (clone) => expect(await libraryJob({ kind: 'pull', repo: clone, source: up })).toBe('done'),
      ],
    ];
    const updates: [string, Command][] = [
      ['sluice update', async (clone) => expect((await sluice(['update', clone, '1'])).code).toBe(0)],
      [
        "the library's Update",
        async (clone) => expect(await libraryJob({ kind: 'update', repo: clone, rev: '1' })).toBe('done'),
      ],
    ];

    for (const workingCopy of [true, false]) {
      const shape = workingCopy ? 'with a working copy' : '-U';
      it.each(pulls)(
        `%s into hg clone (${shape}): the source's .hg byte for byte as it was`,
        async (_name, run) => {
          const { src, clone } = linkedClone(`case${++cases}`, workingCopy);
          const before = hgDirDigest(src);
          await run(clone);
          expect(hgDirDigest(src)).toEqual(before);
          expect(nodes(clone)).toBe(upNodes);
          expect(nlink(join(src, '.hg', 'store', '00changelog.i'))).toBe(1);
          // the inline filelog the pull made too large was split in the clone only
          expect(existsSync(join(clone, '.hg', 'store', 'data', 'big.bin.d'))).toBe(true);
          expect(existsSync(join(src, '.hg', 'store', 'data', 'big.bin.d'))).toBe(false);
          expectVerifies(src);
          expectVerifies(clone);
        },
      );

      it.each(updates)(
        `%s of hg clone (${shape}): the source's .hg byte for byte as it was`,
        async (_name, run) => {
          const { src, clone } = linkedClone(`case${++cases}`, workingCopy);
          const before = hgDirDigest(src);
          await run(clone);
          expect(hgDirDigest(src)).toEqual(before);
          expect(hg(['-R', clone, 'log', '-r', '.', '-T', '{rev}'])).toBe('1');
          expectVerifies(src);
          expectVerifies(clone);
        },
      );
    }

    // shares are the intended exception: a share's store is its source's, written under the
    // source's store lock, as hg does
    it.each(['yes', 'no'])(
      'sluice pull into hg share (format.use-share-safe=%s): the source receives the changesets, both verify',
      async (safe) => {
        const src = join(work, `share-${safe}-src`);
        const share = join(work, `share-${safe}`);
        hg(['--config', `format.use-share-safe=${safe}`, 'clone', '-q', '-r', '2', up, src]);
        hg([
          '--config',
          'extensions.share=',
          '--config',
          `format.use-share-safe=${safe}`,
          'share',
          '-q',
          src,
          share,
        ]);
        expect(existsSync(join(share, '.hg', 'store'))).toBe(false);
        const requires = readFileSync(join(share, '.hg', 'requires'), 'latin1').split('\n');
        expect(requires.includes('share-safe')).toBe(safe === 'yes');
        expect(requires).toContain('shared');
        const r = await sluice(['pull', share, up]);
        expect(r.stderr).toBe('');
        expect(r.code).toBe(0);
        expect(nodes(src)).toBe(upNodes);
        expect(nodes(share)).toBe(upNodes);
        expect(existsSync(join(share, '.hg', 'store'))).toBe(false);
        expect(existsSync(join(src, '.hg', 'store', 'lock'))).toBe(false);
        expectVerifies(src);
        expectVerifies(share);
      },
    );

    it('an apply that fails mid-changegroup leaves the source unchanged and the clone byte for byte as before', async () => {
      const { src, clone } = linkedClone('abort', true);
      const srcBefore = hgDirDigest(src);
      const cloneBefore = hgDirDigest(clone);
      // cut inside the filelogs: the manifest has been appended to by then (truncateSync on a
      // scratch copy of the bundle, not on a repository file)
      const cut = join(work, 'cut.hg');
      writeFileSync(cut, readFileSync(bundleNone));
      truncateSync(cut, Math.floor(statSync(cut).size * 0.8));
      const r = await sluice(['apply', cut, clone]);
      expect(r.code).not.toBe(0);
      expect(hgDirDigest(src)).toEqual(srcBefore);
      // the manifest was appended to before the cut: to the clone's own copy, truncated back
      expect(nlink(join(clone, '.hg', 'store', '00manifest.i'))).toBe(1);
      const after = hgDirDigest(clone);
      expect(after).toEqual(cloneBefore);
      expectVerifies(src);
      expectVerifies(clone);
    });
  },
);
