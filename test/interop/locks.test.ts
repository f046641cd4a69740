// Sluice and hg writing one repository at once, as hg processes do with each other: a lock held by
// a live hg is waited for with hg's message, given up after ui.timeout with hg's abort (exit 255)
// and nothing written; concurrent pulls both complete and the repository verifies.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobContext } from '../../src/main/engine/context/job-context';
import { lockExists } from '../../src/main/engine/repo/lock';
import { HG_ENV, hgSync, missing, removeDir, skipNote, tempDirMaker } from '../support/env';
import { pullFromUrl } from '../../src/main/engine/operations/pull/pull';
import { treeHash } from './changegroup-support';
import { hgOrThrow as hg, sluice } from './cli-support';

/** What a pull must make equal (the puller's phases are public: the source publishes). */
const logOf = (repo: string): string => hg(['log', '-r', 'all()', '-T', '{node} {branch} {p1node}\n'], repo);

function hgAsync(args: string[], cwd: string): Promise<{ status: number; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('hg', args, { cwd, env: HG_ENV, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('close', (code) => resolve({ status: code ?? 1, stderr }));
  });
}

/** A real hg process holding `.hg/wlock` or `.hg/store/lock` until release() answers its prompt. */
async function holdLock(
  repo: string,
  which: 'wlock' | 'lock',
): Promise<{ pid: number; release(): Promise<void> }> {
  const holder: ChildProcess = spawn(
    'hg',
    ['--config', 'ui.interactive=yes', 'debuglocks', which === 'wlock' ? '--set-wlock' : '--set-lock'],
    { cwd: repo, env: HG_ENV, stdio: ['pipe', 'ignore', 'ignore'] },
  );
  const path = which === 'wlock' ? join(repo, '.hg', 'wlock') : join(repo, '.hg', 'store', 'lock');
  const exited = new Promise<void>((r) => holder.on('close', () => r()));
  for (let i = 0; i < 600 && !lockExists(path); i++) await new Promise((r) => setTimeout(r, 50));
  if (!lockExists(path)) throw new Error(`hg debuglocks never took ${path}`);
  return {
    pid: holder.pid!,
    async release() {
      holder.stdin!.end('y\n');
      await exited;
    },
  };
}

function commit(repo: string, name: string, text: string): void {
  writeFileSync(join(repo, name), text);
  hg(['commit', '-q', '-A', '-m', `${name}: ${text.length}`], repo);
}

describe.skipIf(missing('hg'))(`locks shared with hg${skipNote('hg')}`, () => {
  const tempDir = tempDirMaker('locks');
  let work = '';
  let src = '';
  let bundle = '';

  beforeAll(() => {
    work = tempDir('repos');
    src = join(work, 'src');
    hg(['init', src]);
    for (let i = 0; i < 3; i++) commit(src, `f${i}`, `text ${i}\n`);
    bundle = join(work, 'all.hg');
    hg(['bundle', '-q', '-a', '-t', 'none-v2', bundle], src);
  }, 60_000);
  afterAll(() => work && removeDir(work));

  /** A clone of src's first changeset, its hgrc saying `[ui] timeout = SECONDS` when given. */
  function target(name: string, timeoutSeconds?: number): string {
    const repo = join(work, name);
    hg(['clone', '-q', '-r', '0', src, repo]);
    if (timeoutSeconds !== undefined)
      appendFileSync(join(repo, '.hg', 'hgrc'), `[ui]\ntimeout = ${timeoutSeconds}\n`);
    return repo;
  }

  it("hg's wlock held past ui.timeout: hg's two lines, exit 255, nothing written (pull and update)", async () => {
    const repo = target('wlocked', 1);
    const holder = await holdLock(repo, 'wlock');
    try {
      const before = treeHash(repo);
      // hg itself, told the same absolute path, is the reference
      const theirs = hgSync(['-R', repo, 'pull', src]);
      expect(theirs.status).toBe(255);
      const hgLines = theirs.stderr.split('\n').filter(Boolean);
      expect(hgLines).toEqual([
        expect.stringMatching(
          new RegExp(
            `^waiting for lock on working directory of ${repo} held by process '${holder.pid}' on host '.+'$`,
          ),
        ),
        expect.stringMatching(
          new RegExp(
            `^abort: working directory of ${repo}: timed out waiting for lock held by '.+:${holder.pid}'$`,
          ),
        ),
      ]);
      for (const args of [
        ['pull', repo, src],
        ['update', repo],
      ]) {
        const ours = await sluice(args, { cwd: work });
        expect(ours.code, ours.stderr).toBe(255);
        // the waiting line is a warning on the terminal, as every engine warning
        expect(ours.stderr.split('\n').filter(Boolean)).toEqual([`warning: ${hgLines[0]}`, hgLines[1]]);
      }
      expect(treeHash(repo)).toBe(before);
    } finally {
      await holder.release();
    }
    expect(hgSync(['verify', '-q'], repo).status).toBe(0);
  }, 60_000);

  it("hg's store lock held: apply into the repository is refused naming the repository, nothing written", async () => {
    const repo = target('locked', 1);
    const holder = await holdLock(repo, 'lock');
    try {
      const before = treeHash(repo, /^wlock$/);
      const ours = await sluice(['apply', bundle, repo], { cwd: work });
      expect(ours.code, ours.stderr).toBe(255);
      expect(ours.stderr).toContain(
        `warning: waiting for lock on repository ${repo} held by process '${holder.pid}'`,
      );
      expect(ours.stderr).toMatch(
        new RegExp(`abort: repository ${repo}: timed out waiting for lock held by '.+:${holder.pid}'\\n$`),
      );
      expect(treeHash(repo, /^wlock$/)).toBe(before);
    } finally {
      await holder.release();
    }
  }, 60_000);

  it('a pull waits for the lock, says so, and completes once hg lets go', async () => {
    const repo = target('waits');
    const holder = await holdLock(repo, 'wlock');
    let released: Promise<void> | undefined;
    const ours = await sluice(['pull', repo, src], {
      cwd: work,
      onStderr: (soFar) => {
        if (!released && soFar.includes('waiting for lock on working directory of'))
          released = holder.release();
      },
    });
    await released;
    expect(released, 'sluice never said it waited').toBeDefined();
    expect(ours.code, ours.stderr).toBe(0);
    expect(ours.stderr).toMatch(/warning: got lock after \d+ seconds\n/);
    expect(hgSync(['verify', '-q'], repo).status).toBe(0);
    expect(logOf(repo)).toBe(logOf(src));
  }, 60_000);

  it('20 rounds of hg pull and sluice pull at once into one repository: both complete, it verifies', async () => {
    const source = join(work, 'moving');
    hg(['clone', '-q', src, source]);
    const repo = join(work, 'both');
    hg(['clone', '-q', '-r', '0', src, repo]);
    mkdirSync(join(source, 'd'), { recursive: true });
    for (let round = 0; round < 20; round++) {
      commit(source, `d/r${round % 3}`, `round ${round}\n`.repeat(round + 1));
      commit(source, `g${round % 2}`, `again ${round}\n`);
      const [theirs] = await Promise.all([
        hgAsync(['pull', '-q', source], repo),
        pullFromUrl({ kind: 'pull', repo, source }, new JobContext()),
      ]);
      expect(theirs.status, `round ${round}: ${theirs.stderr}`).toBe(0);
      const v = hgSync(['verify', '-q'], repo);
      expect(v.status, `round ${round}: ${v.stdout}${v.stderr}`).toBe(0);
      expect(logOf(repo), `round ${round}`).toBe(logOf(source));
    }
  }, 300_000);
});

