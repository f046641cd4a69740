// sluice serve vs hg serve on a repository with named branches, a merge, a closed branch head and
// (later) a secret changeset: heads, branchmap, known, listkeys phases and the stream capabilities
// must answer the same.

import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../src/main/engine/operations/serve/http-server';
import { hgAsync, missing, skipNote, removeDir, startHgServe, tempDir, type HgServer } from './wire-support';

async function hg(args: string[], cwd: string): Promise<string> {
  const r = await hgAsync(args, { cwd });
  if (r.status !== 0) throw new Error(`hg ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

async function ask(url: string, cmd: string, arg?: string): Promise<string> {
  const r = await fetch(`${url}?cmd=${cmd}`, { headers: arg ? { 'X-HgArg-1': arg } : {} });
  return Buffer.from(await r.arrayBuffer()).toString('latin1');
}

const lines = (s: string): string[] => s.split('\n').filter(Boolean).sort();

describe.skipIf(missing('hg'))(
  `named branches and secret changesets: sluice serve answers like hg serve${skipNote('hg')}`,
  () => {
    let work = '';
    let repo = '';

    beforeAll(async () => {
      work = tempDir('branches');
      repo = join(work, 'repo');
      await hg(['init', repo], work);
      const commit = async (file: string, msg: string, extra: string[] = []): Promise<void> => {
        await hg(['debugsetparents', '.'], repo).catch(() => '');
        const { writeFileSync } = await import('node:fs');
        writeFileSync(join(repo, file), `${msg}\n`);
        await hg(['commit', '-A', '-q', '-m', msg, ...extra], repo);
      };
      await commit('a', 'root');
      await hg(['branch', '-q', 'stable'], repo);
      await commit('b', 'on stable');
      await hg(['update', '-q', 'default'], repo);
      await commit('c', 'default again');
      await hg(['merge', '-q', 'stable'], repo);
      await commit('d', 'merge stable');
      await hg(['branch', '-q', 'feature/é x'], repo);
      await commit('e', 'feature');
      await commit('f', 'close feature', ['--close-branch']);
      await hg(['update', '-q', 'stable'], repo);
      await commit('g', 'stable 2');
      await hg(['bookmark', '-q', 'mark'], repo);
    }, 60_000);

    afterAll(() => {
      if (work) removeDir(work);
    });

    async function compare(hgServer: HgServer, sluice: RunningServer): Promise<void> {
      expect(await ask(sluice.url, 'heads')).toBe(await ask(hgServer.url, 'heads'));
      expect(lines(await ask(sluice.url, 'branchmap'))).toEqual(lines(await ask(hgServer.url, 'branchmap')));
      expect(await ask(sluice.url, 'listkeys', 'namespace=bookmarks')).toBe(
        await ask(hgServer.url, 'listkeys', 'namespace=bookmarks'),
      );
      expect(lines(await ask(sluice.url, 'listkeys', 'namespace=phases'))).toEqual(
        lines(await ask(hgServer.url, 'listkeys', 'namespace=phases')),
      );
      const all = (await hg(['log', '--hidden', '-T', '{node} '], repo)).trim().replace(/ /g, '+');
      expect(await ask(sluice.url, 'known', `nodes=${all}`)).toBe(
        await ask(hgServer.url, 'known', `nodes=${all}`),
      );
      const streamCaps = (c: string): string[] =>
        c
          .split(' ')
          .filter((x) => /^stream|bundle2=/.test(x))
          .map((x) => (x.startsWith('bundle2=') ? String(x.includes('stream%3Dv2')) : x));
      expect(
        streamCaps(await ask(sluice.url, 'capabilities')).filter((x) => x !== 'stream-preferred'),
      ).toEqual(streamCaps(await ask(hgServer.url, 'capabilities')));
    }

    it('publishing, with branches, a merge and a closed head', async () => {
      const h = await startHgServe(repo);
      const s = await startServer({ repo });
      try {
        await compare(h, s);
        expect(await ask(s.url, 'branchmap')).toContain('feature/%C3%A9%20x ');
        // and a stream clone of it is complete
        const dest = join(work, 'clone');
        expect((await hgAsync(['clone', '-q', '--stream', '-U', s.url, dest])).status).toBe(0);
        expect(await hg(['branches', '-c', '-R', dest, '-T', '{branch} {node}\n'], work)).toBe(
          await hg(['branches', '-c', '-T', '{branch} {node}\n'], repo),
        );
      } finally {
        h.stop();
        await s.close();
      }
    });

    it('non-publishing with a secret changeset: no stream caps (bundle2 stream=v2 quirk kept), secret heads hidden', async () => {
      await hg(['phase', '--draft', '--force', '-r', 'all()'], repo);
      await hg(['phase', '--secret', '--force', '-r', 'tip'], repo);
      const h = await startHgServe(repo, ['phases.publish=false']);
      const s = await startServer({ repo, publishing: false });
      try {
        await compare(h, s);
        const caps = await ask(s.url, 'capabilities');
        expect(caps).not.toMatch(/streamreqs|stream-preferred| stream /);
        expect(caps).toContain('stream%3Dv2');
      } finally {
        h.stop();
        await s.close();
      }
    });
  },
);
