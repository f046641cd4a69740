// kill -9 in the middle of a changegroup transaction: the journal and the dead process's lock stay
// behind; the next Sluice run (or `hg recover`) rolls the journal back, and the repository is
// byte-identical to before, passes `hg verify`, and takes the bundle cleanly afterwards.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyBundleBytesToRepo } from '../../src/main/engine/changegroup';
import { readAhead } from '../../src/main/engine/operations/apply/apply-stream-bundle';
import { JobContext } from '../../src/main/engine/context/job-context';
import { lockExists } from '../../src/main/engine/repo/lock';
import { RepoWriteSession } from '../../src/main/engine/repo/write-session';
import { missing, skipNote } from '../support/env';
import { copyRepo, hg, logOf, makeBundle, makeSourceRepo, treeHash, verifyOk } from './changegroup-support';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CHILD = fileURLToPath(new URL('./changegroup-kill-child.ts', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'sluice-cg-kill-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

let base = '';
let bundle = '';

/** Runs the child until it has written part of the changegroup, then kills it with SIGKILL. */
async function crashMidApply(repo: string): Promise<void> {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, repo, bundle], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    let err = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('writing\n')) resolve();
    });
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    child.on('exit', (code) => reject(new Error(`child exited (${code}) early: ${out} ${err}`)));
  });
  const exited = new Promise((r) => child.on('exit', r));
  child.kill('SIGKILL');
  await exited;
}

describe.skipIf(missing('hg'))(`kill -9 mid-transaction${skipNote('hg')}`, () => {
  beforeAll(() => {
    const src = makeSourceRepo(join(work, 'src'));
    base = join(work, 'base');
    hg(['clone', '-q', '-U', '-r', '1', src, base]);
    bundle = makeBundle(src, 'none-v2', join(work, 'all.hg'));
  });

  it('the next Sluice run rolls the journal back: byte-identical, then the bundle applies', async () => {
    const repo = copyRepo(base, join(work, 'sluice-recovers'));
    const before = treeHash(repo);
    const log = logOf(repo);
    await crashMidApply(repo);
    expect(existsSync(join(repo, '.hg/store/journal'))).toBe(true);
    expect(lockExists(join(repo, '.hg/store/lock'))).toBe(true);
    // hg refuses to write until the journal is dealt with
    const session = await RepoWriteSession.open(repo, { lockTimeoutMs: 5000 });
    await session.abort();
    expect(treeHash(repo)).toBe(before);
    expect(logOf(repo)).toBe(log);
    const r = await applyBundleBytesToRepo(repo, readAhead(bundle), new JobContext());
    expect(r.changesets).toBe(4);
    expect(verifyOk(repo).ok).toBe(true);
  });

  it('hg recover rolls back a journal Sluice left', async () => {
    const repo = copyRepo(base, join(work, 'hg-recovers'));
    const log = logOf(repo);
    await crashMidApply(repo);
    expect(hg(['recover'], repo)).toMatch(/rolling back interrupted transaction/);
    const v = verifyOk(repo);
    expect(v.ok, v.out).toBe(true);
    expect(logOf(repo)).toBe(log);
    expect(existsSync(join(repo, '.hg/store/journal'))).toBe(false);
  });
});
