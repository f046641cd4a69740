// Interop of `sluice update` with real hg 6.3.2: the working copy Sluice checks out equals the one
// `hg clone` / `hg update` writes, file for file (contents, symlink targets, exec bits), and hg
// agrees with what Sluice recorded: `hg status` is empty, `hg debugstate --no-dates` lists the
// same entries (mode, size, name; whether an mtime is set depends on the second the files were
// written in), `hg id -i` and `hg branch` agree, `hg verify` passes. Hostile repositories are
// made with hg's own commit machinery (memctx), which stores any path; Sluice must refuse them
// before writing anything. Large files streamed into place are in checkout-streamed.test.ts.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workingCopyTree } from './working-copy-support';
import { expectSameAsHg, refusal, update } from './checkout-support';
import { updateWorkingCopy } from '../../src/main/engine/operations/update/update';
import { hg } from './changegroup-support';
import { runJob } from '../../src/main/engine/job/run-job';
import { startHgServe } from './wire-support';
import { SluiceError } from '../../src/main/engine/errors';
import { JobContext } from '../../src/main/engine/context/job-context';
import { HG_PYTHON, MAKE_CORPUS, missing, removeDir, skipNote, tempDirMaker } from '../support/env';
import type { SluiceEvent } from '../../src/shared/events';

// test/support/env.ts's probes: locally a missing tool skips (named in the title), under CI=true it fails
const noHg = missing('hg');
const noHgPython = missing('hg', 'hg-python');
const noCorpus = missing('hg', 'make-corpus');
const skipNoHg = skipNote('hg');
const skipNoPy = skipNote('hg', 'hg-python');
const skipNoCorpus = skipNote('hg', 'make-corpus');

const makeTempDir = tempDirMaker('checkout');
let work: string;
beforeAll(() => {
  work = makeTempDir('interop');
});
afterAll(() => removeDir(work));

/** Commits files with hg's memctx (any path, flags 'x'/'l'); returns the node. */
function memcommit(
  repo: string,
  files: [path: string, data: string, flags: string][],
  parent?: string,
): string {
  const script = `
import sys, json
from mercurial import ui as uimod, hg, context, node as nodemod
spec = json.loads(sys.stdin.read())
repo = hg.repository(uimod.ui.load(), sys.argv[1].encode())
files = {p.encode('utf-8'): (d.encode('utf-8'), f) for p, d, f in spec['files']}
def fctx(repo_, mctx, path):
    if files[path][0] == b'\\0REMOVED':
        return None
    d, f = files[path]
    return context.memfilectx(repo_, mctx, path, d, islink='l' in f, isexec='x' in f)
p1 = nodemod.bin(spec['parent']) if spec['parent'] else repo.nullid
with repo.wlock(), repo.lock():
    mctx = context.memctx(repo, (p1, repo.nullid), b'commit', sorted(files), fctx, user=b'test', date=(0, 0))
    print(mctx.commit().hex())
`;
  const r = spawnSync(HG_PYTHON, ['-c', script, repo], {
    input: JSON.stringify({ files, parent: parent ?? null }),
    encoding: 'utf8',
    env: { ...process.env, HGPLAIN: '1', HGRCPATH: '' },
  });
  if (r.status !== 0) throw new Error(r.stderr);
  return r.stdout.trim();
}