/** The command prefix that runs a command as someone other than root, and who that is. */
function unprivileged(): { wrapper: string[]; uid: number; gid: number } {
  if (process.getuid?.() !== 0) return { wrapper: [], uid: process.getuid!(), gid: process.getgid!() };
  return { wrapper: ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'], uid: 65534, gid: 65534 };
}

describe.skipIf(missing('hg', 'unprivileged'))(
  `a read-only repository is refused at lock time, as hg does${skipNote('hg', 'unprivileged')}`,
  () => {
    const tempDir = tempDirMaker('locks-readonly');
    let work = '';
    let src = '';
    beforeAll(() => {
      work = tempDir('repos');
      src = join(work, 'src');
      hg(['init', src]);
      commit(src, 'a', 'a\n');
      commit(src, 'b', 'b\n');
    }, 60_000);
    afterAll(() => work && removeDir(work));

    for (const [dir, desc] of [
      ['.hg', 'working directory of'],
      ['.hg/store', 'repository'],
    ] as const) {
      it(`${dir} not writable: "could not lock ${desc} R: Permission denied", exit 255, nothing written`, async () => {
        const who = unprivileged();
        const repo = join(work, dir.replace(/\W/g, ''));
        hg(['clone', '-q', '-r', '0', src, repo]);
        // everything the other user needs to read, its own (hg trusts only its own hgrc), then
        // the one directory made read-only
        chmodSync(work, 0o755);
        for (const p of [work, src, repo]) spawnSync('chown', ['-R', `${who.uid}:${who.gid}`, p]);
        chmodSync(join(repo, dir), 0o555);
        try {
          const before = treeHash(repo);
          const env = { HOME: work, HGUSER: 'Test <test@example.com>', HGPLAIN: '1', HGRCPATH: '' };
          const [cmd, ...pre] = [...who.wrapper, 'hg'];
          const theirs = spawnSync(cmd!, [...pre, '-R', repo, 'pull', src], {
            env: { ...process.env, ...env },
            encoding: 'utf8',
          });
          expect(theirs.status).toBe(255);
          expect(theirs.stderr).toBe(`abort: could not lock ${desc} ${repo}: Permission denied\n`);
          const ours = await sluice(['pull', repo, src], { cwd: work, env, wrapper: who.wrapper });
          expect(ours.code, ours.stderr).toBe(255);
          expect(ours.stderr).toBe(theirs.stderr);
          // refused before discovery: nothing came in, not even `no changes found`
          expect(ours.stdout).toBe(`pulling from ${src}\n`);
          expect(treeHash(repo)).toBe(before);
        } finally {
          chmodSync(join(repo, dir), 0o755);
        }
      }, 60_000);
    }
  },
);
