// ComparisonFolders on real files: it removes what was recorded for a run (or every run) and
// nothing else, survives a restart through its file, and removes a symlink put in a recorded
// path without touching what the link points to.

import { afterEach, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ComparisonFolders } from '../../../src/main/host/comparison-folders';
import { removeDir, tempDirMaker } from '../../support/env';

const makeTempDir = tempDirMaker('comparison-folders');
const cleanup: string[] = [];
afterEach(() => {
  for (const d of cleanup.splice(0)) removeDir(d);
});

function repoAt(path: string): string {
  mkdirSync(join(path, '.hg', 'store'), { recursive: true });
  writeFileSync(join(path, '.hg', 'requires'), 'store\n');
  return path;
}

describe('ComparisonFolders', () => {
  it('removes one run, then every run, and only what was recorded', async () => {
    const dir = makeTempDir('runs');
    cleanup.push(dir);
    const a1 = repoAt(join(dir, 'out', 'a', '01'));
    const a2 = join(dir, 'out', 'a', 'bundle.hg');
    writeFileSync(a2, 'bundle');
    const b1 = repoAt(join(dir, 'out', 'b', '01'));
    const mine = repoAt(join(dir, 'out', 'a', 'mine'));
    const store = new ComparisonFolders(join(dir, 'data', 'comparison-folders.json'));
    await store.record('cmp-a', a1);
    await store.record('cmp-a', a2);
    await store.record('cmp-b', b1);
    await store.flushed();

    expect(await store.remove('cmp-a')).toBe(2);
    expect([existsSync(a1), existsSync(a2), existsSync(b1), existsSync(mine)]).toEqual([
      false,
      false,
      true,
      true,
    ]);

    // a new host reads what is left from the file
    const again = new ComparisonFolders(join(dir, 'data', 'comparison-folders.json'));
    expect((await again.list()).map((r) => r.path)).toEqual([b1]);
    expect(await again.remove()).toBe(1);
    expect([existsSync(b1), existsSync(mine)]).toEqual([false, true]);
    expect(await again.list()).toEqual([]);
  });

  it('a symlink put where a recorded folder was is removed as a link, its target kept', async () => {
    const dir = makeTempDir('link');
    cleanup.push(dir);
    const target = repoAt(join(dir, 'precious'));
    const recorded = join(dir, 'out', '01');
    mkdirSync(join(dir, 'out'));
    symlinkSync(target, recorded);
    const store = new ComparisonFolders(join(dir, 'comparison-folders.json'));
    await store.record('cmp-x', recorded);
    expect(await store.remove('cmp-x')).toBe(1);
    expect(existsSync(recorded)).toBe(false);
    expect(existsSync(join(target, '.hg', 'requires'))).toBe(true);
  });
});
