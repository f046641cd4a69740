import { afterEach, describe, expect, it } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkDestination } from '../../../src/main/host/destination-check';
import { removeDir, tempDirMaker } from '../../support/env';

const makeTempDir = tempDirMaker('dest-check');
const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach(removeDir));

describe('checkDestination', () => {
  it('says why a destination cannot be used, before submit', async () => {
    const dir = makeTempDir('x');
    dirs.push(dir);
    writeFileSync(join(dir, 'file'), 'x');
    mkdirSync(join(dir, 'full'));
    writeFileSync(join(dir, 'full', 'a'), 'a');
    mkdirSync(join(dir, 'empty'));
    expect(await checkDestination(join(dir, 'file'))).toEqual({ ok: false, reason: 'is a file' });
    expect(await checkDestination(join(dir, 'full'))).toEqual({ ok: false, reason: 'is not empty' });
    expect(await checkDestination(join(dir, 'empty'))).toEqual({ ok: true, reason: 'is an empty folder' });
    expect(await checkDestination(join(dir, 'new', 'deeper'))).toEqual({
      ok: true,
      reason: 'will be created',
    });
    expect((await checkDestination(join(dir, 'file', 'sub'))).ok).toBe(false);
  });
});
