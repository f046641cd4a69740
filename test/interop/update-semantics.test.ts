// `hg update`'s choices, against real hg 6.3.2: which revision an update goes to and what becomes
// of the bookmarks (destutil.destupdate, hg.updatetotally, hg.clone, commands.postincoming). Each
// case prepares one repository with hg, copies it, runs hg in one copy and Sluice (the engine job
// the CLI and the app run) in the other, and compares the working parent, the branch, the active
// bookmark, every bookmark, and the lines both print about the update.
import { cpSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runJob } from '../../src/main/engine/job/run-job';
import { JobContext } from '../../src/main/engine/context/job-context';
import type { JobRequest } from '../../src/shared/jobs';
import { hgSync, missing, removeDir, skipNote, tempDirMaker } from '../support/env';

function hg(args: string[], cwd: string): string {
  const r = hgSync(args, cwd);
  if (r.status !== 0) throw new Error(`hg ${args.join(' ')}: ${r.stderr}`);
  return r.stdout + r.stderr;
}

/** What an update decides, as hg reports it. */
function state(repo: string): Record<string, string> {
  return {
    parent: hg(['log', '-r', '.', '-T', '{node}'], repo),
    branch: hg(['branch'], repo).trim(),
    active: hg(['log', '-r', '.', '-T', '{activebookmark}'], repo),
    bookmarks: hg(['bookmarks', '-T', '{bookmark} {node}\n'], repo),
  };
}

