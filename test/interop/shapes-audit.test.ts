// Repository shapes the format and sweep tests do not make, through Sluice's user-facing paths
// against real hg 6.3.2: an empty repository served by sluice serve (hg's discovery reads its
// heads), and a repository with a censored file revision (hgext/censor: a tombstone stored in place
// of the text, flagged, whose node no longer matches) pulled, applied, served, checked out and
// verified, an uncompressed repository (format.revlog-compression=none) that hg strip left
// empty revlogs in, pulled into, update among changesets obsolescence markers hide, a tag the
// heads' .hgtags disagree on, and non-ASCII branch, bookmark and tag names.

import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyChangegroupBundleFile } from '../../src/main/engine/operations/apply/apply-changegroup-bundle';
import { cloneFromUrl } from '../../src/main/engine/operations/clone/clone';
import { pullFromUrl } from '../../src/main/engine/operations/pull/pull';
import { startServer, type RunningServer } from '../../src/main/engine/operations/serve/http-server';
import { updateWorkingCopy } from '../../src/main/engine/operations/update/update';
import { verifyRepository } from '../../src/main/engine/operations/verify/verify';
import { workingCopyStatus } from '../../src/main/engine/operations/status/status';
import { HgConfig } from '../../src/main/engine/store/hgrc';
import { JobContext } from '../../src/main/engine/context/job-context';
import { SluiceError } from '../../src/main/engine/errors';
import { hg, treeHash, verifyOk } from './changegroup-support';
import { hgAsync, missing, removeDir, skipNote, startHgServe, tempDir, type HgServer } from './wire-support';

const LOG = '{node} {phase} {branch} {bookmarks} {tags}\n';
// hg verify and log read a censored revision only with this (verify reports it otherwise)
const IGNORE = ['--config', 'censor.policy=ignore'];

