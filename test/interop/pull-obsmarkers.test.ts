// `sluice pull` of a repository with obsolescence markers (exchange._pullbundle2 asking
// `obsmarkers=1`, bundle2.handleobsmarker → obsstore.mergemarkers): with evolution enabled in the
// pulling repository, the markers land in .hg/store/obsstore byte for byte as `hg pull` writes
// them (format 1, only the new ones, journaled: `hg rollback` removes them again); without it,
// none are asked for and none are written, as with hg.

import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobContext } from '../../src/main/engine/context/job-context';
import { pullFromUrl } from '../../src/main/engine/operations/pull/pull';
import { cloneFromUrl } from '../../src/main/engine/operations/clone/clone';
import { HG_PYTHON } from '../support/env';
import { SluiceError } from '../../src/main/engine/errors';
import { mergeObsmarkers, splitMarkersV1 } from '../../src/main/engine/repo/obsstore';
import {
  HG_ENV,
  hgAsync,
  missing,
  removeDir,
  skipNote,
  sortedLines,
  startHgServe,
  tempDir,
  type HgServer,
} from './wire-support';

const EVOLVE = ['--config', 'experimental.evolution=all'];

/** hg -R REPO ARGS, its output; throws with hg's stderr when it fails */
function hg(repo: string, ...args: string[]): string {
  const r = spawnSync('hg', ['-R', repo, ...args], { env: HG_ENV, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`hg ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

describe.skipIf(missing('hg'))(`sluice pull brings obsolescence markers${skipNote('hg')}`, () => {
  let work = '';
  let src = '';
  let server: HgServer | undefined;
  let lastObsstore = Buffer.alloc(0);

  beforeAll(async () => {
    work = tempDir('pull-obsmarkers');
    src = join(work, 'src');
    mkdirSync(src);
    spawnSync('hg', ['init', src], { env: HG_ENV });
    writeFileSync(join(src, '.hg', 'hgrc'), '[experimental]\nevolution = all\n[phases]\npublish = False\n');
    for (const text of ['a', 'b', 'c', 'd']) {
      writeFileSync(join(src, 'f'), text);
      hg(src, 'commit', '-q', '-A', '-m', text, '-u', 't', '-d', '0 0');
    }
    // markers: the tip amended (a successor), and a prune with metadata
    writeFileSync(join(src, 'f'), 'd2');
    hg(src, 'commit', '-q', '--amend', '-m', 'd2', '-u', 't', '-d', '0 0');
    hg(src, 'debugobsolete', '-d', '0 0', '-u', 't', hg(src, 'log', '-r', '2', '-T', '{node}'));
    server = await startHgServe(src, ['experimental.evolution=all']);
  }, 60_000);
  afterAll(() => {
    server?.stop();
    if (work) removeDir(work);
  });

  async function clientPair(label: string, evolve: boolean, from?: HgServer): Promise<[string, string]> {
    const out: string[] = [];
    for (const who of ['sluice', 'hg']) {
      const dest = join(work, `${label}-${who}`);
      const r = await hgAsync(['clone', '-q', '-U', '-r', '0', ...EVOLVE, (from ?? server!).url, dest]);
      expect(r.status, r.stderr).toBe(0);
      writeFileSync(join(dest, '.hg', 'hgrc'), evolve ? '[experimental]\nevolution = all\n' : '');
      out.push(dest);
    }
    return out as [string, string];
  }

  it('evolution on: the obsstore is what hg pull writes, and hg rollback takes it back', async () => {
    const [ours, theirs] = await clientPair('on', true);
    expect(existsSync(join(ours, '.hg', 'store', 'obsstore'))).toBe(false);
    await pullFromUrl({ kind: 'pull', repo: ours, source: server!.url }, new JobContext());
    expect((await hgAsync(['-R', theirs, 'pull', '-q', server!.url])).status).toBe(0);
    const obsstore = readFileSync(join(ours, '.hg', 'store', 'obsstore'));
    expect(obsstore).toEqual(readFileSync(join(theirs, '.hg', 'store', 'obsstore')));
    expect(splitMarkersV1(obsstore, 1)).toHaveLength(2);
    expect(hg(ours, 'debugobsolete')).toBe(hg(theirs, 'debugobsolete'));
    expect(hg(ours, 'log', '--hidden', '-T', '{node} {phase}\n')).toBe(
      hg(theirs, 'log', '--hidden', '-T', '{node} {phase}\n'),
    );
    expect(hg(ours, 'log', '-T', '{node}\n')).toBe(hg(theirs, 'log', '-T', '{node}\n'));
    expect(spawnSync('hg', ['-R', ours, 'verify', '-q'], { env: HG_ENV }).status).toBe(0);
    // the markers were part of the pull's transaction
    hg(ours, 'rollback', '-q');
    expect(existsSync(join(ours, '.hg', 'store', 'obsstore'))).toBe(false);
    expect(hg(ours, 'log', '--hidden', '-T', '{rev}\n')).toBe('0\n');
    // pulled again, then once more: no marker is added twice
    for (let i = 0; i < 2; i++) {
      await pullFromUrl({ kind: 'pull', repo: ours, source: server!.url }, new JobContext());
      expect(readFileSync(join(ours, '.hg', 'store', 'obsstore'))).toEqual(obsstore);
    }
    lastObsstore = obsstore;
  });

  it("bookmarks with the pulling repository's visible view, as hg pull: none added on a changeset hidden there, one moved along its changeset's rewrite", async () => {
    const repo = join(work, 'bm-src');
    mkdirSync(repo);
    spawnSync('hg', ['init', repo], { env: HG_ENV });
    writeFileSync(join(repo, '.hg', 'hgrc'), '[experimental]\nevolution = all\n[phases]\npublish = False\n');
    const commit = (text: string, ...extra: string[]): void => {
      writeFileSync(join(repo, 'f'), text);
      hg(repo, 'commit', '-q', '-A', '-m', text, '-u', 't', '-d', '0 0', ...extra);
    };
    commit('a');
    commit('b');
    hg(repo, 'bookmark', '-r', '1', 'gone');
    hg(repo, 'update', '-q', '0');
    commit('c');
    hg(repo, 'bookmark', '-r', '2', 'feat');
    // b pruned: the server's bookmark pins it (served), a clone without that bookmark hides it
    hg(repo, 'debugobsolete', '-d', '0 0', '-u', 't', hg(repo, 'log', '-r', '1', '-T', '{node}'));
    const srv = await startHgServe(repo, ['experimental.evolution=all']);
    try {
      const [ours, theirs] = await clientPair('bookmarks', true, srv);
      const pullBoth = async (): Promise<void> => {
        await pullFromUrl({ kind: 'pull', repo: ours, source: srv.url }, new JobContext());
        expect((await hgAsync(['-R', theirs, 'pull', '-q', srv.url])).status).toBe(0);
        expect(hg(ours, 'bookmarks')).toBe(hg(theirs, 'bookmarks'));
        expect(hg(ours, 'log', '--hidden', '-T', '{rev}:{node} {bookmarks}\n')).toBe(
          hg(theirs, 'log', '--hidden', '-T', '{rev}:{node} {bookmarks}\n'),
        );
      };
      await pullBoth();
      expect(hg(ours, 'bookmarks')).toContain('feat');
      expect(hg(ours, 'bookmarks')).not.toContain('gone');
      // c amended on the server (its bookmark moves to the successor): the pulled bookmark
      // follows it (validdest: the successor is in the old changeset's foreground), not divergent
      hg(repo, 'update', '-q', 'feat');
      commit('c2', '--amend');
      await pullBoth();
      expect(hg(ours, 'bookmarks')).not.toMatch(/feat@/);
    } finally {
      srv.stop();
    }
  });

  it('evolution off: no markers asked for, none written (as hg)', async () => {
    const [ours, theirs] = await clientPair('off', false);
    await pullFromUrl({ kind: 'pull', repo: ours, source: server!.url }, new JobContext());
    expect((await hgAsync(['-R', theirs, 'pull', '-q', server!.url])).status).toBe(0);
    expect(existsSync(join(theirs, '.hg', 'store', 'obsstore'))).toBe(false);
    expect(existsSync(join(ours, '.hg', 'store', 'obsstore'))).toBe(false);
    expect(hg(ours, 'log', '-T', '{node}\n')).toBe(hg(theirs, 'log', '-T', '{node}\n'));
  });

  it('hostile marker data (lying sizes, field counts past the end, another format) is refused before anything is written', () => {
    expect(lastObsstore.length).toBeGreaterThan(1);
    const [first] = splitMarkersV1(lastObsstore, 1);
    const dir = join(work, 'hostile');
    mkdirSync(dir);
    const mutants: Buffer[] = [];
    for (const [at, value, width] of [
      [0, 0xffffffff, 4], // size past the end
      [0, 18, 4], // shorter than the fixed part
      [0, first!.length - 1, 4], // one byte short of its fields
      [16, 200, 1], // successors past the size
      [17, 2, 1], // parents past the size
      [18, 9, 1], // metadata pairs past the size
    ] as const) {
      const m = Buffer.from(first!);
      m.writeUIntBE(value, at, width);
      mutants.push(Buffer.concat([Buffer.of(1), m]));
    }
    mutants.push(
      Buffer.concat([Buffer.of(0), first!]),
      Buffer.concat([Buffer.of(1), first!.subarray(0, 10)]),
    );
    for (const bad of mutants) {
      const err = (() => {
        try {
          mergeObsmarkers(dir, null as never, bad);
        } catch (e) {
          return e;
        }
        return null;
      })();
      expect(err).toBeInstanceOf(SluiceError);
      expect(existsSync(join(dir, 'obsstore'))).toBe(false);
    }
  });
});

/**
 * hg serve with bundle2's `obsmarkers` capability taken out (what a server older than bundle2
 * markers advertises; the `obsolete` listkeys namespace stays): a pull then takes the markers
 * from the listkeys dumps (exchange._pullobsolete).
 */
const NO_BUNDLE2_OBSMARKERS = `from mercurial import bundle2, extensions
def _caps(orig, repo, allowpushback=False, role=None):
    caps = orig(repo, allowpushback=allowpushback, role=role)
    if role == b'server':
        caps.pop(b'obsmarkers', None)
    return caps
def uisetup(ui):
    extensions.wrapfunction(bundle2, 'getrepocaps', _caps)
`;

/**
 * Markers of every shape the format-0 dumps carry, made by hg's obsstore.create in one process:
 * parents unrecorded, none, one and two; dates with a fraction and timezones east and west;
 * metadata; prunes and splits; 150 of them so that the dumps come in several keys (5300 bytes each).
 */
const MAKE_MARKERS = `import sys
from mercurial import hg, ui as uimod
repo = hg.repository(uimod.ui.load(), sys.argv[1].encode())
nodes = [repo[r].node() for r in repo]
fake = lambda i: bytes.fromhex('%040x' % (0x5a1ce0000 + i))
with repo.wlock(), repo.lock(), repo.transaction(b'markers') as tr:
    for i in range(150):
        parents = [None, (), (nodes[0],), (nodes[0], nodes[1])][i % 4]
        succs = [(), (fake(1000 + i),), (fake(2000 + i), fake(3000 + i))][i % 3]
        meta = {b'user': b'tester %d' % i, b'note': b'x' * (i % 50)}
        if i % 5 == 0:
            meta[b'operation'] = b'amend'
        date = (1764650000.25 + i * 3600, [0, -3600, 19800, 7200][i % 4])
        repo.obsstore.create(tr, fake(i), succs, 0, parents, date, meta)
`;

describe.skipIf(missing('hg', 'hg-python'))(
  `sluice pull takes obsolescence markers from listkeys when the server offers no bundle2 part${skipNote('hg', 'hg-python')}`,
  () => {
    let work = '';
    let src = '';
    let server: HgServer | undefined;

    beforeAll(async () => {
      work = tempDir('pull-obsmarkers-listkeys');
      src = join(work, 'src');
      spawnSync('hg', ['init', src], { env: HG_ENV });
      writeFileSync(join(src, '.hg', 'hgrc'), '[experimental]\nevolution = all\n[phases]\npublish = False\n');
      for (const text of ['a', 'b', 'c']) {
        writeFileSync(join(src, 'f'), text);
        hg(src, 'commit', '-q', '-A', '-m', text, '-u', 't', '-d', '0 0');
      }
      writeFileSync(join(src, 'f'), 'c2');
      hg(src, 'commit', '-q', '--amend', '-m', 'c2', '-u', 't', '-d', '0 0');
      const made = spawnSync(HG_PYTHON, ['-c', MAKE_MARKERS, src], { env: HG_ENV, encoding: 'utf8' });
      expect(made.status, made.stderr).toBe(0);
      const ext = join(work, 'nob2obs.py');
      writeFileSync(ext, NO_BUNDLE2_OBSMARKERS);
      server = await startHgServe(src, ['experimental.evolution=all', `extensions.nob2obs=${ext}`]);
    }, 60_000);
    afterAll(() => {
      server?.stop();
      if (work) removeDir(work);
    });

    it('the server advertises pushkey but no bundle2 obsmarkers, and its obsolete namespace holds several dumps', async () => {
      const caps = await (await fetch(`${server!.url}?cmd=capabilities`)).text();
      const b2 = decodeURIComponent(/bundle2=(\S+)/.exec(caps)![1]!);
      expect(b2).toMatch(/^changegroup=/m);
      expect(b2).not.toMatch(/obsmarkers/);
      expect(caps.split(' ')).toContain('pushkey');
      const keys = await (await fetch(`${server!.url}?cmd=listkeys&namespace=obsolete`)).text();
      expect(keys).toMatch(/^dump0\t/m);
      expect(keys).toMatch(/^dump2\t/m);
    });

    it('pull: the obsstore is what hg pull writes from the dumps, in the pull transaction', async () => {
      const [ours, theirs] = ['sluice', 'hg'].map((who) => join(work, `pull-${who}`));
      for (const dest of [ours!, theirs!]) {
        const r = await hgAsync(['clone', '-q', '-U', '-r', '0', src, dest]);
        expect(r.status, r.stderr).toBe(0);
        writeFileSync(join(dest, '.hg', 'hgrc'), '[experimental]\nevolution = all\n');
      }
      const logs: string[] = [];
      const ctx = new JobContext({ sink: (e) => void (e.type === 'log' && logs.push(e.message)) });
      await pullFromUrl({ kind: 'pull', repo: ours!, source: server!.url }, ctx);
      expect(logs).toContain('fetching remote obsolete markers');
      const h = await hgAsync(['-R', theirs!, 'pull', '-q', '--debug', server!.url]);
      expect(h.status, h.stderr).toBe(0);
      expect(h.stdout).toMatch(/fetching remote obsolete markers/);
      const obsstore = readFileSync(join(ours!, '.hg', 'store', 'obsstore'));
      expect(obsstore.equals(readFileSync(join(theirs!, '.hg', 'store', 'obsstore')))).toBe(true);
      expect(splitMarkersV1(obsstore, 1)).toHaveLength(151);
      expect(hg(ours!, 'debugobsolete')).toBe(hg(theirs!, 'debugobsolete'));
      // the server's markers, all of them (the dumps list them sorted)
      expect(sortedLines(hg(ours!, 'debugobsolete'))).toEqual(sortedLines(hg(src, 'debugobsolete')));
      expect(hg(ours!, 'log', '--hidden', '-T', '{node} {phase}\n')).toBe(
        hg(theirs!, 'log', '--hidden', '-T', '{node} {phase}\n'),
      );
      expect(spawnSync('hg', ['-R', ours!, 'verify', '-q'], { env: HG_ENV }).status).toBe(0);
      // the markers were part of the pull's transaction: hg rollback takes them back with it
      hg(ours!, 'rollback', '-q');
      expect(existsSync(join(ours!, '.hg', 'store', 'obsstore'))).toBe(false);
      expect(hg(ours!, 'log', '--hidden', '-T', '{rev}\n')).toBe('0\n');
      // pulled again, then once more: no marker is added twice
      for (let i = 0; i < 2; i++) {
        await pullFromUrl({ kind: 'pull', repo: ours!, source: server!.url }, new JobContext());
        expect(readFileSync(join(ours!, '.hg', 'store', 'obsstore')).equals(obsstore)).toBe(true);
      }
    });

    it('clone --pull --obsmarkers: the obsstore hg clone --pull writes', async () => {
      const ours = join(work, 'clone-sluice');
      const theirs = join(work, 'clone-hg');
      await cloneFromUrl(
        { kind: 'clone', url: server!.url, dest: ours, pull: true, obsmarkers: true, update: false },
        new JobContext(),
      );
      const h = await hgAsync(['clone', '-q', '-U', '--pull', ...EVOLVE, server!.url, theirs]);
      expect(h.status, h.stderr).toBe(0);
      expect(
        readFileSync(join(ours, '.hg', 'store', 'obsstore')).equals(
          readFileSync(join(theirs, '.hg', 'store', 'obsstore')),
        ),
      ).toBe(true);
      expect(hg(ours, ...EVOLVE, 'log', '--hidden', '-T', '{node}\n')).toBe(
        hg(theirs, ...EVOLVE, 'log', '--hidden', '-T', '{node}\n'),
      );
    });
  },
);
