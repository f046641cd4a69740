// `sluice downloads list|clear` on a partial downloads folder made by the store (SLUICE_CACHE_DIR),
// run in process through main().

import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CliIO } from '../../../../src/cli/command';
import { PartialStore } from '../../../../src/main/engine/downloads/partial-store';
import { loadCliMain, runCli, type CliRun } from '../../../support/cli';

const cache = mkdtempSync(join(tmpdir(), 'sluice-cli-downloads-'));
const saved = process.env.SLUICE_CACHE_DIR;
let main: (argv: string[], io: CliIO) => Promise<number>;
beforeAll(async () => {
  process.env.SLUICE_CACHE_DIR = cache;
  main = await loadCliMain();
});
afterAll(() => {
  if (saved === undefined) delete process.env.SLUICE_CACHE_DIR;
  else process.env.SLUICE_CACHE_DIR = saved;
  rmSync(cache, { recursive: true, force: true });
});

const cli = (...argv: string[]): Promise<CliRun> => runCli(main, argv);

describe('sluice downloads', () => {
  it('lists the partials, refuses one in use, clears the rest', async () => {
    const store = new PartialStore({ dir: join(cache, 'downloads'), maxBytes: 1 << 30 });
    const part = (await store.claim('http://h/a.hg', 'http://h/a.hg', '/clones/a'))!;
    writeFileSync(part.path, Buffer.alloc(2048));
    await part.save({ have: 2048, validator: '"e"', total: 4096 });

    const listed = await cli('downloads', 'list');
    expect(listed.code).toBe(0);
    expect(listed.out).toBe(`${part.key}  2.00 KB of 4.00 KB (downloading)  http://h/a.hg -> /clones/a\n`);
    const busy = await cli('downloads', 'clear', part.key);
    expect(busy.code).toBe(1);
    expect(busy.err).toContain('is in use by a running download');

    await part.release();
    const json = JSON.parse((await cli('downloads', 'list', '--json')).out) as {
      key: string;
      inUse: boolean;
    }[];
    expect(json).toMatchObject([{ key: part.key, inUse: false }]);
    expect(await cli('downloads', 'clear')).toMatchObject({ code: 0, out: 'removed 1 partial downloads\n' });
    expect(existsSync(part.path)).toBe(false);
    expect((await cli('downloads', 'list')).out).toContain('no partial downloads in');
  });
});