describe.skipIf(missing('hg'))(`an empty repository served by sluice serve${skipNote('hg')}`, () => {
  let work = '';
  let src = '';
  let sluice: RunningServer | undefined;
  beforeAll(async () => {
    work = tempDir('shapes-empty');
    src = join(work, 'src');
    hg(['init', src]);
    sluice = await startServer({ repo: src });
  }, 60_000);
  afterAll(async () => {
    await sluice?.close();
    if (work) removeDir(work);
  });

  it('answers heads and lookup with the null node, as hg serve: hg incoming, clone --pull and pull find nothing', async () => {
    const null40 = '0'.repeat(40);
    const heads = await fetch(`${sluice!.url}?cmd=heads`);
    expect(await heads.text()).toBe(`${null40}\n`);
    const tip = await fetch(`${sluice!.url}?cmd=lookup`, { headers: { 'X-HgArg-1': 'key=tip' } });
    expect(await tip.text()).toBe(`1 ${null40}\n`);
    const dest = join(work, 'hg-pull');
    const c = await hgAsync(['clone', '-U', '--pull', sluice!.url, dest]);
    expect(c.status, c.stderr).toBe(0);
    expect(c.stdout).toContain('no changes found');
    // an empty answer made hg ask for a changegroup, then abort on the empty reply
    const inc = await hgAsync(['-R', dest, 'incoming', sluice!.url]);
    expect(inc.stderr).toBe('');
    expect(inc.status).toBe(1);
    expect(inc.stdout).toContain('no changes found');
    expect(hg(['log', '-T', LOG], dest)).toBe('');
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

/** Nodes, phases, branches, bookmarks, tags; f's revisions and flags (the censored one's 0x8000). */
function shapeOf(repo: string): string {
  return hg(['log', '-T', LOG], repo) + hg(['debugindex', '-v', 'f'], repo).replace(/ +/g, ' ');
}

/** hg verify passes (under censor.policy=ignore: a stored text that is no tombstone still fails it). */
function expectLike(repo: string, ref: string): void {
  const v = hg(['verify', '-q', ...IGNORE], repo);
  expect(v).toBe('');
  expect(shapeOf(repo)).toBe(shapeOf(ref));
}

describe.skipIf(missing('hg'))(`a censored file revision (hg censor)${skipNote('hg')}`, () => {
  let work = '';
  let src = '';
  let hgServe: HgServer | undefined;
  let sluice: RunningServer | undefined;
  let ref = '';
  let before = '';
  beforeAll(async () => {
    work = tempDir('shapes-censor');
    src = join(work, 'src');
    hg(['init', src]);
    const commit = (f: string, text: string, date: number): void => {
      writeFileSync(join(src, f), text);
      hg(['commit', '-q', '-A', '-m', `c${date}`, '-d', `${date} 0`], src);
    };
    commit('f', 'secret one\n', 0);
    commit('g', 'g\n', 1);
    commit('f', 'secret two\n', 2); // censored below
    commit('f', 'clean\n', 3); // its parent a tombstone
    commit('g', 'g2\n', 4);
    hg(['--config', 'extensions.censor=', 'censor', '-q', '-r', '2', '-t', 'leaked', 'f'], src);
    hg(['update', '-q', 'null'], src);
    before = treeHash(join(src, '.hg'), /^cache$/);
    hgServe = await startHgServe(src);
    sluice = await startServer({ repo: src });
    ref = join(work, 'ref');
    hg(['clone', '-q', '-U', '--pull', hgServe.url, ref]);
  }, 60_000);
  afterAll(async () => {
    hgServe?.stop();
    await sluice?.close();
    if (work) removeDir(work);
  });

  it('sluice clone --pull and an incremental pull from hg serve keep the tombstone, flagged', async () => {
    const dest = join(work, 'pull-clone');
    await cloneFromUrl({ kind: 'clone', url: hgServe!.url, dest, pull: true }, new JobContext());
    expectLike(dest, ref);
    const partial = join(work, 'partial');
    hg(['clone', '-q', '-U', '-r', '1', hgServe!.url, partial]);
    await pullFromUrl({ kind: 'pull', repo: partial }, new JobContext());
    expectLike(partial, ref);
  }, 60_000);

  it('sluice apply of hg bundle --all into a new and an existing repository', async () => {
    const type = 'gzip-v2';
    const bundle = join(work, `all-${type}.hg`);
    hg(['bundle', '-q', '--all', '-t', type, bundle], src);
    // hg unbundle's repositories are the references (a bundle's changesets arrive draft)
    const [fresh, freshRef, old, oldRef] = ['new', 'new-hg', 'old', 'old-hg'].map((n) =>
      join(work, `apply-${type}-${n}`),
    );
    hg(['init', freshRef]);
    for (const d of [old, oldRef]) hg(['clone', '-q', '-U', '-r', '1', src, d]);
    for (const d of [freshRef, oldRef]) hg(['unbundle', '-q', bundle], d);
    await applyChangegroupBundleFile(bundle, fresh, new JobContext());
    expectLike(fresh, freshRef);
    await applyChangegroupBundleFile(bundle, old, new JobContext());
    expectLike(old, oldRef);
  }, 60_000);

  it('hg clone --pull and an incremental hg pull from sluice serve', async () => {
    const dest = join(work, 'hg-from-sluice');
    const c = await hgAsync(['clone', '-q', '-U', '--pull', sluice!.url, dest]);
    expect(c.status, c.stderr).toBe(0);
    expectLike(dest, ref);
    const partial = join(work, 'hg-partial');
    hg(['clone', '-q', '-U', '-r', '1', src, partial]);
    const p = await hgAsync(['-R', partial, 'pull', '-q', sluice!.url]);
    expect(p.status, p.stderr).toBe(0);
    expectLike(partial, ref);
    expect(treeHash(join(src, '.hg'), /^cache$/)).toBe(before);
  }, 60_000);

  it("status of hg's checkout of the censored revision (censor.policy=ignore: an empty file) is clean, as hg's", async () => {
    const wc = join(work, 'wc-ignore');
    hg(['clone', '-q', '-U', src, wc]);
    hg(['update', '-q', ...IGNORE, '2'], wc);
    const status = async (): Promise<string[]> => {
      const r = await workingCopyStatus(wc, {
        listUnknown: false,
        listIgnored: false,
        listClean: false,
        warn: () => undefined,
        userConfig: new HgConfig(),
      });
      return [...r.modified.map((f) => `M ${f}`), ...r.deleted.map((f) => `! ${f}`)];
    };
    expect(await status()).toEqual([]); // a revlog error was taken for a vanished file: "! f"
    expect(hg(['status', ...IGNORE], wc)).toBe('');
    writeFileSync(join(wc, 'f'), 'x\n');
    expect(await status()).toEqual(['M f']);
  }, 60_000);

  it('update to the censored revision is refused, naming it; verify reports it as hg verify does', async () => {
    const wc = join(work, 'wc');
    hg(['clone', '-q', '-U', src, wc]);
    const e = await refusal(updateWorkingCopy(wc, { rev: '2' }, new JobContext()));
    const censoredNode = /^ +1 +\d+ ([0-9a-f]{12}) /m.exec(hg(['debugindex', 'f'], src))![1]!;
    expect(e.message).toContain(`censored node: ${censoredNode}`);
    expect(existsSync(join(wc, 'g'))).toBe(false);
    // the revisions after it check out
    await updateWorkingCopy(wc, { rev: 'tip' }, new JobContext());
    expect(hg(['status', ...IGNORE], wc)).toBe('');
    const report = await verifyRepository(wc, new JobContext(), { throwOnErrors: false });
    expect(report.problems.map((p) => p.text)).toEqual([' f@2: censored file data']);
  }, 60_000);
});

describe.skipIf(missing('hg'))(
  `a stripped repository without revlog compression (format.revlog-compression=none)${skipNote('hg')}`,
  () => {
    let work = '';
    let src = '';
    beforeAll(() => {
      work = tempDir('shapes-strip');
      src = join(work, 'src');
      hg(['init', '--config', 'format.revlog-compression=none', src]);
      writeFileSync(join(src, 'a'), 'a\n'.repeat(100));
      hg(['commit', '-q', '-A', '-m', 'c0', '-d', '0 0'], src);
      writeFileSync(join(src, 'new.txt'), 'new\n'.repeat(100));
      hg(['commit', '-q', '-A', '-m', 'c1', '-d', '1 0'], src);
      expect(hg(['debugrequirements'], src)).toContain('exp-compression-none\n');
    }, 60_000);
    afterAll(() => work && removeDir(work));

    it('pull into it after hg strip left an empty revlog: stored uncompressed, listed in the fncache', async () => {
      const dest = join(work, 'stripped');
      hg(['clone', '-q', '-U', src, dest]);
      // strip truncates new.txt's revlog to nothing and drops it from the fncache (as a rolled
      // back transaction does): the file is there, empty, but hg no longer lists it
      hg(['--config', 'extensions.strip=', 'strip', '-q', '--no-backup', '-r', '1'], dest);
      expect(hg(['debugrequirements'], dest)).toContain('exp-compression-none\n');
      await pullFromUrl({ kind: 'pull', repo: dest, source: src }, new JobContext());
      const v = verifyOk(dest);
      expect(v.ok, v.out).toBe(true);
      expect(v.out).not.toContain('warning'); // revlog 'data/new.txt.i' not in fncache!
      expect(hg(['log', '-T', '{node}\n'], dest)).toBe(hg(['log', '-T', '{node}\n'], src));
      // hg's debugrevlog counts chunks by their first byte: no zlib (x) or zstd (() one
      for (const revlog of [['-c'], ['-m'], ['new.txt']]) {
        const chunks = hg(['debugrevlog', ...revlog], dest);
        expect(chunks, revlog[0]).toMatch(/^ +0x75 \(u\) +:/m);
        expect(chunks, revlog[0]).not.toMatch(/^ +0x(78|28) /m);
      }
      await updateWorkingCopy(dest, { rev: 'tip' }, new JobContext());
      expect(hg(['status', '--all'], dest)).toBe('C a\nC new.txt\n');
      const report = await verifyRepository(dest);
      expect(report.errors + report.warnings).toBe(0);
    }, 60_000);
  },
);

describe.skipIf(missing('hg'))(`update among obsolete changesets (evolution)${skipNote('hg')}`, () => {
  let work = '';
  let src = '';
  beforeAll(() => {
    work = tempDir('shapes-obsolete');
    src = join(work, 'src');
    const evo = ['--config', 'experimental.evolution=all'];
    hg(['init', src]);
    const commit = (f: string, date: number, ...extra: string[]): void => {
      writeFileSync(join(src, f), `${f} ${date}\n`);
      hg([...evo, 'commit', '-q', '-A', '-m', `c${date}`, '-d', `${date} 0`, ...extra], src);
    };
    commit('a', 0);
    commit('b', 1);
    commit('b', 2, '--amend'); // 1 rewritten as 2
    commit('c', 3);
    hg(['update', '-q', '0'], src);
    commit('d', 4); // the tip, pruned next
    hg([...evo, 'debugobsolete', '-q', '-d', '5 0', hg(['log', '-r', '.', '-T', '{node}'], src)], src);
    hg(['update', '-q', 'null'], src);
    expect(hg(['log', '--hidden', '-T', '{rev}{if(obsolete, "x")} '], src)).toBe('4x 3 2 1x 0 ');
  }, 60_000);
  afterAll(() => work && removeDir(work));

  it('the default destination and tip skip hidden changesets; a hidden one named is refused, as by hg', async () => {
    const [ours, theirs] = ['ours', 'theirs'].map((n) => join(work, n));
    // copies with the hidden changesets and the obsstore (hg clone would leave the hidden out);
    // hg hides what the markers hide without evolution turned on
    for (const d of [ours, theirs]) cpSync(src, d, { recursive: true });
    const id = (repo: string): string => hg(['id', '-n'], repo);
    for (const rev of [undefined, 'tip', '0', 'tip']) {
      await updateWorkingCopy(ours, rev === undefined ? {} : { rev }, new JobContext());
      hg(['update', '-q', ...(rev === undefined ? [] : [rev])], theirs);
      expect(id(ours), rev).toBe(id(theirs));
      expect(hg(['status'], ours)).toBe('');
    }
    expect(id(ours)).toBe('3\n');
    for (const rev of ['1', '4']) {
      const e = await refusal(updateWorkingCopy(ours, { rev }, new JobContext()));
      expect(e.message).toBe(`hidden revision '${rev}'`);
      expect(id(ours)).toBe('3\n');
    }
  }, 60_000);

  it("with --hidden a hidden changeset is reached, as by hg update --hidden, with hg's note", async () => {
    const [ours, theirs] = ['ours-hidden', 'theirs-hidden'].map((n) => join(work, n));
    for (const d of [ours, theirs]) cpSync(src, d, { recursive: true });
    const id = (repo: string): string => hg(['--hidden', 'id', '-n'], repo);
    for (const rev of ['1', '4', '0', 'tip']) {
      const logs: string[] = [];
      const ctx = new JobContext({ sink: (e) => void (e.type === 'log' && logs.push(e.message)) });
      await updateWorkingCopy(ours, { rev, hidden: true }, ctx);
      // hg writes its note to stderr
      const out = spawnSync('hg', ['update', '--hidden', rev], { cwd: theirs, encoding: 'utf8' }).stderr;
      expect(id(ours), rev).toBe(id(theirs));
      expect(hg(['--hidden', 'status'], ours)).toBe('');
      const note = /updated to hidden changeset [0-9a-f]{12}/.exec(out)?.[0];
      expect(
        logs.find((l) => l.startsWith('updated to hidden')),
        rev,
      ).toBe(note);
    }
    expect(id(ours)).toBe('4\n'); // tip with --hidden is the hidden 4, as hg's
  }, 60_000);
});

describe.skipIf(missing('hg'))(
  `a tag moved differently on two heads (.hgtags conflict)${skipNote('hg')}`,
  () => {
    let work = '';
    let src = '';
    beforeAll(() => {
      work = tempDir('shapes-tags');
      src = join(work, 'src');
      hg(['init', src]);
      let date = 0;
      const tag = (...args: string[]): void =>
        void hg(['tag', '-q', '-f', '-d', `${date++} 0`, ...args], src);
      for (const f of ['a', 'b']) {
        writeFileSync(join(src, f), `${f}\n`);
        hg(['commit', '-q', '-A', '-m', f, '-d', `${date++} 0`], src);
      }
      // one head moves v from 0 to 1 and sets w on 1; the other, from 1, moves both back to 0 and w
      // on to its own changeset: hg keeps v on 1 (0 is in that head's v history, which is longer)
      tag('-r', '0', 'v');
      tag('-r', '1', 'v');
      tag('-r', '1', 'w');
      hg(['update', '-q', '1'], src);
      writeFileSync(join(src, 'c'), 'c\n');
      hg(['commit', '-q', '-A', '-m', 'c', '-d', `${date++} 0`], src);
      tag('-r', '0', 'v');
      tag('-r', '0', 'w');
      tag('-r', '4', 'w');
      hg(['update', '-q', 'null'], src);
      expect(hg(['heads', '-T', '{rev} '], src)).toBe('8 4 ');
    }, 60_000);
    afterAll(() => work && removeDir(work));

    it('update to each tag and sluice serve lookup agree with hg', async () => {
      const tags = hg(['tags', '-T', '{tag} {node}\n'], src);
      expect(tags).toContain(`v ${hg(['log', '-r', '1', '-T', '{node}'], src)}`);
      const sluice = await startServer({ repo: src });
      try {
        for (const line of tags.trim().split('\n')) {
          const [name, node] = line.split(' ') as [string, string];
          if (name === 'tip') continue;
          const wc = join(work, `wc-${name}`);
          cpSync(src, wc, { recursive: true });
          await updateWorkingCopy(wc, { rev: name }, new JobContext());
          expect(hg(['log', '-r', '.', '-T', '{node}'], wc), name).toBe(node);
          const r = await fetch(`${sluice.url}?cmd=lookup`, { headers: { 'X-HgArg-1': `key=${name}` } });
          expect(await r.text(), name).toBe(`1 ${node}\n`);
        }
      } finally {
        await sluice.close();
      }
    }, 60_000);
  },
);

describe.skipIf(missing('hg'))(`non-ASCII branch, bookmark and tag names${skipNote('hg')}`, () => {
  let work = '';
  let src = '';
  beforeAll(() => {
    work = tempDir('shapes-names');
    src = join(work, 'src');
    hg(['init', src]);
    writeFileSync(join(src, 'a'), 'a\n');
    hg(['commit', '-q', '-A', '-m', 'a', '-d', '0 0'], src);
    hg(['branch', '-q', 'fé x'], src);
    writeFileSync(join(src, 'b'), 'b\n');
    hg(['commit', '-q', '-A', '-m', 'b', '-d', '1 0'], src);
    hg(['bookmark', '-q', '-r', '0', 'bé'], src);
    hg(['tag', '-q', '-d', '2 0', '-r', '1', 'tä'], src);
    hg(['update', '-q', 'null'], src);
  }, 60_000);
  afterAll(() => work && removeDir(work));

  it('update to each (typed as UTF-8, as hg reads them) lands where hg update does', async () => {
    for (const name of ['fé x', 'bé', 'tä']) {
      const [ours, theirs] = ['ours', 'theirs'].map((n) => join(work, `${n}-${name}`));
      for (const d of [ours, theirs]) cpSync(src, d, { recursive: true });
      await updateWorkingCopy(ours, { rev: name }, new JobContext());
      hg(['update', '-q', name], theirs);
      expect(hg(['id', '-i', '-b', '-B'], ours), name).toBe(hg(['id', '-i', '-b', '-B'], theirs));
      const active = (repo: string): string => hg(['log', '-r', '.', '-T', '{activebookmark}'], repo);
      expect(active(ours), name).toBe(active(theirs));
    }
    const e = await refusal(updateWorkingCopy(join(work, 'ours-bé'), { rev: 'nö' }, new JobContext()));
    expect(e.message).toBe("unknown revision 'nö'");
  }, 60_000);
});
