import { describe, expect, it } from 'vitest';
import { diffManifests } from '../../../../../src/main/engine/operations/update/manifest-diff';
import { isSluiceError } from '../../../../../src/main/engine/errors';

type Line = [path: string, node: string, flag?: string];

/** A manifest text as hg stores it: lines sorted by path bytes. */
function manifest(lines: Line[]): Buffer {
  const sorted = [...lines].sort((a, b) =>
    Buffer.compare(Buffer.from(a[0], 'latin1'), Buffer.from(b[0], 'latin1')),
  );
  return Buffer.from(sorted.map(([p, n, f]) => `${p}\0${n}${f ?? ''}\n`).join(''), 'latin1');
}

const node = (c: string): string => c.repeat(40);

describe('diffManifests', () => {
  it('sorts every line into gets, execs, removes and keeps unchanged files out', () => {
    const source = manifest([
      ['a', node('1')],
      ['a.b', node('2')],
      ['a/b', node('3'), 'x'],
      ['gone', node('4')],
      ['link', node('5'), 'l'],
      ['mode', node('6')],
      ['same', node('7'), 'x'],
      ['\xe9t\xe9', node('8')],
    ]);
    const target = manifest([
      ['a', node('9')],
      ['a.b', node('2')],
      ['a/b', node('3')],
      ['a/c', node('a')],
      ['link', node('5')],
      ['mode', node('6'), 'x'],
      ['same', node('7'), 'x'],
      ['\xe9t\xe9', node('8')],
      ['\xff', node('b')],
    ]);
    const d = diffManifests(source, target);
    expect(d.targetPaths).toEqual(['a', 'a.b', 'a/b', 'a/c', 'link', 'mode', 'same', '\xe9t\xe9', '\xff']);
    expect(d.gets).toEqual([
      { path: 'a', nodeHex: node('9'), flag: '' },
      { path: 'a/c', nodeHex: node('a'), flag: '' },
      // a symlink that becomes a file is rewritten, not chmodded
      { path: 'link', nodeHex: node('5'), flag: '' },
      { path: '\xff', nodeHex: node('b'), flag: '' },
    ]);
    expect([...d.added]).toEqual(['a/c', '\xff']);
    expect(d.execs).toEqual([
      { path: 'a/b', nodeHex: node('3'), flag: '' },
      { path: 'mode', nodeHex: node('6'), flag: 'x' },
    ]);
    expect(d.removes).toEqual(['gone']);
  });

  it('handles an empty side and removals past the target end', () => {
    const m = manifest([
      ['x', node('1')],
      ['y', node('2'), 't'],
    ]);
    const all = diffManifests(new Uint8Array(0), m);
    expect(all.gets.map((g) => g.path)).toEqual(['x', 'y']);
    expect(all.gets[1]!.flag).toBe('t');
    const none = diffManifests(m, new Uint8Array(0));
    expect(none).toMatchObject({ targetPaths: [], gets: [], execs: [], removes: ['x', 'y'] });
  });

  it('agrees with a map-based diff on random manifests', () => {
    let seed = 7;
    const rand = (n: number): number => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n;
    const flags = ['', '', '', 'x', 'l'];
    for (let round = 0; round < 50; round++) {
      const pick = (): Line[] => {
        const m = new Map<string, Line>();
        for (let i = rand(60); i > 0; i--) {
          const p = ['d', 'd/e', 'd.e', 'f', 'g\xe0'][rand(5)]! + '/' + rand(30);
          m.set(p, [p, node('0123456789abcdef'[rand(3)]!), flags[rand(5)]!]);
        }
        return [...m.values()];
      };
      const a = pick();
      const b = pick();
      const d = diffManifests(manifest(a), manifest(b));
      const old = new Map(a.map((l) => [l[0], l]));
      const want = { gets: [] as string[], execs: [] as string[] };
      for (const [p, n, f = ''] of manifest(b)
        .toString('latin1')
        .split('\n')
        .slice(0, -1)
        .map((l) => [
          l.slice(0, l.indexOf('\0')),
          l.slice(l.indexOf('\0') + 1, l.indexOf('\0') + 41),
          l.slice(l.indexOf('\0') + 41),
        ])) {
        const o = old.get(p!);
        const of = o?.[2] ?? '';
        if (o && o[1] === n && of !== f && of !== 'l' && f !== 'l') want.execs.push(p!);
        else if (!o || o[1] !== n || of !== f) want.gets.push(p!);
      }
      expect(d.gets.map((g) => g.path)).toEqual(want.gets);
      expect(d.execs.map((g) => g.path)).toEqual(want.execs);
      const inB = new Set(b.map((l) => l[0]));
      expect(new Set(d.removes)).toEqual(new Set(a.map((l) => l[0]).filter((p) => !inB.has(p))));
    }
  });

  it('refuses a malformed manifest on either side', () => {
    const good = manifest([['a', node('1')]]);
    const unsorted = Buffer.from(`b\0${node('1')}\na\0${node('2')}\n`, 'latin1');
    for (const [s, t] of [
      [unsorted, good],
      [good, unsorted],
    ]) {
      let err: unknown;
      try {
        diffManifests(s!, t!);
      } catch (e) {
        err = e;
      }
      expect(isSluiceError(err)).toBe(true);
    }
  });
});
