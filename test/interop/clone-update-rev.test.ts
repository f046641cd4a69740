// `clone -u REV` asks the server for REV before the transfer: an unknown name fails at once with
// hg's message and nothing at DEST, against hg serve and sluice serve alike; and sluice serve's
// `lookup` resolves the names hg's does (tags, branches, bookmarks, prefixes, null), since a clone
// now trusts its "unknown revision" answer.

import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../src/main/engine/operations/serve/http-server';
import { runJob } from '../../src/main/engine/job/run-job';
import { JobContext } from '../../src/main/engine/context/job-context';
import type { SluiceEvent } from '../../src/shared/events';
import { hgAsync, missing, removeDir, skipNote, startHgServe, tempDir, type HgServer } from './wire-support';
import { sluice } from './cli-support';

async function hg(args: string[], cwd: string): Promise<string> {
  const r = await hgAsync(args, { cwd });
  if (r.status !== 0) throw new Error(`hg ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

async function lookup(url: string, key: string): Promise<string> {
  const r = await fetch(`${url}?cmd=lookup`, { headers: { 'X-HgArg-1': `key=${encodeURIComponent(key)}` } });
  return Buffer.from(await r.arrayBuffer()).toString('latin1');
}

describe.skipIf(missing('hg'))(`clone -u REV is looked up on the server first${skipNote('hg')}`, () => {
  let work = '';
  let repo = '';
  let hgServer: HgServer | undefined;
  let ours: RunningServer | undefined;

  beforeAll(async () => {
    work = tempDir('update-rev');
    repo = join(work, 'repo');
    await hg(['init', repo], work);
    const commit = async (file: string, msg: string): Promise<void> => {
      writeFileSync(join(repo, file), `${msg}\n`);
      await hg(['commit', '-A', '-q', '-m', msg], repo);
    };
    await commit('a', 'root');
    await hg(['tag', '-q', 'v1.0'], repo);
    await hg(['branch', '-q', 'stable'], repo);
    await commit('b', 'on stable');
    await hg(['update', '-q', 'default'], repo);
    await commit('c', 'default again');
    await hg(['bookmark', '-q', 'mark'], repo);
    hgServer = await startHgServe(repo);
    ours = await startServer({ repo });
  }, 60_000);

  afterAll(async () => {
    hgServer?.stop();
    await ours?.close();
    if (work) removeDir(work);
  });

  it('sluice serve resolves every name hg serve resolves, and words refusals the same', async () => {
    const tip = (await hg(['log', '-r', 'tip', '-T', '{node}'], repo)).slice(0, 6);
    for (const key of ['v1.0', 'stable', 'default', 'mark', 'tip', 'null', '0', '-1', tip, 'nosuch', 'zz9']) {
      expect(await lookup(ours!.url, key), key).toBe(await lookup(hgServer!.url, key));
    }
  });

  for (const which of ['hg serve', 'sluice serve'] as const) {
    const url = (): string => (which === 'hg serve' ? hgServer!.url : ours!.url);

    it(`${which}: an unknown -u fails before any transfer, with nothing at DEST`, async () => {
      const dest = join(work, `unknown-${which.split(' ')[0]}`);
      const events: SluiceEvent[] = [];
      await expect(
        runJob(
          { kind: 'clone', url: url(), dest, updateRev: 'no-such-rev' },
          new JobContext({ sink: (e) => events.push(e) }),
        ),
      ).rejects.toThrow("unknown revision 'no-such-rev'");
      expect(existsSync(dest)).toBe(false);
      // nothing was announced or written: the job stopped at the connect phase
      expect(events.filter((e) => e.type === 'start')).toEqual([]);
      const phases = events.flatMap((e) => (e.type === 'phase' ? [e.phase] : []));
      expect(phases).toEqual(['connect']);

      const cli = await sluice(['clone', '-u', 'no-such-rev', url(), dest]);
      expect(cli.stderr).toBe("abort: unknown revision 'no-such-rev'\n");
      // Sluice's status for a bad request, as when the name is refused after a transfer (hg: 255)
      expect(cli.code).toBe(1);
      expect(existsSync(dest)).toBe(false);
    });

    it(`${which}: a tag, a branch and a bookmark given to -u check out what hg's clone does`, async () => {
      for (const rev of ['v1.0', 'stable', 'mark']) {
        const dest = join(work, `ok-${which.split(' ')[0]}-${rev}`);
        const theirs = join(work, `hg-${which.split(' ')[0]}-${rev}`);
        await runJob({ kind: 'clone', url: url(), dest, updateRev: rev }, new JobContext());
        await hg(['clone', '-q', '-u', rev, url(), theirs], work);
        expect(await hg(['id', '-i', '-b'], dest), rev).toBe(await hg(['id', '-i', '-b'], theirs));
      }
    }, 60_000);
  }
});
