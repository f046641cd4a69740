import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  packDirstateV1,
  parseDirstateV1Rows,
  type Dirstate,
} from '../../../../src/main/engine/working-copy/dirstate-v1';
import { dirstateStatus } from '../../../../src/main/engine/working-copy/status';
import { removeDir, tempDirMaker } from '../../../support/env';

const tempDir = tempDirMaker('wc-status');
const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

function dirstate(entries: Array<[string, 'n' | 'a' | 'r', number]>): Dirstate {
  const ds: Dirstate = { p1: new Uint8Array(20), p2: new Uint8Array(20), entries: new Map() };
  for (const [path, state, size] of entries)
    ds.entries.set(path, { path, state, mode: 0o100644, size, mtime: -1 });
  return ds;
}

describe('dirstateStatus', () => {
  // a working directory: f (3 bytes), d/g (2 bytes), an unknown u and d/v
  const root = tempDir('tree');
  dirs.push(root);
  mkdirSync(join(root, 'd'));
  writeFileSync(join(root, 'f'), 'abc');
  writeFileSync(join(root, 'd', 'g'), 'xy');
  writeFileSync(join(root, 'u'), '');
  writeFileSync(join(root, 'd', 'v'), '');
  const opts = {
    root,
    ignore: () => false,
    listIgnored: false,
    listClean: true,
    checkExec: true,
    warn: () => {},
  };

  it('a path the file repeats counts once, as its last row says (hg reads it into a dict)', async () => {
    // two dirstates' rows in one file: f added, then f removed; d/g clean-sized, gone missing (h)
    const first = packDirstateV1(dirstate([['f', 'a', -1]]));
    const second = packDirstateV1(
      dirstate([
        ['f', 'r', 0],
        ['d/g', 'n', 5],
        ['h', 'n', 1],
      ]),
    );
    const rows = parseDirstateV1Rows(Buffer.concat([first, second.subarray(40)]));
    for (const listUnknown of [true, false]) {
      const s = await dirstateStatus({ ...opts, dirstate: rows, listUnknown });
      expect(s.removed).toEqual(['f']);
      expect(s.added).toEqual([]);
      expect(s.modified).toEqual(['d/g']); // size 5 recorded, 2 on disk
      expect(s.deleted).toEqual(['h']);
      expect(s.unknown.sort()).toEqual(listUnknown ? ['d/v', 'u'] : []);
    }
  });

  it("a cancel is seen between batches of the walk's fs calls: CANCELLED", async () => {
    const big = tempDir('many');
    dirs.push(big);
    for (let i = 0; i < 5000; i++) writeFileSync(join(big, `u${i}`), '');
    const rows = parseDirstateV1Rows(packDirstateV1(dirstate([['u0', 'n', 0]])));
    const base = { ...opts, root: big, dirstate: rows };
    const walked = await dirstateStatus({ ...base, listUnknown: true, signal: new AbortController().signal });
    expect(walked.unknown.length).toBe(4999);
    const signal = AbortSignal.abort();
    await expect(dirstateStatus({ ...base, listUnknown: true, signal })).rejects.toMatchObject({
      code: 'CANCELLED',
    });
  });
});
