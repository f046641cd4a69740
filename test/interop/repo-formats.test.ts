// Repositories as real hg 6.3.2 makes them in its other formats and with the content users have
// (tags, closed branches, odd names, long hashed paths, flag and type changes), through Sluice's
// user-facing paths: pull clone and pull from hg serve, apply of `hg bundle --all`, update, and
// hg's clone from sluice serve. Formats Sluice does not handle are refused, typed, before anything
// is written.

import {
  readFileSync,
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyChangegroupBundleFile } from '../../src/main/engine/operations/apply/apply-changegroup-bundle';
import { updateWorkingCopy } from '../../src/main/engine/operations/update/update';
import { SluiceError } from '../../src/main/engine/errors';
import { JobContext } from '../../src/main/engine/context/job-context';
import type { SluiceEvent } from '../../src/shared/events';
import { verifyRepository } from '../../src/main/engine/operations/verify/verify';
import { cloneFromUrl } from '../../src/main/engine/operations/clone/clone';
import { pullFromUrl } from '../../src/main/engine/operations/pull/pull';
import { startServer, type RunningServer } from '../../src/main/engine/operations/serve/http-server';
import { hg, treeHash, verifyOk } from './changegroup-support';
import { hgAsync, missing, removeDir, skipNote, startHgServe, tempDir, type HgServer } from './wire-support';

/** What must agree with hg's own clone: nodes, phases, branches (closed heads), bookmarks, tags. */
function logOf(repo: string): string {
  return hg(['log', '-T', '{node} {phase} {branch} {bookmarks} {tags}{if(extras.close," closed")}\n'], repo);
}

function expectLike(repo: string, ref: string): void {
  const v = verifyOk(repo);
  expect(v.ok, v.out).toBe(true);
  expect(logOf(repo)).toBe(logOf(ref));
}

describe.skipIf(missing('hg'))(`tags: the hgtagsfnodes part hg sends${skipNote('hg')}`, () => {
  let work = '';
  let src = '';
  let server: HgServer | undefined;
  beforeAll(async () => {
    work = tempDir('formats-tags');
    src = join(work, 'src');
    hg(['init', src]);
    writeFileSync(join(src, 'a'), 'a\n');
    hg(['commit', '-q', '-A', '-m', 'c0', '-d', '0 0'], src);
    hg(['tag', '-q', '-d', '1 0', 'v1'], src);
    writeFileSync(join(src, 'a'), 'b\n');
    hg(['commit', '-q', '-m', 'c2', '-d', '2 0'], src);
    // reading the tags fills .hg/cache/hgtagsfnodes1: from then on hg's getbundle and bundle
    // add the (mandatory) hgtagsfnodes part for the heads
    hg(['tags'], src);
    server = await startHgServe(src);
  }, 60_000);
  afterAll(() => {
    server?.stop();
    if (work) removeDir(work);
  });

  it('hg bundle --all (bundle2) applies into a new and an existing repository', async () => {
    const bundle = join(work, 'all.hg');
    hg(['bundle', '-q', '--all', '-t', 'none-v2', bundle], src);
    expect(hg(['debugbundle', '--all', bundle])).toContain('hgtagsfnodes');
    const fresh = join(work, 'apply-new');
    await applyChangegroupBundleFile(bundle, fresh, new JobContext());
    const ref = join(work, 'unbundle');
    hg(['init', ref]);
    hg(['unbundle', '-q', bundle], ref);
    expectLike(fresh, ref);
    const [old, oldRef] = ['apply-old', 'unbundle-old'].map((n) => join(work, n));
    for (const r of [old, oldRef]) hg(['clone', '-q', '-U', '-r', '0', src, r]);
    await applyChangegroupBundleFile(bundle, old, new JobContext());
    hg(['unbundle', '-q', bundle], oldRef);
    expectLike(old, oldRef);
  }, 60_000);

  it('clone --pull and pull from hg serve', async () => {
    const ref = join(work, 'hg-clone');
    hg(['clone', '-q', '-U', '--pull', server!.url, ref]);
    const dest = join(work, 'pull-clone');
    await cloneFromUrl({ kind: 'clone', url: server!.url, dest, pull: true }, new JobContext());
    expectLike(dest, ref);
    const partial = join(work, 'partial');
    hg(['clone', '-q', '-U', '-r', '0', server!.url, partial]);
    await pullFromUrl({ kind: 'pull', repo: partial }, new JobContext());
    expectLike(partial, ref);
  }, 60_000);
});

