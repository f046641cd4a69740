// Sluice's client pulling from hg serve (and sluice serve): the fallback to a pull clone when the
// server allows no stream, clone --pull, an incremental pull into a clone made at a middle
// changeset (SOURCE from paths.default), --incoming, and a changegroup clone bundle followed by a
// pull of what it lacks. Each result passes hg verify and equals what hg itself gets from the
// same server: nodes, phases and bookmarks.

import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SluiceEvent } from '../../src/shared/events';
import { JobContext } from '../../src/main/engine/context/job-context';
import { cloneFromUrl } from '../../src/main/engine/operations/clone/clone';
import { pullFromUrl } from '../../src/main/engine/operations/pull/pull';
import { startServer, type RunningServer } from '../../src/main/engine/operations/serve/http-server';
import { missing, removeDir, skipNote, startHgServe, tempDir, type HgServer } from './wire-support';
import { hgOk, logOf, makeHistoryRepo, verifyOf, type HistoryRepo } from './pull-support';

function context(): { ctx: JobContext; events: SluiceEvent[]; logs: () => string } {
  const events: SluiceEvent[] = [];
  const ctx = new JobContext({ sink: (e) => events.push(e) });
  const logs = (): string =>
    events
      .filter((e) => e.type === 'log')
      .map((e) => (e as { message: string }).message)
      .join('\n');
  return { ctx, events, logs };
}

describe.skipIf(missing('hg'))(
  'sluice clone --pull and sluice pull against hg serve' + skipNote('hg'),
  () => {
    let work = '';
    let src: HistoryRepo;
    let noStream: HgServer;
    let withStream: HgServer;
    let sluice: RunningServer;

    beforeAll(async () => {
      work = tempDir('pull-client');
      src = await makeHistoryRepo(work, { phases: true });
      noStream = await startHgServe(src.path, ['server.uncompressed=false']);
      withStream = await startHgServe(src.path);
      sluice = await startServer({ repo: src.path });
    }, 120_000);
    afterAll(async () => {
      noStream?.stop();
      withStream?.stop();
      await sluice?.close();
      if (work) removeDir(work);
    });

    async function hgReference(label: string, url: string, extra: string[] = []): Promise<string> {
      const ref = join(work, `ref-${label}`);
      await hgOk(['clone', '-q', '-U', '--pull', ...extra, url, ref], work);
      return ref;
    }

    async function expectLike(repo: string, ref: string): Promise<void> {
      const v = await verifyOf(repo);
      expect(v.stdout + v.stderr).toBe('');
      expect(v.status).toBe(0);
      expect(await logOf(repo)).toBe(await logOf(ref));
    }

    it('a server without stream clones is cloned with the pull protocol', async () => {
      const dest = join(work, 'fallback');
      const { ctx, events, logs } = context();
      const res = await cloneFromUrl({ kind: 'clone', url: noStream.url, dest }, ctx);
      expect(res.via).toBe('pull');
      expect(logs()).toContain('cloning with the pull protocol');
      for (const phase of ['discovery', 'changesets', 'manifests', 'files'])
        expect(events.some((e) => e.type === 'phase' && e.phase === phase)).toBe(true);
      await expectLike(dest, await hgReference('fallback', noStream.url));
      expect((await hgOk(['-R', dest, 'paths', 'default'], work)).trim()).toBe(noStream.url);
    }, 90_000);

    it('clone --pull from a server that offers stream clones, and from sluice serve', async () => {
      const ref = await hgReference('pull', withStream.url);
      for (const [label, url] of [
        ['hg', withStream.url],
        ['sluice', sluice.url],
      ] as const) {
        const dest = join(work, `pull-${label}`);
        const res = await cloneFromUrl({ kind: 'clone', url, dest, pull: true }, context().ctx);
        expect(res.via).toBe('pull');
        await expectLike(dest, ref);
      }
    }, 90_000);

    it('pull of an incremental range into a clone at a middle changeset (SOURCE = paths.default); --incoming counts first', async () => {
      const mine = join(work, 'incr');
      const ref = join(work, 'incr-ref');
      for (const d of [mine, ref]) await hgOk(['clone', '-q', '-U', '-r', src.middle, noStream.url, d], work);
      await hgOk(['-R', ref, 'pull', '-q'], work);
      const want =
        (await logOf(ref)).trim().split('\n').length - (await logOf(mine)).trim().split('\n').length;

      const probe = context();
      const inc = await pullFromUrl({ kind: 'pull', repo: mine, incoming: true }, probe.ctx);
      expect(inc.incoming).toBe(want);
      expect(inc.changesets).toBe(0);

      const { ctx, logs } = context();
      const out = await pullFromUrl({ kind: 'pull', repo: mine }, ctx);
      expect(out.changesets).toBe(want);
      expect(logs()).toContain('searching for changes');
      await expectLike(mine, ref);

      const again = context();
      const none = await pullFromUrl({ kind: 'pull', repo: mine, source: sluice.url }, again.ctx);
      expect(none).toMatchObject({ upToDate: true, changesets: 0 });
      expect(again.logs()).toContain('no changes found');
      await expectLike(mine, ref);
    }, 120_000);

    it('a changegroup clone bundle (gzip-v2) is applied, then what it lacks is pulled', async () => {
      const bundle = join(work, 'partial.hg');
      await hgOk(
        ['-R', src.path, 'bundle', '-q', '-t', 'gzip-v2', '-r', src.middle, '--base', 'null', bundle],
        work,
      );
      // served over http by sluice serve (stream clones off, so only the pull path can use it)
      const withBundle = await startServer({
        repo: src.path,
        uncompressed: false,
        cloneBundles: { manifest: '', files: [{ path: bundle, spec: 'gzip-v2' }] },
      });
      try {
        const dest = join(work, 'viabundle');
        const { ctx, logs } = context();
        const res = await cloneFromUrl({ kind: 'clone', url: withBundle.url, dest }, ctx);
        expect(res.via).toBe('clone-bundle');
        expect(logs()).toContain('finished applying clone bundle');
        // what hg gets from the same bundle then a pull: the bundle's changesets come first
        const ref = join(work, 'viabundle-ref');
        await hgOk(['clone', '-q', '-U', '-r', src.middle, noStream.url, ref], work);
        await hgOk(['-R', ref, 'pull', '-q'], work);
        await expectLike(dest, ref);
      } finally {
        await withBundle.close();
      }
    }, 120_000);
  },
);
