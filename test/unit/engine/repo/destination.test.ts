import { mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SluiceError } from '../../../../src/main/engine/errors';
import { removeDir, tempDirMaker } from '../../../support/env';
import { checkDestination, createTempDestination } from '../../../../src/main/engine/repo/destination';

const makeTempDir = tempDirMaker('apply');
const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

describe('checkDestination (hg clone: destination is not empty)', () => {
  it('a symbolic link as DEST, to an empty folder or to nothing, is refused in those words before any work', async () => {
    const dir = makeTempDir('dest');
    dirs.push(dir);
    mkdirSync(join(dir, 'real'));
    symlinkSync('real', join(dir, 'to-empty'));
    symlinkSync('/nonexistent-sluice', join(dir, 'dangling'));
    for (const name of ['to-empty', 'dangling']) {
      const err = await createTempDestination(join(dir, name)).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(SluiceError);
      expect((err as SluiceError).code).toBe('DEST_EXISTS');
      expect((err as SluiceError).message).toContain('is a symbolic link');
    }
    expect(readdirSync(dir).sort()).toEqual(['dangling', 'real', 'to-empty']);
    expect(readdirSync(join(dir, 'real'))).toEqual([]);
    expect(await checkDestination(join(dir, 'real'))).toEqual({ emptyDir: true });
    expect(await checkDestination(join(dir, 'absent'))).toEqual({ emptyDir: false });
  });
});
