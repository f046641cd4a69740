import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SluiceError } from '../../../../src/main/engine/errors';
import { openForRead } from '../../../../src/main/engine/revlog/file-io';
import { readRevlogIndex } from '../../../../src/main/engine/revlog/index';
import { openChangelogTail } from '../../../../src/main/engine/revlog/changelog-tip';

// A revlog file that is a FIFO blocked the reader (and a libuv thread) for good; one linked to
// /dev/zero was read forever. Each is refused at once (UNSAFE_PATH).
describe.skipIf(process.platform === 'win32')(
  'revlog files that are not regular files (skipped on Windows: no FIFO, no /dev/zero)',
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-revlog-io-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));
    const fifo = join(dir, 'fifo.i');
    execFileSync('mkfifo', [fifo]);
    const zero = join(dir, 'zero.i');
    symlinkSync('/dev/zero', zero);
    const store = join(dir, 'store');
    execFileSync('mkdir', [store]);
    execFileSync('mkfifo', [join(store, '00changelog.i')]);

    const code = (p: Promise<unknown>) =>
      p.then(
        () => 'read',
        (e: unknown) => (e instanceof SluiceError ? `${e.code}: ${e.message}` : String(e)),
      );

    it('the index reader, both open modes and the changelog tail refuse them', async () => {
      for (const path of [fifo, zero]) {
        expect(await code(readRevlogIndex(path, 'f.i'))).toBe(`UNSAFE_PATH: ${path} is not a regular file`);
        expect(await code(openForRead(path, 'sync'))).toBe(`UNSAFE_PATH: ${path} is not a regular file`);
        expect(await code(openForRead(path, 'async'))).toBe(`UNSAFE_PATH: ${path} is not a regular file`);
      }
      expect(await code(openChangelogTail(store))).toMatch(
        /^UNSAFE_PATH: .*00changelog\.i is not a regular file$/,
      );
    });

    it('a missing file is still an empty revlog', async () => {
      expect(await openForRead(join(dir, 'missing.i'), 'sync')).toBeNull();
      expect((await readRevlogIndex(join(dir, 'missing.i'), 'm.i')).length).toBe(0);
    });
  },
);
