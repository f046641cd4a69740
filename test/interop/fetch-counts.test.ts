// A library row's fetch (operations/fetch): its incoming and outgoing counts against what hg
// incoming and hg outgoing list, over hg serve and a local path, with diverged histories, a
// secret changeset (hg outgoing leaves it out), changesets made obsolete by an amend and a prune
// (hidden: hg outgoing leaves them out too) and nothing new either way.

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hgSync, missing, removeDir, skipNote, tempDirMaker } from '../support/env';
import { hgOrThrow as hg } from './cli-support';
import { startHgServe, type HgServer } from './wire-support';
import { JobContext } from '../../src/main/engine/context/job-context';
import { fetchCounts } from '../../src/main/engine/operations/fetch/fetch';

/** hg incoming/outgoing -q: one line per changeset; exit 1 (nothing) is a count of 0. */
function hgCount(cmd: 'incoming' | 'outgoing', repo: string, source?: string): number {
  const r = hgSync(['-R', repo, cmd, '-q', ...(source ? [source] : [])]);
  if (r.status !== 0 && r.status !== 1) throw new Error(`hg ${cmd} failed: ${r.stderr}`);
  return r.stdout.split('\n').filter(Boolean).length;
}

function commit(repo: string, file: string, text: string, extra: string[] = []): void {
  writeFileSync(join(repo, file), text);
  hg(['commit', '-q', '-A', '-m', `${file} ${text.length}`, ...extra], repo);
}

describe.skipIf(missing('hg'))(`fetch counts agree with hg incoming and hg outgoing${skipNote('hg')}`, () => {
  const tempDir = tempDirMaker('fetch-counts');
  let work = '';
  let upstream = '';
  let server: HgServer | undefined;
  let accessLog = '';
  const requests = (): string[] =>
    readFileSync(accessLog, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => /cmd=(\w+)/.exec(l)?.[1] ?? l);

  beforeAll(async () => {
    work = tempDir('repos');
    upstream = join(work, 'upstream');
    hg(['init', upstream]);
    for (let i = 0; i < 4; i++) commit(upstream, `f${i}.txt`, `base ${i}\n`);
    accessLog = join(work, 'access.log');
    server = await startHgServe(upstream, ['phases.publish=False', `web.accesslog=${accessLog}`]);
  });
  afterAll(() => {
    server?.stop();
    removeDir(work);
  });

  const counts = (repo: string, source?: string) =>
    fetchCounts({ repo, ...(source !== undefined && { source }) }, new JobContext());

  it('diverged both ways over HTTP: the counts are hg incoming -q and hg outgoing -q line counts', async () => {
    const b = join(work, 'b');
    hg(['clone', '-q', server!.url, b]);
    commit(upstream, 'up1.txt', 'remote 1\n');
    commit(upstream, 'up2.txt', 'remote 2\n');
    hg(['branch', '-q', 'side'], upstream);
    commit(upstream, 'up3.txt', 'remote 3\n');
    commit(b, 'mine1.txt', 'local 1\n');
    hg(['update', '-q', '-r', '1'], b);
    commit(b, 'mine2.txt', 'local 2\n');
    commit(b, 'mine3.txt', 'local 3\n');
    const got = await counts(b);
    expect(got.incoming).toBe(hgCount('incoming', b));
    expect(got.outgoing).toBe(hgCount('outgoing', b));
    expect([got.incoming, got.outgoing]).toEqual([3, 3]);
    expect(got.source).toBe(server!.url);
  });

  it('a secret changeset is not outgoing, as hg outgoing leaves it out', async () => {
    const c = join(work, 'c');
    hg(['clone', '-q', upstream, c]);
    commit(c, 'draft.txt', 'draft\n');
    commit(c, 'secret.txt', 'secret\n', ['--secret']);
    const got = await counts(c);
    expect(got.outgoing).toBe(hgCount('outgoing', c));
    expect(got.outgoing).toBe(1);
    expect(got.incoming).toBe(0);
  });

  it('obsolete changesets (amended, pruned) are not outgoing, as hg outgoing leaves them out', async () => {
    const g = join(work, 'g');
    hg(['clone', '-q', server!.url, g]);
    const evolve = ['--config', 'experimental.evolution.createmarkers=true'];
    commit(g, 'draft1.txt', 'draft 1\n');
    commit(g, 'draft2.txt', 'draft 2\n');
    // the amend obsoletes draft2's first version (hidden: nothing pins it)
    writeFileSync(join(g, 'draft2.txt'), 'draft 2 amended\n');
    hg([...evolve, 'commit', '-q', '--amend', '-m', 'amended'], g);
    const amended = hg(['log', '-r', '.', '-T', '{node}'], g).trim();
    // a side head, pruned by a marker without successors
    hg(['update', '-q', '-r', '3'], g);
    commit(g, 'side.txt', 'side\n');
    const side = hg(['log', '-r', '.', '-T', '{node}'], g).trim();
    hg(['update', '-q', '-r', amended], g);
    hg([...evolve, 'debugobsolete', '-q', side], g);
    // an obsolete changeset the working copy sits on stays visible, and outgoing
    commit(g, 'pinned.txt', 'pinned\n');
    const pinned = hg(['log', '-r', '.', '-T', '{node}'], g).trim();
    hg([...evolve, 'debugobsolete', '-q', pinned], g);
    // hg's own view: three obsolete changesets, one of them pinned by the working copy
    expect(hg(['log', '-r', 'obsolete()', '-T', '.', '--hidden'], g)).toBe('...');
    expect(hg(['log', '-r', 'hidden()', '-T', '.', '--hidden'], g)).toBe('..');
    const got = await counts(g);
    expect(got.outgoing).toBe(hgCount('outgoing', g));
    expect(got.outgoing).toBe(3); // draft1, draft2 amended, pinned
    expect(got.incoming).toBe(hgCount('incoming', g));
    expect(got.localHeads).not.toContain(side);
  });

  it('nothing new either way: zero both, and a repeat with the same heads reuses the incoming count', async () => {
    const d = join(work, 'd');
    hg(['clone', '-q', server!.url, d]);
    const first = await counts(d);
    expect([first.incoming, first.outgoing]).toEqual([0, 0]);
    expect(hgCount('incoming', d)).toBe(0);
    expect(hgCount('outgoing', d)).toBe(0);
    // behind the server: the second fetch with the first's heads takes its count from them
    const e = join(work, 'e');
    hg(['clone', '-q', '-r', '2', server!.url, e]);
    const behind = await counts(e);
    expect(behind.incoming).toBe(hgCount('incoming', e));
    const again = await fetchCounts({ repo: e, previous: { ...behind, incoming: 999 } }, new JobContext());
    expect(again.incoming).toBe(999);
    commit(e, 'new.txt', 'new\n');
    const moved = await fetchCounts({ repo: e, previous: { ...behind, incoming: 999 } }, new JobContext());
    expect(moved.incoming).toBe(hgCount('incoming', e));
    expect(moved.outgoing).toBe(hgCount('outgoing', e));
  });

  it('nothing new, asked again: one request (the heads + known batch), the capabilities remembered', async () => {
    const f = join(work, 'f');
    hg(['clone', '-q', server!.url, f]);
    const first = await counts(f);
    const before = requests().length;
    const again = await fetchCounts({ repo: f, previous: first }, new JobContext());
    expect([again.incoming, again.outgoing]).toEqual([0, 0]);
    expect(requests().slice(before)).toEqual(['batch']);
  });
});
