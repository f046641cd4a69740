import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SluiceError } from '../../../../src/main/engine/errors';
import { readAt, readBounded } from '../../../../src/main/engine/repo/bounded-read';
import {
  readStateFile,
  readStateFileSync,
  type StateFileOptions,
} from '../../../../src/main/engine/repo/state-file';

const dir = mkdtempSync(join(tmpdir(), 'sluice-state-file-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = join(dir, 'phaseroots');
writeFileSync(file, '1 ' + 'ab'.repeat(20) + '\n');
const link = join(dir, 'linked');
symlinkSync(file, link);
const folder = join(dir, 'folder');
mkdirSync(folder);

const POSIX = process.platform !== 'win32';
const fifo = join(dir, 'fifo');
if (POSIX) execFileSync('mkfifo', [fifo]);
const zeroLink = join(dir, 'zero');
if (POSIX) symlinkSync('/dev/zero', zeroLink);

/** Both readers' outcome: the text, null, or the error's code. */
async function outcomes(path: string, opts: StateFileOptions): Promise<unknown[]> {
  const settle = (f: () => Buffer | null) => {
    try {
      return f()?.toString('latin1') ?? null;
    } catch (e) {
      expect(e).toBeInstanceOf(SluiceError);
      return (e as SluiceError).code;
    }
  };
  const sync = settle(() => readStateFileSync(path, opts));
  const async = await readStateFile(path, opts).then(
    (b) => b?.toString('latin1') ?? null,
    (e: unknown) => (e instanceof SluiceError ? e.code : e),
  );
  return [sync, async];
}

const text = '1 ' + 'ab'.repeat(20) + '\n';

describe('readStateFile(Sync): a state file, read whole within a bound', () => {
  it('a regular file is read; a missing one is null', async () => {
    expect(await outcomes(file, { max: 1 << 20 })).toEqual([text, text]);
    expect(await outcomes(join(dir, 'missing'), { max: 1 << 20 })).toEqual([null, null]);
    expect(await outcomes(join(file, 'below-a-file'), { max: 1 << 20 })).toEqual([null, null]);
  });

  it('a link is refused unless the caller follows links', async () => {
    expect(await outcomes(link, { max: 1 << 20 })).toEqual(['UNSAFE_PATH', 'UNSAFE_PATH']);
    expect(await outcomes(link, { max: 1 << 20, followLink: true })).toEqual([text, text]);
  });

  it('longer than the bound: LIMIT, or with prefix its first bytes', async () => {
    expect(await outcomes(file, { max: 10 })).toEqual(['LIMIT', 'LIMIT']);
    expect(await outcomes(file, { max: 10, prefix: true })).toEqual([text.slice(0, 10), text.slice(0, 10)]);
  });

  it('a folder: IO with errno EISDIR (an hgrc that is a folder is skipped on that)', () => {
    let err: unknown;
    try {
      readStateFileSync(folder, { max: 1 << 20 });
    } catch (e) {
      err = e;
    }
    expect((err as SluiceError).code).toBe('IO');
    expect((err as SluiceError).details).toMatchObject({ errno: 'EISDIR' });
  });

  it.skipIf(!POSIX)(
    'a FIFO is refused at once (it would block the reader), a link to /dev/zero too, links followed or not (skipped on Windows: no FIFO, no /dev/zero)',
    async () => {
      expect(await outcomes(fifo, { max: 1 << 20 })).toEqual(['UNSAFE_PATH', 'UNSAFE_PATH']);
      expect(await outcomes(zeroLink, { max: 1 << 30, followLink: true })).toEqual([
        'UNSAFE_PATH',
        'UNSAFE_PATH',
      ]);
      expect(await outcomes(zeroLink, { max: 1 << 30 })).toEqual(['UNSAFE_PATH', 'UNSAFE_PATH']);
    },
  );
});

describe('readBounded / readAt (caches): what is not a regular file is not used', () => {
  it.skipIf(!POSIX)('a FIFO or a link to /dev/zero: undefined at once (skipped on Windows: no FIFO)', () => {
    for (const path of [fifo, zeroLink, link]) {
      expect(readBounded(path, 1 << 20, false)).toBeUndefined();
      expect(readAt(path, 0, 16)).toBeUndefined();
    }
    expect(readBounded(file, 1 << 20, true)?.toString('latin1')).toBe(text);
    expect(readAt(file, 2, 4)?.toString('latin1')).toBe('abab');
  });
});
