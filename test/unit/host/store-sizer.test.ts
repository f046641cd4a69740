// The library's store sizes on a real repository: a row shows its tip at once and its store's size
// only once no job runs (a size is a stat per store file, measured apart so it never competes with
// a job), the size is what the store's files add up to, and a commit has it measured again.

import { afterEach, describe, expect, it } from 'vitest';
import { lstatSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RepoLibrary } from '../../../src/main/host/repo-library';
import { hgSync, missing, removeDir, skipNote, tempDirMaker } from '../../support/env';
import { settledRepo } from '../../support/host/watched-repo';

const makeTempDir = tempDirMaker('store-sizer');
const cleanup: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

/** What `du` counts under .hg/store: the regular files' sizes, walked here with sync calls. */
function storeOnDisk(repo: string): { bytes: number; files: number } {
  let bytes = 0;
  let files = 0;
  const entries = readdirSync(join(repo, '.hg', 'store'), { recursive: true, withFileTypes: true });
  for (const e of entries)
    if (e.isFile()) {
      bytes += lstatSync(join(e.parentPath, e.name)).size;
      files++;
    }
  return { bytes, files };
}

describe.skipIf(missing('hg'))(`the library's store sizes${skipNote('hg')}`, () => {
  it('wait while a job runs, then match the store; a commit has them measured again', async () => {
    const dir = makeTempDir('sizes');
    cleanup.push(() => removeDir(dir));
    const repo = settledRepo(join(dir, 'repo'), { 'a.txt': 'a\n', 'sub/b.txt': 'b\n' });
    let busy = true;
    const library = new RepoLibrary({
      file: join(dir, 'data', 'library.json'),
      onUpdate: () => {},
      busy: () => busy,
      watch: { debounceMs: 30, pollMs: 0 },
      batchMs: 20,
    });
    cleanup.push(() => library.dispose());
    await library.add(repo, 'user');
    await expect.poll(() => library.get(repo)?.tip?.rev).toBe(0);
    // a job runs: the row has its tip, and no size is measured meanwhile
    await new Promise((r) => setTimeout(r, 600));
    expect(library.get(repo)?.storeBytes).toBeUndefined();

    busy = false;
    const first = storeOnDisk(repo);
    await expect
      .poll(() => library.get(repo), { timeout: 20_000 })
      .toMatchObject({ storeBytes: first.bytes, storeFiles: first.files });

    writeFileSync(join(repo, 'c.txt'), 'c\n'.repeat(1000));
    expect(hgSync(['commit', '-q', '-A', '-m', 'two'], repo).status).toBe(0);
    const second = storeOnDisk(repo);
    expect(second.files).toBeGreaterThan(first.files);
    await expect
      .poll(() => library.get(repo), { timeout: 20_000 })
      .toMatchObject({ tip: { rev: 1 }, storeBytes: second.bytes, storeFiles: second.files });
  });
});
