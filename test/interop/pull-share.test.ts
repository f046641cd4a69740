// `sluice pull` into a repository made with `hg share -B` (its `.hg/shared` lists `bookmarks`):
// the bookmarks are the share source's (store/requirements.ts bookmarksPath, the one definition
// `sluice update` and `sluice serve` read too), and a pull writes them as hg's share extension
// does (recordchange/writerepo): the share's own `.hg/bookmarks` in the transaction, then the
// source's under its wlock. Checked against `hg pull` into a twin share.

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobContext } from '../../src/main/engine/context/job-context';
import { pullFromUrl } from '../../src/main/engine/operations/pull/pull';
import { hgOk, verifyOf } from './pull-support';
import { missing, removeDir, skipNote, startHgServe, tempDir, type HgServer } from './wire-support';

const SHARE = ['--config', 'extensions.share='];

describe.skipIf(missing('hg'))(
  `sluice pull into a share with shared bookmarks (hg share -B)${skipNote('hg')}`,
  () => {
    let work = '';
    let server: HgServer | undefined;

    beforeAll(async () => {
      work = tempDir('pull-share');
      const up = join(work, 'up');
      await hgOk(['init', up], work);
      for (const [text, mark] of [
        ['a', ''],
        ['b', 'm1'],
        ['c', 'm2'],
      ] as const) {
        writeFileSync(join(up, 'f'), text);
        await hgOk(['commit', '-q', '-A', '-m', text, '-u', 't', '-d', '0 0'], up);
        if (mark) await hgOk(['bookmark', '-q', '-r', '.', mark], up);
      }
      server = await startHgServe(up);
    }, 60_000);
    afterAll(() => {
      server?.stop();
      if (work) removeDir(work);
    });

    /** A clone of the first changeset with a bookmark of its own, and a share -B of it. */
    async function sourceAndShare(label: string): Promise<{ src: string; share: string }> {
      const src = join(work, `${label}-src`);
      const share = join(work, `${label}-share`);
      await hgOk(['clone', '-q', '-r', '0', server!.url, src], work);
      await hgOk([...SHARE, 'share', '-q', '-U', '-B', src, share], work);
      // made in the source after the share: only the source's .hg/bookmarks knows it, as m1 there
      await hgOk(['-R', src, 'bookmark', '-q', '-r', '0', 'local'], work);
      await hgOk(['-R', src, 'bookmark', '-q', '-r', '0', 'm1'], work);
      expect(readFileSync(join(share, '.hg', 'shared'), 'latin1').split('\n')).toContain('bookmarks');
      return { src, share };
    }

    it("pull writes the pulled bookmarks where hg pull does: the source's .hg/bookmarks and the share's own", async () => {
      const ours = await sourceAndShare('sluice');
      const theirs = await sourceAndShare('hg');
      const out = await pullFromUrl(
        { kind: 'pull', repo: ours.share, source: server!.url },
        new JobContext(),
      );
      expect(out.changesets).toBe(2);
      expect(out.bookmarksChanged).toBe(2); // m1 advanced, m2 added; `local` kept
      await hgOk([...SHARE, '-R', theirs.share, 'pull', '-q', server!.url], work);

      const marks = await hgOk(['-R', ours.src, 'bookmarks'], work);
      expect(marks).toMatch(/^ {3}local +0:/m);
      expect(marks).toMatch(/^ {3}m1 +1:/m);
      expect(marks).toMatch(/^ {3}m2 +2:/m);
      expect(marks).toBe(await hgOk(['-R', theirs.src, 'bookmarks'], work));
      expect(await hgOk([...SHARE, '-R', ours.share, 'bookmarks'], work)).toBe(marks);
      for (const dir of ['src', 'share'] as const) {
        const file = (r: { src: string; share: string }): Buffer =>
          readFileSync(join(r[dir], '.hg', 'bookmarks'));
        expect(file(ours).equals(file(theirs)), `${dir}/.hg/bookmarks`).toBe(true);
      }
      // the source's wlock was taken and given back
      expect(existsSync(join(ours.src, '.hg', 'wlock'))).toBe(false);
      const v = await verifyOf(ours.src);
      expect(v.status, v.stdout + v.stderr).toBe(0);
    });
  },
);
