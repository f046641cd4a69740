// A repository with the shapes a changegroup has to carry (merges, a named branch, copies and
// renames, an exec bit, a symlink, binary data, a removal, a large file past the inline limit,
// bookmarks, drafts and a secret), made by real hg, and the comparison every pull test makes.

import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hgAsync, type RunResult } from './wire-support';

async function hg(args: string[], cwd: string): Promise<string> {
  const r = await hgAsync(args, { cwd });
  if (r.status !== 0) throw new Error(`hg ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

export interface HistoryRepo {
  path: string;
  /** node of the changeset a partial clone stops at (a public changeset in the middle) */
  middle: string;
}

/**
 * 40-odd changesets: a debugbuilddag history (merges, mergeable and overwritten files), then hand
 * commits with copies, a rename, flags and a big file; `mark` and `other` bookmarks. With
 * `phases`, the repository is non-publishing: the last two changesets are draft and one more
 * child is secret.
 */
export async function makeHistoryRepo(dir: string, opts: { phases?: boolean } = {}): Promise<HistoryRepo> {
  const path = join(dir, 'src');
  await hg(['init', path], dir);
  if (opts.phases) writeFileSync(join(path, '.hg', 'hgrc'), '[phases]\npublish = False\n');
  await hg(
    [
      'debugbuilddag',
      '--mergeable-file',
      '--new-file',
      '--overwritten-file',
      '+3:a *a/2 +2 /3 +4 <a +2 /5 +3',
    ],
    path,
  );
  await hg(['update', '-q', 'tip'], path);
  await hg(['phase', '-q', '--public', '-r', 'all()'], path);
  const middle = (await hg(['log', '-r', 'tip', '-T', '{node}'], path)).trim();
  const w = (name: string, data: string | Buffer): void => {
    mkdirSync(join(path, name, '..'), { recursive: true });
    writeFileSync(join(path, name), data);
  };
  const commit = (msg: string): Promise<string> => hg(['commit', '-q', '-A', '-m', msg], path);
  w('dir/a.txt', 'alpha\n'.repeat(50));
  w('dir/b.bin', Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 7) & 0xff)));
  w('run.sh', '#!/bin/sh\necho hi\n');
  await hg(['add', 'run.sh'], path);
  await commit('files');
  chmodSync(join(path, 'run.sh'), 0o755);
  await commit('exec bit');
  symlinkSync('dir/a.txt', join(path, 'link'));
  await commit('symlink');
  await hg(['copy', 'dir/a.txt', 'dir/c.txt'], path);
  w('dir/c.txt', 'alpha\n'.repeat(50) + 'copied\n');
  await commit('copy');
  await hg(['rename', 'dir/b.bin', 'moved.bin'], path);
  await commit('rename');
  w('big.txt', Array.from({ length: 20000 }, (_, i) => `line ${i} ${'x'.repeat(i % 17)}\n`).join(''));
  await commit('big file');
  for (let i = 0; i < 6; i++) {
    w(
      'big.txt',
      Array.from({ length: 20000 }, (_, j) => `line ${j} ${j % 500 === i ? 'changed' : ''}\n`).join(''),
    );
    w('dir/a.txt', 'alpha\n'.repeat(50 + i));
    await commit(`edit ${i}`);
  }
  await hg(['remove', 'dir/c.txt'], path);
  await commit('remove');
  await hg(['bookmark', '-q', 'mark'], path);
  await hg(['branch', '-q', 'stable'], path);
  w('stable.txt', 'stable\n');
  await commit('on stable');
  await hg(['bookmark', '-q', '-r', '.^', 'other'], path);
  await hg(['phase', '-q', '--public', '-r', 'all()'], path);
  if (opts.phases) {
    w('draft.txt', 'draft 1\n');
    await commit('draft one');
    w('draft.txt', 'draft 2\n');
    await commit('draft two');
    await hg(['phase', '-q', '--force', '--draft', '-r', '.^::'], path);
    w('secret.txt', 'secret\n');
    await hg(['commit', '-q', '-A', '--secret', '-m', 'secret'], path);
  }
  return { path, middle };
}

/** `hg log` with nodes, phases and bookmarks (what a pull must reproduce). */
export async function logOf(repo: string, revs = 'all()'): Promise<string> {
  return hg(['log', '-r', revs, '-T', '{node} {phase} {bookmarks}\n'], repo);
}

export async function verifyOf(repo: string): Promise<RunResult> {
  return hgAsync(['-R', repo, 'verify', '-q']);
}

export { hg as hgOk };
