import { describe, expect, it } from 'vitest';
import { parseManifest, type ManifestEntry } from '../../../../src/main/engine/revlog/texts';
import {
  batchFlag,
  batchPath,
  packBatchFiles,
  packManifestFiles,
} from '../../../../src/main/engine/working-copy/file-batch';

const line = (path: string, hex: string, flag = ''): string => `${path}\0${hex}${flag}\n`;

describe('packManifestFiles', () => {
  it('makes the columns packBatchFiles makes from the parsed entries, and the paths', () => {
    const text = Buffer.from(
      line('a/b.txt', '0123456789abcdef0123456789abcdef01234567') +
        line('a/run.sh', 'ffeeddccbbaa99887766554433221100ffeeddcc', 'x') +
        line('link', '00000000000000000000000000000000000000ff', 'l') +
        line('t\xe9l\xe9', 'abcdefabcdefabcdefabcdefabcdefabcdefabcd', 't'),
      'latin1',
    );
    const entries: ManifestEntry[] = [];
    parseManifest(text, (e) => entries.push(e));
    const want = packBatchFiles(entries);
    const { files, paths } = packManifestFiles(text);
    expect(paths).toEqual(entries.map((e) => e.path));
    expect(files.count).toBe(4);
    expect(Buffer.from(files.pathBytes)).toEqual(Buffer.from(want.pathBytes));
    expect([...files.pathEnds]).toEqual([...want.pathEnds]);
    expect(Buffer.from(files.nodes).toString('hex')).toBe(entries.map((e) => e.nodeHex).join(''));
    expect([...files.flags]).toEqual([...want.flags]);
    for (let i = 0; i < 4; i++) {
      expect(batchPath(files, i)).toBe(entries[i]!.path);
      expect(batchFlag(files, i)).toBe(entries[i]!.flag);
    }
  });

  it('refuses what parseManifest refuses, in its words', () => {
    const n = '1'.repeat(40);
    expect(() => packManifestFiles(Buffer.from(line('b', n) + line('a', n)))).toThrow(
      'Manifest lines not in sorted order.',
    );
    expect(() => packManifestFiles(Buffer.from(line('a', n) + line('a', n)))).toThrow(
      'Manifest lines not in sorted order.',
    );
    expect(() => packManifestFiles(Buffer.from(line('a', n, '\0')))).toThrow('Invalid manifest line');
    expect(() => packManifestFiles(Buffer.from(line('a', 'A' + n.slice(1))))).toThrow(
      'Invalid manifest line',
    );
    expect(packManifestFiles(new Uint8Array(0)).files.count).toBe(0);
  });
});
