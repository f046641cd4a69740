// Valid changegroups from live hg pass Sluice's manifest/filelog cross-check (needed-files.ts,
// hg's server.validate, always on) in the shapes that make it hard: renames and copies, a merge
// whose p2 side brings file revisions the repository already has, a file revision another branch
// made first (the same filenode, not sent again), empty files, a flag-only change, removals, a
// bundle overlapping what the repository has (revisions sent again), deltas against revisions not
// in the bundle, and tree manifests (cg3 `meta/` revlogs). Each lands as `hg unbundle` lands it.
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyChangegroupBundleFile } from '../../src/main/engine/operations/apply/apply-changegroup-bundle';
import { JobContext } from '../../src/main/engine/context/job-context';
import { missing, removeDir, skipNote, tempDirMaker } from '../support/env';
import { copyRepo, hg, logOf, verifyOk } from './changegroup-support';

const makeTempDir = tempDirMaker('cg-validate');
let work = '';

/** Makes `dir` (hg init with `init` options) and runs `steps` in it. */
function history(
  dir: string,
  init: string[],
  steps: (w: (name: string, data: string) => void, commit: (msg: string) => void) => void,
): string {
  hg(['init', ...init, dir]);
  const w = (name: string, data: string) => {
    const p = join(dir, name);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, data);
  };
  steps(w, (msg) => hg(['commit', '-q', '-A', '-m', msg, '-d', '0 0'], dir));
  return dir;
}

/** The same steps for a flat and a tree-manifest repository. */
function shapes(
  dir: string,
): (w: (name: string, data: string) => void, commit: (msg: string) => void) => void {
  return (w, commit) => {
    w('a.txt', 'one\n');
    w('b.txt', 'bee\n');
    w('empty.txt', '');
    w('sub/deep/x.txt', 'x\n');
    w('sub/y.txt', 'y\n');
    commit('c0');
    w('a.txt', 'one\ntwo\n');
    hg(['mv', '-q', 'b.txt', 'sub/b-moved.txt'], dir);
    w('empty.txt', 'not empty any more\n');
    w('empty2.txt', '');
    commit('c1');
    // a second branch making the same change to a.txt from the same parent: the same filenode
    hg(['update', '-q', '0'], dir);
    w('a.txt', 'one\ntwo\n');
    w('sub/deep/x.txt', 'x\nside\n');
    hg(['copy', '-q', 'sub/y.txt', 'other/y-copy.txt'], dir);
    commit('c2 side');
    hg(['merge', '-q', '1'], dir);
    commit('c3 merge');
    chmodSync(join(dir, 'sub/y.txt'), 0o755); // a flag-only change: the same filenode
    hg(['rm', '-q', 'sub/deep/x.txt'], dir);
    w('empty2.txt', '');
    commit('c4');
    w('a.txt', 'one\n'); // back to c0's text, but a new filenode (other parents)
    commit('c5');
  };
}

function bundle(repo: string, out: string, args: string[], spec: string): string {
  hg(['--config', 'experimental.changegroup3=yes', 'bundle', '-q', ...args, '-t', spec, out], repo);
  return out;
}

/** Applies `file` with Sluice into a copy of `base` and with hg into another: both verify, logs equal. */
async function sameAsUnbundle(base: string, file: string, label: string): Promise<void> {
  const ours = copyRepo(base, join(work, `${label}-sluice`));
  const theirs = copyRepo(base, join(work, `${label}-hg`));
  await applyChangegroupBundleFile(file, ours, new JobContext());
  hg(['unbundle', '-q', file], theirs);
  const v = verifyOk(ours);
  expect(v.ok, v.out).toBe(true);
  expect(logOf(ours)).toBe(logOf(theirs));
  expect(hg(['files', '-r', 'tip'], ours)).toBe(hg(['files', '-r', 'tip'], theirs));
}

describe.skipIf(missing('hg'))(
  `valid hg changegroups pass the manifest/filelog cross-check${skipNote('hg')}`,
  () => {
    const repos: Record<'flat' | 'tree', { src: string; init: string[]; spec: string }> = {
      flat: { src: '', init: [], spec: 'none-v2' },
      tree: { src: '', init: ['--config', 'experimental.treemanifest=1'], spec: 'none-v2;cg.version=03' },
    };

    beforeAll(() => {
      work = makeTempDir('w');
      for (const [kind, r] of Object.entries(repos)) {
        const dir = join(work, `src-${kind}`);
        r.src = history(dir, r.init, shapes(dir));
      }
    }, 120_000);
    afterAll(() => work && removeDir(work));

    it('the tree-manifest source really has meta/ revlogs (cg3 directory groups are exercised)', () => {
      expect(hg(['debugrequirements'], repos.tree.src)).toContain('treemanifest');
      expect(hg(['debugindex', '--dir', 'sub/deep/'], repos.tree.src)).toMatch(/^\s+1\s/m);
    });

    for (const kind of ['flat', 'tree'] as const) {
      it(`${kind}: everything into an empty repository`, async () => {
        const r = repos[kind];
        const empty = join(work, `${kind}-empty`);
        hg(['init', ...r.init, empty]);
        await sameAsUnbundle(
          empty,
          bundle(r.src, join(work, `${kind}-all.hg`), ['-a'], r.spec),
          `${kind}-all`,
        );
      });

      it(`${kind}: the other branch and the merge on top of one branch (shared filenode, p2 files present, deltas against local revisions)`, async () => {
        const r = repos[kind];
        const base = join(work, `${kind}-base1`);
        hg(['--config', 'experimental.changegroup3=yes', 'clone', '-q', '-U', '-r', '1', r.src, base]);
        const file = bundle(r.src, join(work, `${kind}-inc.hg`), ['--base', '1', '-r', 'tip'], r.spec);
        await sameAsUnbundle(base, file, `${kind}-inc`);
      });

      it(`${kind}: a bundle overlapping the repository (revisions it has sent again)`, async () => {
        const r = repos[kind];
        const base = join(work, `${kind}-base2`);
        hg(['--config', 'experimental.changegroup3=yes', 'clone', '-q', '-U', '-r', '2', r.src, base]);
        // --base 0: changesets 1.. again, though the repository has 2 (and its revisions)
        const file = bundle(r.src, join(work, `${kind}-overlap.hg`), ['--base', '0', '-r', 'tip'], r.spec);
        await sameAsUnbundle(base, file, `${kind}-overlap`);
      });
    }

    it('cg1 (implicit delta bases: the previous revision of the group) with the merge and the shared filenode', async () => {
      const base = join(work, 'cg1-base');
      hg(['clone', '-q', '-U', '-r', '1', repos.flat.src, base]);
      const file = bundle(repos.flat.src, join(work, 'cg1.hg'), ['--base', '1', '-r', 'tip'], 'none-v1');
      await sameAsUnbundle(base, file, 'cg1');
      rmSync(file);
    });
  },
);
