// A library row's fetch (operations/fetch): its incoming and outgoing counts against what hg
// incoming and hg outgoing list, over hg serve and a local path, with diverged histories, a
// secret changeset (hg outgoing leaves it out) and nothing new either way.

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