/** The typed error of a refused operation (fails the test if it went through). */
async function refusal(p: Promise<unknown>): Promise<SluiceError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(SluiceError);
  return e as SluiceError;
}

describe.skipIf(missing('hg'))(
  `lfs and largefiles repositories are refused, naming the requirement, before anything is written${skipNote('hg')}`,
  () => {
    let work = '';
    const repos = { lfs: '', largefiles: '' };
    const EXT = {
      lfs: ['--config', 'extensions.lfs=', '--config', 'lfs.track=all()'],
      largefiles: ['--config', 'extensions.largefiles='],
    };
    let lfsServer: HgServer | undefined;
    beforeAll(async () => {
      work = tempDir('formats-ext');
      for (const kind of ['lfs', 'largefiles'] as const) {
        const r = join(work, kind);
        hg([...EXT[kind], 'init', r]);
        writeFileSync(join(r, 'big.bin'), 'large content\n');
        hg([...EXT[kind], 'add', '-q', ...(kind === 'largefiles' ? ['--large'] : []), 'big.bin'], r);
        hg([...EXT[kind], 'commit', '-q', '-m', 'c0', '-d', '0 0'], r);
        expect(hg(['debugrequirements'], r)).toContain(`${kind}\n`);
        repos[kind] = r;
      }
      lfsServer = await startHgServe(repos.lfs, ['extensions.lfs=']);
    }, 60_000);
    afterAll(() => {
      lfsServer?.stop();
      if (work) removeDir(work);
    });

    it('lfs: clone (stream and --pull) from hg serve and pull from it', async () => {
      for (const pull of [false, true]) {
        const dest = join(work, `clone-${pull}`);
        const e = await refusal(
          cloneFromUrl({ kind: 'clone', url: lfsServer!.url, dest, pull }, new JobContext()),
        );
        expect(e.code).toBe('UNSUPPORTED_REQUIREMENTS');
        expect(e.message).toContain('lfs');
        expect(existsSync(dest)).toBe(false);
        expect(readdirSync(work).filter((n) => n.includes('sluice-tmp'))).toEqual([]);
      }
      const plain = join(work, 'plain');
      hg(['init', plain]);
      const before = treeHash(plain);
      const e = await refusal(
        pullFromUrl({ kind: 'pull', repo: plain, source: lfsServer!.url }, new JobContext()),
      );
      expect(e.code).toBe('UNSUPPORTED_REQUIREMENTS');
      expect(treeHash(plain)).toBe(before);
    }, 60_000);

    it.each(['lfs', 'largefiles'] as const)(
      '%s: update, verify and serve',
      async (kind) => {
        const repo = repos[kind];
        hg(['update', '-q', 'null'], repo);
        const before = treeHash(repo);
        const u = await refusal(updateWorkingCopy(repo, {}, new JobContext()));
        expect(u.code).toBe('UNSUPPORTED_REQUIREMENTS');
        expect(u.message).toContain(kind);
        expect(treeHash(repo)).toBe(before);
        const s = await refusal(startServer({ repo }));
        expect(s.code).toBe('UNSUPPORTED_REQUIREMENTS');
        expect(s.message).toContain(kind);
        if (kind === 'lfs') {
          // largefiles' standins are plain revlog content that hg verify (without --large) checks alike
          const v = await refusal(verifyRepository(repo));
          expect(v.code).toBe('UNSUPPORTED_REQUIREMENTS');
          expect(v.message).toContain('lfs');
        }
      },
      60_000,
    );
  },
);

