import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundlePathsFromArgv } from '../../../src/main/host/argv';

describe('bundlePathsFromArgv', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-argv-'));
    await writeFile(join(dir, 'a.hg'), 'x');
    await writeFile(join(dir, 'B.HG'), 'x');
    await mkdir(join(dir, 'dir.hg'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('keeps existing .hg files, resolved against the caller working directory', () => {
    const argv = [
      '--inspect',
      '--foo=x.hg',
      'a.hg',
      join(dir, 'B.HG'),
      'missing.hg',
      'dir.hg',
      'notes.txt',
      'a.hg',
    ];
    expect(bundlePathsFromArgv(argv, dir)).toEqual([join(dir, 'a.hg'), join(dir, 'B.HG')]);
  });
});