/** The lines about the update (hg's pull and clone also print their transfer's). */
const UPDATE_LINE =
  /files updated|bookmark|heads|^updated to|^updating to|^\(run|^no open descendant|^\(committing/;

function updateLines(output: string): string[] {
  return output.split('\n').filter((l) => UPDATE_LINE.test(l));
}

/** Runs `request` as a job; the info and warning lines it logged, as the CLI prints them. */
async function sluiceJob(request: JobRequest): Promise<string[]> {
  const lines: string[] = [];
  const ctx = new JobContext({
    sink: (e) => {
      if (e.type === 'log' && e.level !== 'debug') lines.push(e.message);
    },
  });
  await runJob(request, ctx);
  return updateLines(lines.join('\n'));
}

describe.skipIf(missing('hg'))(`update destination and bookmarks as hg${skipNote('hg')}`, () => {
  const tempDir = tempDirMaker('update-semantics');
  let work = '';
  /**
   * 0-1-2-4 on default, 3 on stable from 2, 5 on default from 1 (default's other head, and tip);
   * `book` on 4, `@` on 1, `other` on 3; no working copy (null).
   */
  let base = '';
  let n = 0;

  beforeAll(() => {
    work = tempDir('repos');
    base = join(work, 'base');
    hg(['init', base], work);
    const commit = (file: string, text: string, msg: string): void => {
      writeFileSync(join(base, file), text);
      hg(['commit', '-q', '-A', '-m', msg], base);
    };
    commit('a', 'a\n', 'zero');
    commit('a', 'a\nb\n', 'one');
    commit('a', 'a\nb\nc\n', 'two');
    hg(['branch', '-q', 'stable'], base);
    commit('s', 's\n', 'three on stable');
    hg(['update', '-q', '2'], base);
    commit('a', 'a\nb\nc\nd\n', 'four');
    hg(['update', '-q', '1'], base);
    commit('e', 'e\n', 'five: another default head');
    hg(['bookmark', '-q', '-r', '4', 'book'], base);
    hg(['bookmark', '-q', '-r', '1', '@'], base);
    hg(['bookmark', '-q', '-r', '3', 'other'], base);
    hg(['update', '-q', 'null'], base);
  });
  afterAll(() => removeDir(work));

  /** Two copies of `base` after `setup` (hg commands run in it). */
  function copies(setup: string[][]): { theirs: string; ours: string } {
    const prepared = join(work, `case-${++n}`);
    cpSync(base, prepared, { recursive: true, verbatimSymlinks: true });
    for (const args of setup) hg(args, prepared);
    const theirs = `${prepared}-hg`;
    const ours = `${prepared}-sluice`;
    cpSync(prepared, theirs, { recursive: true, verbatimSymlinks: true });
    cpSync(prepared, ours, { recursive: true, verbatimSymlinks: true });
    return { theirs, ours };
  }

  async function expectSameUpdate(setup: string[][], rev?: string): Promise<string[]> {
    const { theirs, ours } = copies(setup);
    const printed = updateLines(hg(['update', ...(rev !== undefined ? [rev] : [])], theirs));
    const job: JobRequest = { kind: 'update', repo: ours, ...(rev !== undefined ? { rev } : {}) };
    expect(await sluiceJob(job)).toEqual(printed);
    expect(state(ours)).toEqual(state(theirs));
    hg(['verify', '-q'], ours);
    return printed;
  }

  it('moves an active bookmark behind its branch tip along (no REV)', async () => {
    const printed = await expectSameUpdate([
      ['update', '-q', '2'],
      ['bookmark', '-q', '-f', '-r', '2', 'book'],
      ['bookmark', '-q', 'book'],
    ]);
    expect(printed).toContain('updating bookmark book');
  });

  it('goes to the highest head of the branch that descends from the parent, not tip', async () => {
    // from 2, tip (5) is a default head too, but not 2's descendant: hg goes to 4, and says 5 is there
    const printed = await expectSameUpdate([['update', '-q', '2']]);
    expect(printed.filter((l) => l.startsWith('updated to'))).toEqual([expect.stringMatching(/: four"$/)]);
  });

  it("reports the branch's other heads after an update without REV", async () => {
    const printed = await expectSameUpdate([['update', '-q', '1']]);
    expect(printed).toContain('1 other heads for branch "default"');
  });

  it("follows the working copy's branch without REV", async () => {
    // `hg branch -f stable` on 2: the destination is stable's head above 2
    await expectSameUpdate([
      ['update', '-q', '2'],
      ['branch', '-q', '-f', 'stable'],
    ]);
    await expectSameUpdate([['update', '-q', 'stable']]);
  });

  it('activates a bookmark named as REV', async () => {
    const printed = await expectSameUpdate([['update', '-q', '2']], 'other');
    expect(printed).toContain('(activating bookmark other)');
  });

  it('leaves the active bookmark for a REV that is not a bookmark', async () => {
    const printed = await expectSameUpdate([['update', '-q', 'book']], '2');
    expect(printed).toContain('(leaving bookmark book)');
  });

  it('goes to the tip of a branch named as REV', async () => {
    await expectSameUpdate([['update', '-q', 'book']], 'stable');
    await expectSameUpdate([['update', '-q', '3']], 'default');
  });

  it('from null goes to the tip of default, not to `@`', async () => {
    await expectSameUpdate([]);
  });

  it('clone -u: checks out REV, activates a bookmark silently, names the branch', async () => {
    for (const rev of [undefined, 'other', 'stable', '2']) {
      const theirs = join(work, `clone-hg-${rev ?? 'none'}`);
      const ours = join(work, `clone-sluice-${rev ?? 'none'}`);
      const printed = updateLines(hg(['clone', ...(rev ? ['-u', rev] : []), base, theirs], work));
      const job: JobRequest = { kind: 'clone', url: base, dest: ours, ...(rev ? { updateRev: rev } : {}) };
      expect(await sluiceJob(job)).toEqual(printed);
      expect(state(ours)).toEqual(state(theirs));
    }
  });

  it('pull -u: follows the pulled descendants, or the active bookmark the pull moved', async () => {
    // the source gets a child of 4 and advances `book` there; the pulling copies sit on 4 with
    // `book` active (then the pull moves it, and the update goes to it) or inactive
    const source = join(work, 'pull-source');
    cpSync(base, source, { recursive: true, verbatimSymlinks: true });
    hg(['update', '-q', 'book'], source);
    writeFileSync(join(source, 'a'), 'pulled\n');
    hg(['commit', '-q', '-m', 'six'], source);
    for (const active of [true, false]) {
      const { theirs, ours } = copies([['update', '-q', active ? 'book' : '4']]);
      const printed = updateLines(hg(['pull', '-u', source], theirs));
      expect(await sluiceJob({ kind: 'pull', repo: ours, source, update: true })).toEqual(printed);
      if (active) expect(printed).toContain('updating to active bookmark book');
      expect(state(ours)).toEqual(state(theirs));
      hg(['verify', '-q'], ours);
    }
  });
});