describe.skipIf(missing('hg'))(
  `copies in side data (format.exp-use-copies-side-data-changeset: exp-changelog-v2)${skipNote('hg')}`,
  () => {
    let work = '';
    let src = '';
    let server: HgServer | undefined;
    beforeAll(async () => {
      work = tempDir('formats-sidedata');
      src = join(work, 'src');
      hg(['init', '--config', 'format.exp-use-copies-side-data-changeset=yes', src]);
      writeFileSync(join(src, 'a'), 'a\n');
      hg(['commit', '-q', '-A', '-m', 'c0', '-d', '0 0'], src);
      hg(['copy', '-q', 'a', 'b'], src);
      hg(['commit', '-q', '-m', 'copy', '-d', '1 0'], src);
      expect(hg(['debugrequirements'], src)).toContain('exp-changelog-v2\n');
      server = await startHgServe(src);
    }, 60_000);
    afterAll(() => {
      server?.stop();
      if (work) removeDir(work);
    });

    it('its changegroups (marked exp-sidedata) apply and pull into a plain repository, copies kept', async () => {
      const bundle = join(work, 'all.hg');
      hg(['bundle', '-q', '--all', '-t', 'none-v2', bundle], src);
      const fresh = join(work, 'apply');
      await applyChangegroupBundleFile(bundle, fresh, new JobContext());
      const ref = join(work, 'unbundle');
      hg(['init', ref]);
      hg(['unbundle', '-q', bundle], ref);
      expectLike(fresh, ref);
      const hgClone = join(work, 'hg-clone');
      hg(['clone', '-q', '-U', '--pull', server!.url, hgClone]);
      const dest = join(work, 'pull-clone');
      await cloneFromUrl({ kind: 'clone', url: server!.url, dest, pull: true }, new JobContext());
      expectLike(dest, hgClone);
      expect(hg(['log', '-r', '1', '-T', '{file_copies}'], dest)).toBe('b (a)');
    }, 60_000);

    it('a stream clone, update, verify and serve are refused, naming the requirement', async () => {
      const dest = join(work, 'stream');
      const c = await refusal(cloneFromUrl({ kind: 'clone', url: server!.url, dest }, new JobContext()));
      expect(c.code).toBe('UNSUPPORTED_REQUIREMENTS');
      expect(c.message).toContain('exp-changelog-v2');
      expect(existsSync(dest)).toBe(false);
      for (const p of [
        updateWorkingCopy(src, { rev: '0' }, new JobContext()),
        verifyRepository(src),
        startServer({ repo: src }),
      ]) {
        const e = await refusal(p);
        expect(e.code).toBe('UNSUPPORTED_REQUIREMENTS');
        expect(e.message).toContain('exp-changelog-v2');
      }
    }, 60_000);
  },
);

describe.skipIf(missing('hg'))(`tree manifests (experimental.treemanifest)${skipNote('hg')}`, () => {
  let work = '';
  let src = '';
  let server: HgServer | undefined;
  beforeAll(async () => {
    work = tempDir('formats-tree');
    src = join(work, 'src');
    hg(['init', '--config', 'experimental.treemanifest=1', src]);
    mkdirSync(join(src, 'd', 'e'), { recursive: true });
    writeFileSync(join(src, 'd', 'e', 'a'), 'a\n');
    hg(['commit', '-q', '-A', '-m', 'c0', '-d', '0 0'], src);
    server = await startHgServe(src);
  }, 60_000);
  afterAll(() => {
    server?.stop();
    if (work) removeDir(work);
  });

  it('a stream clone with a working copy is refused before the transfer; without one (-U) it verifies', async () => {
    const dest = join(work, 'wc');
    const events: SluiceEvent[] = [];
    const ctx = new JobContext({ sink: (ev) => events.push(ev) });
    const e = await refusal(cloneFromUrl({ kind: 'clone', url: server!.url, dest, update: true }, ctx));
    // nothing streamed: the only phase is the connection
    expect(events.flatMap((ev) => (ev.type === 'phase' ? [ev.phase] : []))).toEqual(['connect']);
    expect(e.code).toBe('UNSUPPORTED_REQUIREMENTS');
    expect(e.message).toContain('treemanifest');
    expect(existsSync(dest)).toBe(false);
    expect(readdirSync(work).filter((n) => n.includes('sluice-tmp'))).toEqual([]);
    const bare = join(work, 'bare');
    await cloneFromUrl({ kind: 'clone', url: server!.url, dest: bare }, new JobContext());
    const ref = join(work, 'ref');
    hg(['clone', '-q', '-U', '--stream', server!.url, ref]);
    expectLike(bare, ref);
  }, 60_000);
});

