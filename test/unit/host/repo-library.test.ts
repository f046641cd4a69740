import { afterEach, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RepoLibrary } from '../../../src/main/host/repo-library';
import { readRepoSummary, type RepoSummary } from '../../../src/main/host/repo-summary';
import { HG_ENV, hgSync, missing, removeDir, skipNote, tempDirMaker } from '../../support/env';
import type { LibraryUpdate } from '../../../src/shared/library';

const makeTempDir = tempDirMaker('library');
const cleanup: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

function hg(cwd: string, ...args: string[]): void {
  const r = hgSync(args, cwd);
  if (r.status !== 0) throw new Error(`hg ${args.join(' ')}: ${r.stderr}`);
}

/** hg in a child process that does not block this event loop (the watcher must see it live). */
function hgAsync(cwd: string, ...args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('hg', args, { cwd, env: HG_ENV, stdio: 'ignore' });
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`hg ${args.join(' ')} exited ${code}`)),
    );
  });
}

async function until(what: string, cond: () => boolean, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function setup(label: string) {
  const dir = makeTempDir(label);
  cleanup.push(() => removeDir(dir));
  const reads = new Map<string, number>();
  const updates: LibraryUpdate[] = [];
  const open = (opts: { pollMs?: number; useEvents?: boolean } = {}) => {
    const library = new RepoLibrary({
      file: join(dir, 'data', 'library.json'),
      onUpdate: (u) => updates.push(u),
      read: async (root): Promise<RepoSummary> => {
        reads.set(root, (reads.get(root) ?? 0) + 1);
        return readRepoSummary(root);
      },
      watch: {
        debounceMs: 50,
        pollMs: opts.pollMs ?? 400,
        ...(opts.useEvents !== undefined && { useEvents: opts.useEvents }),
      },
      batchMs: 20,
    });
    cleanup.push(() => library.dispose());
    return library;
  };
  const total = () => [...reads.values()].reduce((a, b) => a + b, 0);
  return { dir, reads, updates, open, total };
}

describe.skipIf(missing('hg'))(`repository library${skipNote('hg')}`, () => {
  it('200 repositories: one hg commit in one of them is exactly one re-read, of that one', async () => {
    const { dir, reads, open, total } = setup('200');
    const seed = join(dir, 'repos', 'r000');
    mkdirSync(join(dir, 'repos'));
    hg(join(dir, 'repos'), 'init', 'r000');
    writeFileSync(join(seed, 'a.txt'), 'a\n');
    hg(seed, 'commit', '-A', '-m', 'seed', '-d', '1700000000 0');
    const roots = [seed];
    for (let i = 1; i < 200; i++) {
      const root = join(dir, 'repos', `r${String(i).padStart(3, '0')}`);
      cpSync(seed, root, { recursive: true });
      roots.push(root);
    }
    const library = open();
    await Promise.all(roots.map((root) => library.add(root, 'user')));
    await until('the first read of every repository', () => total() === 200, 30_000);
    // several polls pass: none re-reads an unchanged repository
    await new Promise((r) => setTimeout(r, 1200));
    await library.settled();
    expect(total()).toBe(200);

    const target = roots[137]!;
    writeFileSync(join(target, 'a.txt'), 'changed\n');
    await hgAsync(target, 'commit', '-m', 'outside Sluice', '-d', '1700000100 0');
    await until('the re-read of the committed repository', () => reads.get(target) === 2);
    // events, the lock release and polls keep coming for a while: still one read
    await new Promise((r) => setTimeout(r, 1200));
    await library.settled();
    expect(total()).toBe(201);
    expect(reads.get(target)).toBe(2);
    const row = (await library.list()).find((r) => r.path === target)!;
    expect(row.tip).toMatchObject({ rev: 1, summary: 'outside Sluice' });
    expect(row.parent).toMatchObject({ rev: 1 });
  });

  it('shows a repository that disappears as missing, and recovers when it returns (poll only)', async () => {
    const { dir, updates, open } = setup('missing');
    hg(dir, 'init', 'repo');
    const repo = join(dir, 'repo');
    const library = open({ pollMs: 100, useEvents: false });
    await library.add(repo, 'user');
    await until('the first read', () => library.get(repo)?.status === 'ok');
    expect(library.get(repo)).toMatchObject({ tip: null, parent: null, name: 'repo' });
    renameSync(repo, join(dir, 'moved'));
    await until('missing', () => library.get(repo)?.status === 'missing');
    expect(library.get(repo)?.problem).toContain('is gone');
    renameSync(join(dir, 'moved'), repo);
    await until('back', () => library.get(repo)?.status === 'ok');
    expect(updates.flatMap((u) => u.rows.map((r) => r.status))).toEqual(
      expect.arrayContaining(['ok', 'missing']),
    );
  });

  it('persists the list, refuses a folder that is not a repository, and removes', async () => {
    const { dir, open } = setup('persist');
    hg(dir, 'init', 'repo');
    const repo = join(dir, 'repo');
    const a = open();
    await a.add(repo, 'clone', 1234);
    await expect(a.add(dir, 'user')).rejects.toMatchObject({ code: 'NOT_A_REPO' });
    await a.dispose();
    const b = open();
    expect(await b.list()).toMatchObject([{ path: repo, origin: 'clone', lastPullAt: 1234 }]);
    expect(b.has(repo)).toBe(true);
    await b.remove(repo);
    await b.dispose();
    expect(await open().list()).toEqual([]);
  });
});
