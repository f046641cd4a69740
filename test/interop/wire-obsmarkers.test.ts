// A repository with obsolescence markers, served by `hg serve` and by `sluice serve`: every
// client sees the same outcome from both (hg 6.3.2's bundle2.addpartbundlestream2 and
// streamclone._v2_walk):
// - stream v2 to a client without the bundle2 `obsmarkers` cap (hg's default, Sluice's client):
//   refused with hg's abort;
// - stream v2 to a client with evolution enabled: the obsstore travels with the revlogs;
// - stream v1 (stream_out): served, without the markers.

import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobContext } from '../../src/main/engine/context/job-context';
import { cloneFromUrl } from '../../src/main/engine/operations/clone/clone';
import { startServer, type RunningServer } from '../../src/main/engine/operations/serve/http-server';
import {
  HG_ENV,
  missing,
  skipNote,
  hgAsync,
  removeDir,
  startHgServe,
  storeDigest,
  tempDir,
  type HgServer,
} from './wire-support';

const EVOLVE = ['--config', 'experimental.evolution=all'];
const REFUSED =
  'remote: abort: server has obsolescence markers, but client cannot receive them via stream clone';

describe.skipIf(missing('hg'))(
  `stream clones of a repository with obsolescence markers${skipNote('hg')}`,
  () => {
    let work = '';
    let repo = '';
    const servers: Record<string, { v2: string; v1: string }> = {};
    const hgServers: HgServer[] = [];
    const sluiceServers: RunningServer[] = [];

    beforeAll(async () => {
      work = tempDir('obsmarkers');
      repo = join(work, 'repo');
      mkdirSync(repo);
      const hg = (...args: string[]): string => {
        const r = spawnSync('hg', ['-R', repo, ...args], { env: HG_ENV, encoding: 'utf8' });
        if (r.status !== 0) throw new Error(`hg ${args.join(' ')}: ${r.stderr}`);
        return r.stdout;
      };
      spawnSync('hg', ['init', repo], { env: HG_ENV });
      for (const text of ['a', 'b', 'c']) {
        writeFileSync(join(repo, 'f'), text);
        hg('commit', '-q', '-A', '-m', text, '-u', 't', '-d', '0 0');
      }
      // one marker: the tip is pruned (hidden with evolution on, still in the revlogs)
      hg(...EVOLVE, 'debugobsolete', '-d', '0 0', '-u', 't', hg('log', '-r', 'tip', '-T', '{node}'));
      const v2h = await startHgServe(repo);
      const v1h = await startHgServe(repo, ['server.bundle2.stream=false']);
      hgServers.push(v2h, v1h);
      const v2s = await startServer({ repo });
      const v1s = await startServer({ repo, streamV2: false });
      sluiceServers.push(v2s, v1s);
      servers.hg = { v2: v2h.url, v1: v1h.url };
      servers.sluice = { v2: v2s.url, v1: v1s.url };
    }, 60_000);

    afterAll(async () => {
      for (const s of hgServers) s.stop();
      for (const s of sluiceServers) await s.close();
      if (work) removeDir(work);
    });

    const markers = async (r: string): Promise<string> =>
      (await hgAsync(['-R', r, ...EVOLVE, 'debugobsolete'])).stdout;

    it('hg client, stream v2, evolution off: both servers refuse with hg abort', async () => {
      for (const server of ['hg', 'sluice']) {
        const dest = join(work, `refused-${server}`);
        const r = await hgAsync(['clone', '--stream', '-U', servers[server]!.v2, dest]);
        expect(r.status, `${server}: ${r.stderr}`).toBe(255);
        expect(r.stderr, server).toContain(REFUSED);
        expect(existsSync(dest)).toBe(false);
      }
    });

    it('hg client, stream v2, evolution on: the markers travel; both clones are identical', async () => {
      const dests: string[] = [];
      for (const server of ['hg', 'sluice']) {
        const dest = join(work, `evolve-${server}`);
        const r = await hgAsync(['clone', '--stream', '-U', ...EVOLVE, servers[server]!.v2, dest]);
        expect(r.status, `${server}: ${r.stderr}`).toBe(0);
        expect(r.stdout, server).toContain('7 files to transfer');
        expect((await hgAsync(['-R', dest, ...EVOLVE, 'verify', '-q'])).status).toBe(0);
        dests.push(dest);
      }
      expect(await markers(dests[1]!)).toBe(await markers(repo));
      expect(await markers(dests[1]!)).not.toBe('');
      expect(readFileSync(join(dests[1]!, '.hg', 'store', 'obsstore'))).toEqual(
        readFileSync(join(repo, '.hg', 'store', 'obsstore')),
      );
      expect(storeDigest(dests[1]!)).toEqual(storeDigest(dests[0]!));
    });

    it('stream v1: served without the markers, to hg and to Sluice, like hg serve', async () => {
      for (const server of ['hg', 'sluice']) {
        const dest = join(work, `v1-hg-${server}`);
        const r = await hgAsync(['clone', '--stream', '-U', servers[server]!.v1, dest]);
        expect(r.status, `${server}: ${r.stderr}`).toBe(0);
        expect(existsSync(join(dest, '.hg', 'store', 'obsstore')), server).toBe(false);
        const mine = join(work, `v1-sluice-${server}`);
        const res = await cloneFromUrl(
          { kind: 'clone', url: servers[server]!.v1, dest: mine, stream: 'v1' },
          new JobContext({ fileEvents: false }),
        );
        expect(res.via).toBe('stream-v1');
        expect(existsSync(join(mine, '.hg', 'store', 'obsstore')), server).toBe(false);
        expect(storeDigest(mine)).toEqual(storeDigest(dest));
      }
    });

    it("Sluice's client with obsmarkers (clone --obsmarkers): the source's store, obsstore included", async () => {
      for (const server of ['hg', 'sluice']) {
        const dest = join(work, `sluice-obs-${server}`);
        const ctx = new JobContext({ fileEvents: false });
        const res = await cloneFromUrl(
          { kind: 'clone', url: servers[server]!.v2, dest, stream: 'v2', obsmarkers: true },
          ctx,
        );
        expect(res.via).toBe('stream-v2');
        expect(res.files, server).toBe(7); // what hg's evolution clone transfers, obsstore included
        expect(readFileSync(join(dest, '.hg', 'store', 'obsstore'))).toEqual(
          readFileSync(join(repo, '.hg', 'store', 'obsstore')),
        );
        expect(await markers(dest)).toBe(await markers(repo));
        expect((await hgAsync(['-R', dest, ...EVOLVE, 'verify', '-q'])).status).toBe(0);
        expect(storeDigest(dest)).toEqual(storeDigest(repo));
      }
    });

    it('stream v1 with clone --obsmarkers: the markers come after the stream (OBSMARKERS part, else listkeys obsolete), as hg clone --stream with evolution gets them', async () => {
      // the v1 servers without evolution offer no bundle2 part (listkeys); this one does
      const v1evolve = await startHgServe(repo, [
        'server.bundle2.stream=false',
        'experimental.evolution=all',
      ]);
      try {
        for (const [label, url] of [
          ['hg', servers.hg!.v1],
          ['hg-evolution', v1evolve.url],
          ['sluice', servers.sluice!.v1],
        ] as const) {
          const theirs = join(work, `v1-obs-hg-${label}`);
          const r = await hgAsync(['clone', '--stream', '-U', ...EVOLVE, url, theirs]);
          expect(r.status, `${label}: ${r.stderr}`).toBe(0);
          const ours = join(work, `v1-obs-sluice-${label}`);
          const logs: string[] = [];
          const res = await cloneFromUrl(
            { kind: 'clone', url, dest: ours, stream: 'v1', obsmarkers: true },
            new JobContext({
              fileEvents: false,
              sink: (e) => void (e.type === 'log' && logs.push(e.message)),
            }),
          );
          expect(res.via).toBe('stream-v1');
          expect(logs.includes('fetching remote obsolete markers'), label).toBe(label !== 'hg-evolution');
          const obsstore = readFileSync(join(ours, '.hg', 'store', 'obsstore'));
          expect(obsstore.equals(readFileSync(join(theirs, '.hg', 'store', 'obsstore'))), label).toBe(true);
          expect(await markers(ours), label).toBe(await markers(repo));
          expect((await hgAsync(['-R', ours, ...EVOLVE, 'verify', '-q'])).status).toBe(0);
        }
      } finally {
        v1evolve.stop();
      }
    });

    it('pulls of draft history: a pruned head is hidden by both servers; hg with evolution gets the same markers (listkeys obsolete)', async () => {
      // a non-publishing copy: drafts can be obsolete (public changesets never are)
      const drafts = join(work, 'drafts');
      expect((await hgAsync(['clone', '-q', '-U', repo, drafts])).status).toBe(0);
      writeFileSync(join(drafts, '.hg', 'hgrc'), '[phases]\npublish = False\n');
      expect((await hgAsync(['-R', drafts, 'phase', '-q', '--force', '--draft', '-r', '1:'])).status).toBe(0);
      const hgServe = await startHgServe(drafts);
      const sluiceServe = await startServer({ repo: drafts });
      const logOf = async (r: string): Promise<string> =>
        (await hgAsync(['-R', r, ...EVOLVE, 'log', '--hidden', '-T', '{rev}:{node} {phase}\n'])).stdout;
      try {
        for (const evolve of [false, true]) {
          const got: string[] = [];
          for (const [server, url] of [
            ['hg', hgServe.url],
            ['sluice', sluiceServe.url],
          ]) {
            const dest = join(work, `pull-${server}-${evolve}`);
            const r = await hgAsync(['clone', '--pull', '-U', ...(evolve ? EVOLVE : []), url!, dest]);
            expect(r.status, `${server}: ${r.stderr}`).toBe(0);
            // repoview hides the pruned draft tip, evolution enabled on the server or not
            expect(r.stdout, server).toContain('added 2 changesets');
            got.push(`${await logOf(dest)}|${await markers(dest)}`);
          }
          expect(got[1], `evolution ${evolve}`).toBe(got[0]);
          // neither server offers the bundle2 part (evolution off there): hg's client with
          // evolution takes every marker through listkeys `obsolete` (format 0, base85)
          expect(got[1]!.endsWith('|'), `evolution ${evolve}`).toBe(!evolve);
        }
      } finally {
        hgServe.stop();
        await sluiceServe.close();
      }
    });

    it('listkeys namespaces lists obsolete where markers are exchanged, as hg serve does', async () => {
      const exchanging = join(work, 'exchanging');
      expect((await hgAsync(['clone', '-q', '-U', repo, exchanging])).status).toBe(0);
      writeFileSync(join(exchanging, '.hg', 'hgrc'), '[experimental]\nevolution = all\n');
      const hgServe = await startHgServe(exchanging);
      const sluiceServe = await startServer({ repo: exchanging });
      const namespaces = async (url: string): Promise<string> => {
        const r = await hgAsync(['debugpushkey', url, 'namespaces']);
        expect(r.status, r.stderr).toBe(0);
        return r.stdout;
      };
      try {
        expect(await namespaces(hgServe.url)).toContain('obsolete');
        expect(await namespaces(sluiceServe.url)).toBe(await namespaces(hgServe.url));
        // the repository without evolution: no obsolete namespace from either
        expect(await namespaces(servers.hg!.v2)).not.toContain('obsolete');
        expect(await namespaces(servers.sluice!.v2)).toBe(await namespaces(servers.hg!.v2));
      } finally {
        hgServe.stop();
        await sluiceServe.close();
      }
    });

    it("Sluice's client (no obsmarkers cap, like hg's default): REMOTE_ABORT with hg's message", async () => {
      for (const server of ['hg', 'sluice']) {
        const dest = join(work, `sluice-refused-${server}`);
        const err = await cloneFromUrl(
          { kind: 'clone', url: servers[server]!.v2, dest, stream: 'v2' },
          new JobContext({ fileEvents: false }),
        ).catch((e: unknown) => e);
        expect(err, server).toMatchObject({ code: 'REMOTE_ABORT' });
        expect((err as Error).message, server).toContain(
          'server has obsolescence markers, but client cannot receive them via stream clone',
        );
        expect(existsSync(dest)).toBe(false);
      }
    });
  },
);