describe('sluice update matches hg on the tiny corpus' + skipNoCorpus, () => {
  it.skipIf(noCorpus)(
    'from an hg clone -U: files, status, debugstate, id, branch, verify',
    async () => {
      const src = join(work, 'tiny');
      const r = spawnSync(MAKE_CORPUS, ['--preset', 'tiny', src], { encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
      hg(['clone', '-q', '-U', src, join(work, 'tiny-ours')]);
      hg(['clone', '-q', src, join(work, 'tiny-hg')]);
      const events = await update(join(work, 'tiny-ours'));
      expectSameAsHg(join(work, 'tiny-ours'), join(work, 'tiny-hg'));
      expect(events.some((e) => e.type === 'phase' && e.phase === 'checkout')).toBe(true);
      const done = events
        .filter((e) => e.type === 'files')
        .flatMap((e) => (e.type === 'files' ? e.entries : []));
      expect(done.length).toBe(1025);
      expect(done.every((f) => f.vfs === 'w')).toBe(true);
      expect(events.some((e) => e.type === 'log' && e.message.startsWith('1025 files updated'))).toBe(true);
    },
    180_000,
  );
});

describe('clone and apply check out before DEST appears' + skipNoCorpus, () => {
  it.skipIf(noCorpus)(
    'sluice clone (job default), -u REV, -U; sluice apply --update',
    async () => {
      const src = join(work, 'tiny');
      if (!existsSync(src)) expect(spawnSync(MAKE_CORPUS, ['--preset', 'tiny', src]).status).toBe(0);
      const theirs = join(work, 'tiny-hg-clone');
      if (!existsSync(theirs)) hg(['clone', '-q', src, theirs]);
      const server = await startHgServe(src);
      try {
        const events: SluiceEvent[] = [];
        const ctx = new JobContext({ sink: (e) => events.push(e) });
        const dest = join(work, 'tiny-sluice-clone');
        await runJob({ kind: 'clone', url: server.url, dest }, ctx);
        expectSameAsHg(dest, theirs);
        const phases = events
          .filter((e) => e.type === 'phase')
          .map((e) => (e.type === 'phase' ? e.phase : ''));
        expect(phases.indexOf('checkout')).toBeGreaterThan(phases.indexOf('write'));
        expect(events.some((e) => e.type === 'log' && e.message === 'updating to branch default')).toBe(true);

        const at0 = join(work, 'tiny-sluice-clone-r0');
        await runJob({ kind: 'clone', url: server.url, dest: at0, updateRev: '0' }, new JobContext());
        expect(readdirSync(at0).sort()).toEqual(['.hg', 'foo']);
        expect(hg(['id', '-n'], at0).trim()).toBe('0');

        const bare = join(work, 'tiny-sluice-clone-U');
        await runJob({ kind: 'clone', url: server.url, dest: bare, update: false }, new JobContext());
        expect(readdirSync(bare)).toEqual(['.hg']);
      } finally {
        server.stop();
      }
      const bundle = join(work, 'tiny.hg');
      hg(['-R', src, 'debugcreatestreamclonebundle', '-q', bundle]);
      const applied = join(work, 'tiny-applied');
      await runJob({ kind: 'apply', bundlePath: bundle, dest: applied, update: true }, new JobContext());
      expectSameAsHg(applied, theirs);
    },
    240_000,
  );

  it.skipIf(noCorpus)(
    'a checkout that fails inside an apply leaves no DEST',
    async () => {
      const src = join(work, 'tiny');
      if (!existsSync(src)) expect(spawnSync(MAKE_CORPUS, ['--preset', 'tiny', src]).status).toBe(0);
      const bundle = join(work, 'tiny-fail.hg');
      hg(['-R', src, 'debugcreatestreamclonebundle', '-q', bundle]);
      const dest = join(work, 'tiny-applied-fail');
      await expect(
        runJob(
          { kind: 'apply', bundlePath: bundle, dest, update: true, updateRev: 'no-such-rev' },
          new JobContext(),
        ),
      ).rejects.toThrow(/unknown revision 'no-such-rev'/);
      expect(existsSync(dest)).toBe(false);
      expect(readdirSync(work).filter((n) => n.includes('sluice-tmp'))).toEqual([]);
    },
    120_000,
  );
});

describe.skipIf(noHg)(
  'a crafted repository: exec, symlinks, empty, deep and non-ASCII names, rename and removal' + skipNoHg,
  () => {
    let src: string;
    beforeAll(() => {
      src = join(work, 'crafted');
      hg(['init', src]);
      const deep = 'd1/d2/d3/d4/d5/d6/d7/d8/deep.txt';
      mkdirSync(join(src, 'd1/d2/d3/d4/d5/d6/d7/d8'), { recursive: true });
      mkdirSync(join(src, 'unicode'));
      writeFileSync(join(src, deep), 'deep\n');
      writeFileSync(join(src, 'run.sh'), '#!/bin/sh\necho hi\n');
      chmodSync(join(src, 'run.sh'), 0o755);
      writeFileSync(join(src, 'empty'), '');
      // filelogs past the reader's first read buffer (256 KiB) and past its whole-file limit (4 MiB:
      // read through the revlog's windows); incompressible, so the data file is that large too
      mkdirSync(join(src, 'big'));
      const random = Buffer.alloc(5 << 20);
      for (let i = 0, h = Buffer.alloc(0); i < random.length; i += 64) {
        h = createHash('sha512').update(h).update(String(i)).digest();
        h.copy(random, i);
      }
      writeFileSync(join(src, 'big', 'mid.bin'), random.subarray(0, 300 << 10));
      writeFileSync(join(src, 'big', 'large.bin'), random);
      writeFileSync(join(src, 'unicode', 'ünïcödé 日本.txt'), 'non-ascii\n');
      writeFileSync(join(src, 'gone.txt'), 'removed in rev 1\n');
      writeFileSync(join(src, 'old-name.txt'), 'renamed in rev 1\n');
      symlinkSync('run.sh', join(src, 'link-to-run'));
      symlinkSync('d1/d2', join(src, 'dirlink'));
      symlinkSync('/nonexistent/target', join(src, 'dangling'));
      hg(['commit', '-q', '-A', '-m', 'rev 0', '-d', '0 0'], src);
      hg(['rm', '-q', 'gone.txt'], src);
      hg(['mv', '-q', 'old-name.txt', 'unicode/new-name.txt'], src);
      writeFileSync(join(src, 'run.sh'), '#!/bin/sh\necho changed\n');
      chmodSync(join(src, 'empty'), 0o755);
      hg(['commit', '-q', '-m', 'rev 1', '-d', '1 0'], src);
      hg(['branch', '-q', 'stable'], src);
      writeFileSync(join(src, 'stable.txt'), 'on stable\n');
      hg(['commit', '-q', '-A', '-m', 'rev 2 on stable', '-d', '2 0'], src);
      hg(['update', '-q', '1'], src);
      hg(['bookmark', 'feature', '-r', '0'], src);
      hg(['tag', '-q', '-r', '0', 'v0.1', '-d', '3 0'], src); // rev 3 on default: the tip of default
    });

    it.skipIf(noHg)(
      'update from null equals hg clone, then between revisions equals hg update',
      async () => {
        const ours = join(work, 'crafted-ours');
        const theirs = join(work, 'crafted-hg');
        hg(['clone', '-q', '-U', src, ours]);
        hg(['clone', '-q', src, theirs]);
        await update(ours);
        expectSameAsHg(ours, theirs);
        expect(workingCopyTree(ours, 'utf8').get('link-to-run')).toBe('link -> run.sh');
        expect(workingCopyTree(ours, 'utf8').get('run.sh')).toMatch(/^file x /);

        for (const rev of ['0', 'stable', 'v0.1', 'null']) {
          await update(ours, { rev });
          hg(['update', '-q', rev], theirs);
          expectSameAsHg(ours, theirs);
        }
        // gone directories are removed with their last file, as hg does
        await update(ours, { rev: '0' });
        hg(['update', '-q', '0'], theirs);
        await update(ours, { rev: '1' });
        hg(['update', '-q', '1'], theirs);
        expectSameAsHg(ours, theirs);
        expect(existsSync(join(ours, 'gone.txt'))).toBe(false);
        expect(hg(['log', '-r', '.', '-T', '{rev}'], ours)).toBe('1');
      },
      240_000,
    );

    it.skipIf(noHg)('an active bookmark is recorded as hg update BOOKMARK does', async () => {
      const ours = join(work, 'crafted-bm');
      hg(['clone', '-q', '-U', src, ours]);
      await update(ours, { rev: 'feature' });
      expect(hg(['bookmarks'], ours)).toMatch(/^ \* feature /);
      expect(hg(['id', '-i'], ours).trim()).toBe(hg(['id', '-i', '-r', '0'], src).trim());
    });

    it.skipIf(noHg)(
      'names the changes it refuses over as hg status lists them: the first 20, then a count',
      async () => {
        const repo = join(work, 'many-dirty');
        hg(['init', repo]);
        for (let i = 0; i < 30; i++)
          writeFileSync(join(repo, `f${String(i).padStart(2, '0')}.txt`), `${i}\n`);
        hg(['commit', '-q', '-A', '-m', 'thirty'], repo);
        writeFileSync(join(repo, 'later.txt'), 'later\n');
        hg(['commit', '-q', '-A', '-m', 'one more'], repo);
        for (let i = 5; i < 27; i++)
          writeFileSync(join(repo, `f${String(i).padStart(2, '0')}.txt`), `changed ${i}\n`);
        writeFileSync(join(repo, 'new.txt'), 'new\n');
        hg(['add', '-q', 'new.txt'], repo);
        hg(['remove', '-q', 'f00.txt'], repo);
        rmSync(join(repo, 'f01.txt'));
        const lines = hg(['status', '-mard'], repo).split('\n').filter(Boolean);
        expect(lines).toHaveLength(25);
        const e = await refusal(repo, { rev: '0' });
        expect(e.code).toBe('USAGE');
        expect(e.message).toBe(
          `uncommitted changes in 25 files (${lines.slice(0, 20).join(', ')}, and 5 more); commit or revert them first`,
        );
        expect(e.details).toMatchObject({ count: 25 });
        expect(hg(['status', '-mard'], repo).split('\n').filter(Boolean)).toEqual(lines);
      },
    );

    it.skipIf(noHg)(
      'refuses to update over local changes, leaving files and dirstate as they were',
      async () => {
        const ours = join(work, 'crafted-dirty');
        hg(['clone', '-q', '-U', src, ours]);
        await update(ours, { rev: '1' });
        const dirstate = readFileSync(join(ours, '.hg', 'dirstate'));
        writeFileSync(join(ours, 'empty'), 'now it is not');
        const e = await refusal(ours, { rev: '0' });
        expect(e.message).toMatch(/uncommitted changes.*empty/);
        expect(readFileSync(join(ours, '.hg', 'dirstate'))).toEqual(dirstate);
        expect(readFileSync(join(ours, 'empty'), 'utf8')).toBe('now it is not');
        expect(existsSync(join(ours, 'gone.txt'))).toBe(false);
        // same size, same second: only a content lookup can tell
        hg(['revert', '-q', '--all', '--no-backup'], ours);
        writeFileSync(join(ours, 'run.sh'), '#!/bin/sh\necho CHANGED\n');
        await refusal(ours, { rev: '0' });
        hg(['revert', '-q', '--all', '--no-backup'], ours);
        await update(ours, { rev: '0' });
        expect(hg(['status'], ours)).toBe('');
      },
    );

    it.skipIf(noHg)(
      'an untracked file in the way refuses a checkout from null and leaves nothing new',
      async () => {
        const ours = join(work, 'crafted-untracked');
        hg(['clone', '-q', '-U', src, ours]);
        writeFileSync(join(ours, 'stable.txt'), 'mine');
        const e = await refusal(ours, { rev: 'stable' });
        expect(e.message).toContain("'stable.txt'");
        expect(readdirSync(ours).sort()).toEqual(['.hg', 'stable.txt']);
        expect(readFileSync(join(ours, '.hg', 'dirstate'))).toEqual(Buffer.alloc(40));
      },
    );

    it.skipIf(noHg)(
      'worker threads write the same checkout as the main thread alone',
      async () => {
        for (const workers of [0, 1, 2]) {
          const ours = join(work, `crafted-workers-${workers}`);
          const theirs = join(work, 'crafted-hg-workers');
          if (!existsSync(theirs)) hg(['clone', '-q', src, theirs]);
          hg(['clone', '-q', '-U', src, ours]);
          const events = await update(ours, { workers, mainShare: workers === 0 });
          expectSameAsHg(ours, theirs);
          const files = events.flatMap((e) => (e.type === 'files' ? e.entries : []));
          expect(files.map((f) => f.name).sort()).toEqual([...workingCopyTree(theirs, 'utf8').keys()].sort());
        }
        // threads started before the manifest is read (sized by the tip's manifest) that the batch
        // does not need are stopped: here all of them, the null revision has no file
        const none = join(work, 'crafted-workers-null');
        hg(['clone', '-q', '-U', src, none]);
        const events = await update(none, { rev: 'null', workers: 3 });
        expect(readdirSync(none)).toEqual(['.hg']);
        expect(events.some((e) => e.type === 'log' && /^0 files updated/.test(e.message))).toBe(true);
        expect(hg(['status'], none)).toBe('');
      },
      180_000,
    ); // seven checkouts against hg: ~14 s alone, over a minute on a loaded machine

    it.skipIf(noHg)(
      'threads started for a larger estimate than the batch are stopped, the rest write it',
      async () => {
        // long paths make the estimate from the manifest's size (3) larger than the batch (2): the
        // thread started for the third is stopped and the other two write
        const long = join(work, 'crafted-workers-long');
        hg(['init', long]);
        for (const c of 'ab') writeFileSync(join(long, c.repeat(150)), `${c}\n`);
        hg(['commit', '-q', '-A', '-m', 'long names'], long);
        const longOurs = join(work, 'crafted-workers-long-clone');
        hg(['clone', '-q', '-U', long, longOurs]);
        const longEvents = await update(longOurs, { workers: 3, mainShare: false });
        const longTheirs = join(work, 'crafted-workers-long-hg');
        hg(['clone', '-q', long, longTheirs]);
        expectSameAsHg(longOurs, longTheirs);
        const line = longEvents.find((e) => e.type === 'log' && e.message.startsWith('checkout: '));
        expect(line?.type === 'log' && line.message).toMatch(
          /^checkout: 0 files written on the main thread.*, \d+.* \+ \d+[^+]* on workers$/,
        );
      },
    );

    it.skipIf(noHg)(
      'a corrupt filelog fails the checkout on any thread, leaving no new file and the dirstate as it was',
      async () => {
        for (const workers of [0, 2]) {
          const ours = join(work, `crafted-corrupt-${workers}`);
          hg(['clone', '-q', '-U', '--config', 'format.usestore=true', src, ours]);
          // flip the last byte of run.sh's stored text: its node check fails
          const log = join(ours, '.hg', 'store', 'data', 'run.sh.i');
          const bytes = readFileSync(log);
          bytes[bytes.length - 1]! ^= 0xff;
          unlinkSync(log); // the clone hardlinks the source's store: write a file of its own
          writeFileSync(log, bytes);
          const e = await refusal(ours, { workers, mainShare: workers === 0 });
          expect(e.code).toBe('REVLOG');
          expect(readdirSync(ours)).toEqual(['.hg']);
          expect(readFileSync(join(ours, '.hg', 'dirstate'))).toEqual(Buffer.alloc(40));
        }
      },
    );

    it.skipIf(noHg)('a cancel as the checkout starts leaves no new file, on any thread', async () => {
      for (const workers of [0, 2]) {
        const ours = join(work, `crafted-cancel-${workers}`);
        hg(['clone', '-q', '-U', src, ours]);
        const ac = new AbortController();
        const ctx = new JobContext({
          signal: ac.signal,
          sink: (ev) => {
            if (ev.type === 'phase' && ev.phase === 'checkout') ac.abort();
          },
        });
        const e = await updateWorkingCopy(ours, { workers, mainShare: workers === 0 }, ctx).catch(
          (x: unknown) => x,
        );
        expect(e).toBeInstanceOf(SluiceError);
        expect((e as SluiceError).code).toBe('CANCELLED');
        expect(readdirSync(ours)).toEqual(['.hg']);
        expect(readFileSync(join(ours, '.hg', 'dirstate'))).toEqual(Buffer.alloc(40));
      }
    });

    it.skipIf(noHg)(
      'writes plain files holding the target where symlinks cannot be made (hg fallback)',
      async () => {
        const ours = join(work, 'crafted-nolinks');
        hg(['clone', '-q', '-U', src, ours]);
        await update(ours, { rev: '0', symlinks: false });
        expect(readFileSync(join(ours, 'link-to-run'), 'utf8')).toBe('run.sh');
        expect(lstatSync(join(ours, 'dangling')).isFile()).toBe(true);
      },
    );
  },
);

describe('dirstate-v2 when the repository requires it' + skipNoHg, () => {
  // hg 6.3.2 without its Rust extensions reads dirstate-v2 only on its slow path
  const V2 = ['--config', 'storage.dirstate-v2.slow-path=allow', '--config', 'format.use-dirstate-v2=true'];
  it.skipIf(noHg)(
    'update from null and between revisions: hg reads what Sluice wrote',
    async () => {
      const src = join(work, 'v2-src');
      hg([...V2, 'init', src]);
      mkdirSync(join(src, 'd', 'e'), { recursive: true });
      writeFileSync(join(src, 'd', 'e', 'f'), 'a\n');
      writeFileSync(join(src, 'top'), 'b\n');
      chmodSync(join(src, 'top'), 0o755);
      symlinkSync('top', join(src, 'lnk'));
      hg([...V2, 'commit', '-q', '-A', '-m', '0', '-d', '0 0'], src);
      hg([...V2, 'mv', '-q', 'top', 'top2'], src);
      writeFileSync(join(src, 'd', 'g'), 'c\n');
      hg([...V2, 'add', '-q', 'd/g'], src);
      hg([...V2, 'commit', '-q', '-m', '1', '-d', '1 0'], src);
      const ours = join(work, 'v2-ours');
      const theirs = join(work, 'v2-hg');
      hg([...V2, 'clone', '-q', '-U', src, ours]);
      hg([...V2, 'clone', '-q', src, theirs]);
      expect(readFileSync(join(ours, '.hg', 'requires'), 'latin1')).toContain('dirstate-v2');
      const v2state = (repo: string): string[] =>
        hg([...V2, 'debugstate', '--no-dates'], repo)
          .split('\n')
          .filter(Boolean)
          .map((l) =>
            l
              .trim()
              .split(/\s+/)
              .filter((_, i) => i !== 3)
              .join(' '),
          );
      await update(ours);
      expect(
        readFileSync(join(ours, '.hg', 'dirstate'))
          .subarray(0, 12)
          .toString('latin1'),
      ).toBe('dirstate-v2\n');
      expect(v2state(ours)).toEqual(v2state(theirs));
      expect(workingCopyTree(ours, 'utf8')).toEqual(workingCopyTree(theirs, 'utf8'));
      expect(hg([...V2, 'status'], ours)).toBe('');
      expect(hg([...V2, 'id', '-i'], ours)).toBe(hg([...V2, 'id', '-i'], theirs));
      await update(ours, { rev: '0' });
      hg([...V2, 'update', '-q', '0'], theirs);
      expect(v2state(ours)).toEqual(v2state(theirs));
      expect(hg([...V2, 'status'], ours)).toBe('');
      // one data file: the previous one is removed when the docket points to the new one
      expect(readdirSync(join(ours, '.hg')).filter((n) => n.startsWith('dirstate.')).length).toBe(1);
      writeFileSync(join(ours, 'top'), 'changed\n');
      expect((await refusal(ours, { rev: '1' })).message).toMatch(/uncommitted changes/);
    },
    120_000,
  );
});

describe('hostile repositories are refused before anything is written' + skipNoPy, () => {
  const cases: [string, [string, string, string][]][] = [
    ['a parent-directory component', [['../escaped', 'x', '']]],
    ['.hg/hgrc from the manifest', [['.hg/hgrc', '[hooks]\nupdate = touch /tmp/pwned\n', '']]],
    ['.HG in another case', [['.HG/hgrc', 'x', '']]],
    ['a nested .hg', [['sub/.hg/hgrc', 'x', '']]],
    ['a Windows short name of .hg', [['HG~1/hgrc', 'x', '']]],
    ['.hg. (Windows drops the dot)', [['.hg./hgrc', 'x', '']]],
    [
      'a path through a symlink in the manifest',
      [
        ['link', '/tmp', 'l'],
        ['link/x', 'x', ''],
      ],
    ],
    [
      'a file that is also a directory',
      [
        ['a', 'x', ''],
        ['a/b', 'y', ''],
      ],
    ],
  ];
  for (const [what, files] of cases) {
    it.skipIf(noHgPython)(what, async () => {
      const dir = makeTempDir('hostile');
      try {
        const src = join(dir, 'src');
        hg(['init', src]);
        memcommit(src, [['aaa-first', 'harmless\n', ''], ...files, ['zzz-last', 'harmless\n', '']]);
        const repo = join(dir, 'repo');
        hg(['clone', '-q', '-U', src, repo]);
        const hgBefore = readdirSync(join(repo, '.hg')).sort();
        const e = await refusal(repo);
        expect(e.code).toBe('UNSAFE_PATH');
        expect(readdirSync(repo)).toEqual(['.hg']);
        expect(readdirSync(join(repo, '.hg')).sort()).toEqual(hgBefore);
        expect(readdirSync(dir).sort()).toEqual(['repo', 'src']);
      } finally {
        removeDir(dir);
      }
    });
  }

  it.skipIf(noHgPython)('Windows names and case collisions, by flag', async () => {
    const dir = makeTempDir('hostile');
    try {
      const src = join(dir, 'src');
      hg(['init', src]);
      memcommit(src, [
        ['aux.c', 'x', ''],
        ['Case/README', 'a', ''],
        ['Case/readme', 'b', ''],
      ]);
      const repo = join(dir, 'repo');
      hg(['clone', '-q', '-U', src, repo]);
      expect((await refusal(repo, { auditor: { windows: true, caseInsensitive: false } })).message).toContain(
        "filename contains 'aux', which is reserved on Windows",
      );
      expect((await refusal(repo, { auditor: { windows: false, caseInsensitive: true } })).message).toContain(
        'case-folding collision between Case/README and Case/readme',
      );
      expect(readdirSync(repo)).toEqual(['.hg']);
      await update(repo, { auditor: { windows: false, caseInsensitive: false } });
      expect(hg(['status'], repo)).toBe('');
    } finally {
      removeDir(dir);
    }
  });

  it.skipIf(noHgPython)(
    'between revisions: a symlink, then a directory of that name, then a file again (never written through, as hg)',
    async () => {
      const dir = makeTempDir('hostile');
      try {
        const src = join(dir, 'src');
        hg(['init', src]);
        const outside = join(dir, 'outside');
        mkdirSync(outside);
        const r0 = memcommit(src, [
          ['d', outside, 'l'],
          ['f', 'x', ''],
        ]);
        const r1 = memcommit(
          src,
          [
            ['d', '\0REMOVED', ''],
            ['d/x', 'inside\n', ''],
            ['f', 'x', ''],
          ],
          r0,
        );
        memcommit(
          src,
          [
            ['d/x', '\0REMOVED', ''],
            ['d', 'a file again\n', ''],
            ['f', 'x', ''],
          ],
          r1,
        );
        const repo = join(dir, 'repo');
        hg(['clone', '-q', '-U', src, repo]);
        for (const rev of ['0', '1', '2', '1', '0']) {
          await update(repo, { rev });
          expect(readdirSync(outside)).toEqual([]);
          expect(hg(['status'], repo)).toBe('');
          expect(hg(['id', '-n'], repo).trim()).toBe(rev);
        }
        // an untracked file inside the directory still refuses the file that would replace it
        await update(repo, { rev: '1' });
        writeFileSync(join(repo, 'd', 'untracked'), 'mine');
        expect((await refusal(repo, { rev: '2' })).code).toBe('DEST_EXISTS');
        expect(readFileSync(join(repo, 'd', 'x'), 'utf8')).toBe('inside\n');
        expect(hg(['id', '-n'], repo).trim()).toBe('1');
      } finally {
        removeDir(dir);
      }
    },
  );

  it.skipIf(noHgPython)('a symlink already on disk is not followed', async () => {
    const dir = makeTempDir('hostile');
    try {
      const src = join(dir, 'src');
      hg(['init', src]);
      memcommit(src, [
        ['evil/hgrc', 'x', ''],
        ['fine', 'y', ''],
      ]);
      const repo = join(dir, 'repo');
      hg(['clone', '-q', '-U', src, repo]);
      const outside = join(dir, 'outside');
      mkdirSync(outside);
      symlinkSync(outside, join(repo, 'evil'));
      const e = await refusal(repo);
      expect(e.message).toContain("traverses symbolic link 'evil'");
      expect(readdirSync(outside)).toEqual([]);
      expect(readdirSync(repo).sort()).toEqual(['.hg', 'evil']);
      expect(readFileSync(join(repo, '.hg', 'dirstate'))).toEqual(Buffer.alloc(40));
    } finally {
      removeDir(dir);
    }
  });
});