describe.skipIf(missing('hg'))(`sluice serve of a tree-manifest repository${skipNote('hg')}`, () => {
  let work = '';
  let sluice: RunningServer | undefined;
  beforeAll(async () => {
    work = tempDir('formats-tree-serve');
    const src = join(work, 'src');
    hg(['init', '--config', 'experimental.treemanifest=1', src]);
    mkdirSync(join(src, 'd'));
    writeFileSync(join(src, 'd', 'a'), 'a\n');
    hg(['commit', '-q', '-A', '-m', 'c0', '-d', '0 0'], src);
    sluice = await startServer({ repo: src });
  }, 60_000);
  afterAll(async () => {
    await sluice?.close();
    if (work) removeDir(work);
  });

  it('hg clone --stream works; a pull clone is refused, naming treemanifest (it sent directories as files)', async () => {
    const stream = join(work, 'stream');
    const s = await hgAsync(['clone', '-q', '--stream', sluice!.url, stream]);
    expect(s.status, s.stderr).toBe(0);
    const v = verifyOk(stream);
    expect(v.ok, v.out).toBe(true);
    expect(hg(['status'], stream)).toBe('');
    const pull = join(work, 'pull');
    const p = await hgAsync([
      'clone',
      '-q',
      '--pull',
      '--config',
      'experimental.changegroup3=yes',
      sluice!.url,
      pull,
    ]);
    expect(p.status).not.toBe(0);
    expect(p.stderr).toContain('treemanifest');
    expect(existsSync(pull)).toBe(false);
  }, 60_000);
});

/**
 * The formats hg 6.3.2 still makes that Sluice reads and writes, each with the content that
 * exercises them: hashed long paths (`dh/`), names dotencode and fncache encode (upper case, `~`,
 * `:`, trailing dots and spaces, non-ASCII), an exec flip only, a symlink becoming a file, a file
 * becoming a directory, a tag, a closed named branch and a merge with a rename.
 */
const FORMATS: [string, string[]][] = [
  ['no generaldelta', ['format.usegeneraldelta=false', 'format.sparse-revlog=false']],
  ['no dotencode', ['format.dotencode=false']],
  ['no fncache', ['format.usefncache=false']],
  ['no share-safe', ['format.use-share-safe=false']],
  ['zlib', ['format.revlog-compression=zlib']],
  ['no store', ['format.usestore=false']],
];

function makeContentRepo(dir: string, config: string[]): void {
  hg(['init', ...config.flatMap((c) => ['--config', c]), dir]);
  const w = (name: string, data: string): void => {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), data);
  };
  let date = 0;
  const commit = (msg: string, ...extra: string[]): void => {
    hg(['commit', '-q', '-A', '-m', msg, '-d', `${date++} 0`, ...extra], dir);
  };
  w(`long/${'x'.repeat(70)}/${'Y'.repeat(70)}/${'Z'.repeat(40)}.TXT`, 'hashed\n');
  for (const n of ['Upper/MiXeD.txt', 'tilde~1.txt', 'co:lon.txt', 'trail./f', 'sp ace /f ', 'naïve/ünï.txt'])
    w(n, `${n}\n`);
  w('run.sh', '#!/bin/sh\n');
  w('thing', 'a file\n');
  symlinkSync('run.sh', join(dir, 'link'));
  commit('c0');
  chmodSync(join(dir, 'run.sh'), 0o755);
  commit('exec flip');
  rmSync(join(dir, 'link'));
  w('link', 'now a file\n');
  rmSync(join(dir, 'thing'));
  w('thing/inner.txt', 'now a directory\n');
  commit('symlink to file, file to directory');
  hg(['tag', '-q', '-d', `${date++} 0`, 'v1'], dir);
  hg(['branch', '-q', 'stable'], dir);
  w('s.txt', 's\n');
  commit('stable');
  commit('close stable', '--close-branch');
  hg(['update', '-q', 'default'], dir);
  hg(['rename', '-q', 'Upper/MiXeD.txt', 'Upper/moved.txt'], dir);
  commit('rename');
  hg(['update', '-q', '3'], dir);
  w('tilde~1.txt', 'side\n');
  commit('side');
  hg(['merge', '-q', '6'], dir); // the rename
  commit('merge');
  hg(['bookmark', '-q', '-r', '2', 'mark'], dir);
}

