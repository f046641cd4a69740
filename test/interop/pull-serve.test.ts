// hg pulling from sluice serve: `hg clone --pull`, plain `hg clone` from a server that allows no
// stream, and an incremental `hg pull` (clone -r at a middle changeset, then the rest), on a
// non-publishing repository with drafts, a secret changeset and bookmarks. Each result is
// compared with what the same hg commands get from hg serve: verify passes, same nodes, phases
// and bookmarks, and the secret changeset stays behind.

import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../src/main/engine/operations/serve/http-server';
import { missing, removeDir, skipNote, startHgServe, tempDir, type HgServer } from './wire-support';
import { hgOk, logOf, makeHistoryRepo, verifyOf, type HistoryRepo } from './pull-support';

describe.skipIf(missing('hg'))('hg pulls from sluice serve as from hg serve' + skipNote('hg'), () => {
  let work = '';
  let src: HistoryRepo;
  let hgServe: HgServer;
  let sluice: RunningServer;
  let sluiceNoStream: RunningServer;

  beforeAll(async () => {
    work = tempDir('pull-serve');
    src = await makeHistoryRepo(work, { phases: true });
    hgServe = await startHgServe(src.path, ['server.uncompressed=false']);
    sluice = await startServer({ repo: src.path });
    sluiceNoStream = await startServer({ repo: src.path, uncompressed: false });
  }, 120_000);
  afterAll(async () => {
    hgServe?.stop();
    await sluice?.close();
    await sluiceNoStream?.close();
    if (work) removeDir(work);
  });

  async function cloneBoth(label: string, args: string[], sluiceUrl: string): Promise<[string, string]> {
    const a = join(work, `${label}-hg`);
    const b = join(work, `${label}-sluice`);
    await hgOk(['clone', '-q', '-U', ...args, hgServe.url, a], work);
    await hgOk(['clone', '-q', '-U', ...args, sluiceUrl, b], work);
    return [a, b];
  }

  async function expectSame(a: string, b: string): Promise<void> {
    const v = await verifyOf(b);
    expect(v.stdout + v.stderr).toBe('');
    expect(v.status).toBe(0);
    expect(await logOf(b)).toBe(await logOf(a));
  }

  it('hg clone --pull: same changesets, phases and bookmarks; the secret stays behind', async () => {
    const [a, b] = await cloneBoth('pull', ['--pull'], sluice.url);
    await expectSame(a, b);
    const log = await logOf(b);
    expect(log).toMatch(/ draft \n/);
    expect(log).toMatch(/ public other\n/);
    expect(log.trim().split('\n').length).toBe(
      (await logOf(src.path, 'not secret()')).trim().split('\n').length,
    );
  }, 60_000);

  it('hg clone from a sluice serve without stream clones pulls', async () => {
    const [a, b] = await cloneBoth('nostream', [], sluiceNoStream.url);
    await expectSame(a, b);
  }, 60_000);

  it('hg pull of an incremental range (clone -r middle, then pull the rest)', async () => {
    const [a, b] = await cloneBoth('incr', ['-r', src.middle], sluice.url);
    await expectSame(a, b);
    await hgOk(['-R', a, 'pull', '-q', hgServe.url], work);
    await hgOk(['-R', b, 'pull', '-q', sluice.url], work);
    await expectSame(a, b);
    // nothing left: a second pull finds no changes
    const again = await hgOk(['-R', b, 'pull', sluice.url], work);
    expect(again).toContain('no changes found');
  }, 90_000);
});
