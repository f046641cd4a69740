import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../../../src/main/engine/errors';
import {
  packDirstateV1,
  packDirstateV1Clean,
  parseDirstateV1,
  parseDirstateV1Rows,
  type Dirstate,
} from '../../../../src/main/engine/working-copy/dirstate-v1';

describe('dirstate v1', () => {
  const ds: Dirstate = {
    p1: Buffer.alloc(20, 0xab),
    p2: Buffer.alloc(20, 0),
    entries: new Map([
      ['b/x', { path: 'b/x', state: 'n' as const, mode: 0o100755, size: 12, mtime: 1_700_000_000 }],
      ['a', { path: 'a', state: 'n' as const, mode: 0o120777, size: 3, mtime: -1 }],
      [
        'caf\xc3\xa9',
        { path: 'caf\xc3\xa9', state: 'a' as const, mode: 0, size: -1, mtime: -1, copySource: 'a' },
      ],
    ]),
  };

  it('packs as hg pack_dirstate does: parents, then >cllll + name per entry, sorted', () => {
    const bytes = packDirstateV1(ds);
    expect(bytes.subarray(0, 20)).toEqual(Buffer.alloc(20, 0xab));
    // first entry is 'a': state 'n', mode 0o120777, size 3, mtime -1, name length 1
    const e = bytes.subarray(40, 40 + 17 + 1);
    expect(e[0]).toBe('n'.charCodeAt(0));
    expect(e.readInt32BE(1)).toBe(0o120777);
    expect(e.readInt32BE(5)).toBe(3);
    expect(e.readInt32BE(9)).toBe(-1);
    expect(e.readInt32BE(13)).toBe(1);
    expect(e.toString('latin1', 17)).toBe('a');
    expect(bytes.length).toBe(40 + 3 * 17 + 1 + 3 + ('caf\xc3\xa9'.length + 2));
  });

  it('round-trips entries, copy sources and raw name bytes', () => {
    const back = parseDirstateV1(packDirstateV1(ds));
    expect(Buffer.from(back.p1)).toEqual(Buffer.from(ds.p1));
    expect([...back.entries.keys()].sort()).toEqual([...ds.entries.keys()].sort());
    expect(back.entries.get('caf\xc3\xa9')).toEqual(ds.entries.get('caf\xc3\xa9'));
    expect(back.entries.get('b/x')).toEqual(ds.entries.get('b/x'));
  });

  it('reads the same rows as entries: states, numbers, copy sources by row, path map', () => {
    const bytes = packDirstateV1(ds);
    const rows = parseDirstateV1Rows(bytes);
    const entries = parseDirstateV1(bytes).entries;
    expect(rows.paths).toEqual([...entries.keys()]);
    expect(Buffer.from(rows.p1)).toEqual(Buffer.from(ds.p1));
    rows.paths.forEach((path, row) => {
      const e = entries.get(path)!;
      expect(rows.rows.get(path)).toBe(row);
      expect([
        String.fromCharCode(rows.states[row]!),
        rows.modes[row],
        rows.sizes[row],
        rows.mtimes[row],
      ]).toEqual([e.state, e.mode, e.size, e.mtime]);
      expect(rows.copySources.get(row)).toBe(e.copySource);
    });
    expect(rows.copySources.size).toBe(1);
    expect(parseDirstateV1Rows(new Uint8Array(0)).paths).toEqual([]);
  });

  it('a checkout from null packs its columns to the bytes packDirstateV1 makes of the same entries', () => {
    // manifest order (sorted), raw latin1 names, modes and sizes past 2^31 as hg's `l` truncates them
    const paths = ['.hgtags', 'a/b', 'caf\xc3\xa9', 'link', 'z'];
    const modes = Int32Array.from([0o100644, 0o100755, 0o100644, 0o120777, 0o100600]);
    const rawSizes = [0, 12, 2 ** 31 + 5, 7, 4096];
    const sizes = Int32Array.from(rawSizes); // wraps as the entries' `| 0` does
    const mtimes = Int32Array.from([1_700_000_000, -1, 0x7fffffff, -1, 5]);
    const p1 = Buffer.alloc(20, 0x5c);
    const same: Dirstate = { p1, p2: new Uint8Array(20), entries: new Map() };
    // entries inserted out of order: packDirstateV1 sorts them
    for (const i of [4, 2, 0, 3, 1])
      same.entries.set(paths[i]!, {
        path: paths[i]!,
        state: 'n',
        mode: modes[i]!,
        size: rawSizes[i]!,
        mtime: mtimes[i]!,
      });
    const clean = packDirstateV1Clean(p1, paths, modes, sizes, mtimes);
    expect(clean.equals(packDirstateV1(same))).toBe(true);
    expect(packDirstateV1Clean(p1, [], new Int32Array(0), new Int32Array(0), new Int32Array(0))).toEqual(
      Buffer.concat([p1, Buffer.alloc(20)]),
    );
  });

  it('an empty file is the null working copy', () => {
    const empty = parseDirstateV1(new Uint8Array(0));
    expect(empty.entries.size).toBe(0);
    expect(Buffer.from(empty.p1).every((b) => b === 0)).toBe(true);
  });

  it('refuses truncated or damaged files with MALFORMED, at any cut', () => {
    const bytes = packDirstateV1(ds);
    for (let cut = 1; cut < bytes.length; cut++) {
      if (cut === 40 || cut === 58 || cut === 40 + 17 + 1 + 17 + 3) continue; // entry boundaries parse
      let err: unknown;
      try {
        parseDirstateV1(bytes.subarray(0, cut));
      } catch (e) {
        err = e;
      }
      if (err !== undefined) expect((err as SluiceError).code).toBe('MALFORMED');
    }
    const bad = Buffer.from(bytes);
    bad.writeInt32BE(0x7fffffff, 40 + 13);
    expect(() => parseDirstateV1(bad)).toThrow(/truncated/);
    bad[40] = 'x'.charCodeAt(0);
    expect(() => parseDirstateV1(bad)).toThrow(/unknown dirstate state/);
  });
});
