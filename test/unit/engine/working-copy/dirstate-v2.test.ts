import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { removeDir, tempDirMaker } from '../../../support/env';
import type { Dirstate } from '../../../../src/main/engine/working-copy/dirstate-v1';
import {
  packDirstateV2,
  readDirstateV2,
  writeDirstateV2,
} from '../../../../src/main/engine/working-copy/dirstate-v2';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

const ds: Dirstate = {
  p1: Buffer.alloc(20, 0x11),
  p2: Buffer.alloc(20, 0),
  entries: new Map(
    [
      { path: 'b/c/deep', state: 'n' as const, mode: 0o100755, size: 7, mtime: 1_700_000_000 },
      { path: 'b/a', state: 'n' as const, mode: 0o120777, size: 3, mtime: -1 },
      { path: 'a', state: 'n' as const, mode: 0, size: -1, mtime: -1 },
      { path: 'b-sibling', state: 'a' as const, mode: 0, size: -1, mtime: -1, copySource: 'a' },
    ].map((e) => [e.path, e]),
  ),
};

describe('dirstate-v2', () => {
  it('lays out a tree: root nodes sorted by base name, each directory with its children', () => {
    const { data, treeMetadata } = packDirstateV2(ds);
    expect(treeMetadata.readUInt32BE(4)).toBe(3); // a, b, b-sibling
    expect(treeMetadata.readUInt32BE(8)).toBe(4); // nodes with an entry
    expect(treeMetadata.readUInt32BE(12)).toBe(1); // with a copy source
    const root = treeMetadata.readUInt32BE(0);
    const names = [0, 1, 2].map((i) => {
      const o = root + i * 44;
      return data.toString('latin1', data.readUInt32BE(o), data.readUInt32BE(o) + data.readUInt16BE(o + 4));
    });
    expect(names).toEqual(['a', 'b', 'b-sibling']);
    const b = root + 44;
    expect(data.readUInt16BE(b + 30)).toBe(1 << 13); // DIRECTORY
    expect(data.readUInt32BE(b + 18)).toBe(2); // a, c
    expect(data.readUInt32BE(b + 22)).toBe(2); // descendants with an entry: b/a, b/c/deep
  });

  it('writes data file then docket, and reads back the same entries', () => {
    const dir = tempDirMaker('checkout')('v2');
    dirs.push(dir);
    const hg = join(dir, '.hg');
    mkdirSync(hg);
    writeDirstateV2(hg, ds);
    writeDirstateV2(hg, ds); // the second write replaces the data file
    expect(readdirSync(hg).filter((n) => n.startsWith('dirstate.')).length).toBe(1);
    expect(readFileSync(join(hg, 'dirstate')).subarray(0, 12).toString()).toBe('dirstate-v2\n');
    const back = readDirstateV2(hg);
    expect(Buffer.from(back.p1)).toEqual(Buffer.alloc(20, 0x11));
    expect(back.entries.get('b/c/deep')).toEqual({ ...ds.entries.get('b/c/deep'), mode: 0o100755 });
    expect(back.entries.get('b/a')).toMatchObject({ state: 'n', mode: 0o120755, size: 3, mtime: -1 });
    expect(back.entries.get('a')).toMatchObject({ state: 'n', size: -1, mtime: -1 });
    expect(back.entries.get('b-sibling')).toMatchObject({ state: 'a', copySource: 'a' });
  });
});
