import { afterEach, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { workingCopySummary } from '../../../src/main/host/engine-api';
import { RepoLibrary } from '../../../src/main/host/repo-library';
import { readRepoSummary, SHOWN } from '../../../src/main/host/repo-summary';
import { hgSync, missing, removeDir, skipNote, tempDirMaker } from '../../support/env';

const makeTempDir = tempDirMaker('repo-summary');
const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach(removeDir));

function hg(cwd: string, ...args: string[]): void {
  const r = hgSync(args, cwd);
  if (r.status !== 0) throw new Error(`hg ${args.join(' ')}: ${r.stderr}`);
}

const RLO = '\u202e';

// A hostile server chooses the tip's summary, author, branch and bookmarks; the row shows them.
describe.skipIf(missing('hg'))(`a row's text from a hostile repository${skipNote('hg')}`, () => {
  it('comes bounded, without controls or bidi overrides', async () => {
    const repo = makeTempDir('hostile');
    dirs.push(repo);
    hg(repo, 'init');
    writeFileSync(join(repo, 'f'), 'x');
    hg(repo, 'branch', `rel${RLO}esae`);
    const message = `fix${RLO}gpj.exe ${'y'.repeat(100_000)}\nsecond line`;
    hg(repo, 'commit', '-A', '-m', message, '-u', `Mallory${RLO}\u0007 <m@example.com>`);
    const bookmarks = Array.from({ length: 40 }, (_, i) => `bm${i}${RLO}`);
    hg(repo, 'bookmark', ...bookmarks);

    const { tip } = await readRepoSummary(repo, { withSize: false });
    expect(tip!.summary.length).toBe(SHOWN.summaryChars);
    expect(tip!.summary.startsWith('fix\ufffdgpj.exe yyy')).toBe(true);
    expect(tip!.summary.endsWith('y…')).toBe(true);
    expect(tip!.user).toBe('Mallory\ufffd\ufffd <m@example.com>');
    expect(tip!.branch).toBe('rel\ufffdesae');
    expect(tip!.bookmarks).toHaveLength(SHOWN.bookmarks);
    for (const b of tip!.bookmarks) expect(b).toMatch(/^bm\d+\ufffd$/);
  });

  it("and so does its working copy's branch and active bookmark (hg status's)", async () => {
    const dir = makeTempDir('wc');
    dirs.push(dir);
    const repo = join(dir, 'repo');
    hg(dir, 'init', 'repo');
    writeFileSync(join(repo, 'f'), 'x');
    hg(repo, 'branch', `b${RLO}${'n'.repeat(300)}`);
    hg(repo, 'commit', '-A', '-m', 'c');
    hg(repo, 'bookmark', `m${RLO}\u2067k`);
    const library = new RepoLibrary({
      file: join(dir, 'library.json'),
      onUpdate: () => {},
      read: (root) => readRepoSummary(root, { withSize: false }),
      readWorkingCopy: workingCopySummary,
      watch: { debounceMs: 20, pollMs: 100, useEvents: false },
      batchMs: 10,
    });
    try {
      await library.add(repo, 'user');
      const end = Date.now() + 10_000;
      while (!library.get(repo)?.workingCopy && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
      expect(library.get(repo)?.workingCopy).toMatchObject({
        branch: `b\ufffd${'n'.repeat(SHOWN.chars - 3)}…`,
        bookmark: 'm\ufffd\ufffdk',
      });
    } finally {
      await library.dispose();
    }
  });
});