/** The working copy as content: type, exec bit, symlink target or bytes, for every path. */
function workingCopy(repo: string): string {
  return treeHash(repo, /^\.hg$/) + ' ' + hg(['status', '--all', '-T', '{status} {path}\n'], repo);
}

describe.skipIf(missing('hg'))(`repository formats hg 6.3.2 makes${skipNote('hg')}`, () => {
  let work = '';
  beforeAll(() => {
    work = tempDir('formats-matrix');
  });
  afterAll(() => work && removeDir(work));

  it.each(FORMATS)(
    '%s: clone from hg serve, update between revisions, apply of hg bundle --all, hg clone from sluice serve',
    async (label, config) => {
      const base = join(work, label.replace(/ /g, '-'));
      const src = join(base, 'src');
      makeContentRepo(src, config);
      const server = await startHgServe(src);
      try {
        const ref = join(base, 'ref');
        hg(['clone', '-q', server.url, ref]);
        const ours = join(base, 'ours');
        await cloneFromUrl({ kind: 'clone', url: server.url, dest: ours, update: true }, new JobContext());
        expectLike(ours, ref);
        expect(hg(['status'], ours)).toBe('');
        expect(workingCopy(ours)).toBe(workingCopy(ref));
        // between revisions once: the flips and type changes do not depend on the store format
        for (const rev of label === FORMATS[0]![0] ? ['1', 'stable', 'tip'] : []) {
          await updateWorkingCopy(ours, { rev }, new JobContext());
          hg(['update', '-q', '-C', rev], ref);
          expect(workingCopy(ours), rev).toBe(workingCopy(ref));
        }
      } finally {
        server.stop();
      }
      const bundle = join(base, 'all.hg');
      hg(['bundle', '-q', '--all', bundle], src);
      const applied = join(base, 'applied');
      await applyChangegroupBundleFile(bundle, applied, new JobContext());
      const unbundled = join(base, 'unbundled');
      hg(['init', unbundled]);
      hg(['unbundle', '-q', bundle], unbundled);
      expectLike(applied, unbundled);
      if (config.includes('format.usestore=false')) {
        const e = await refusal(startServer({ repo: src }));
        expect(e.code).toBe('UNSUPPORTED_REQUIREMENTS');
        expect(e.message).toContain('store');
        return;
      }
      const sluice = await startServer({ repo: src });
      try {
        const theirs = join(base, 'theirs');
        const r = await hgAsync(['clone', '-q', '--pull', sluice.url, theirs]);
        expect(r.status, r.stderr).toBe(0);
        expectLike(theirs, join(base, 'ref'));
      } finally {
        await sluice.close();
      }
    },
    120_000,
  );
});

describe.skipIf(missing('hg'))(`subrepositories${skipNote('hg')}`, () => {
  let work = '';
  beforeAll(() => {
    work = tempDir('formats-subrepo');
  });
  afterAll(() => work && removeDir(work));

  it('update writes .hgsub and .hgsubstate as files and warns that the subrepositories are left to hg', async () => {
    const src = join(work, 'src');
    hg(['init', src]);
    hg(['init', join(src, 'sub')]);
    writeFileSync(join(src, 'sub', 'a'), 'a\n');
    hg(['commit', '-q', '-A', '-m', 's0', '-d', '0 0'], join(src, 'sub'));
    writeFileSync(join(src, '.hgsub'), 'sub = sub\n');
    hg(['add', '-q', '.hgsub'], src);
    hg(['commit', '-q', '-m', 'p0', '-d', '0 0'], src);
    hg(['update', '-q', 'null'], src);
    const events: SluiceEvent[] = [];
    await updateWorkingCopy(src, {}, new JobContext({ sink: (ev) => events.push(ev) }));
    const warnings = events.flatMap((ev) => (ev.type === 'log' && ev.level === 'warn' ? [ev.message] : []));
    expect(warnings.join('\n')).toContain('subrepositories (.hgsub)');
    expect(readFileSync(join(src, '.hgsubstate'), 'latin1')).toMatch(/^[0-9a-f]{40} sub\n$/);
    expect(hg(['status'], src)).toBe('');
  }, 60_000);
});
