// The BUNDLESPEC sluice serve --clone-bundle advertises for a file is what hg's
// exchange.getbundlespec (`hg debugbundle --spec`) says of it. A changegroup bundle made by
// `hg bundle` was refused at startup (read as a stream bundle), and its spec would have said
// `gzip-v2;stream=v2;...` (found by the interop sweep's clone bundle path).

import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServedCloneBundles } from '../../../../../src/main/engine/operations/serve/served-clone-bundles';
import {
  FIXTURES,
  HG_ENV,
  extractFixture,
  missing,
  removeDir,
  skipNote,
  tempDirMaker,
} from '../../../../support/env';

const hgSpec = (file: string): string => {
  const r = spawnSync('hg', ['debugbundle', '--spec', file], { env: HG_ENV, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  return r.stdout.trim();
};

describe.skipIf(missing('hg'))(`clone bundle specs of served files${skipNote('hg')}`, () => {
  let work = '';
  let repo = '';
  beforeAll(() => {
    work = tempDirMaker('served-clone-bundles')('spec');
    repo = extractFixture('default', work);
  });
  afterAll(() => removeDir(work));

  it.each(['gzip-v1', 'bzip2-v1', 'none-v2', 'gzip-v2', 'zstd-v2', 'zstd-v2;cg.version=03'])(
    'a changegroup bundle (hg bundle -t %s): hg debugbundle --spec',
    async (type) => {
      const file = join(work, `${type.replace(/[^a-z0-9]/g, '_')}.hg`);
      const cg3 = ['--config', 'experimental.changegroup3=yes'];
      const r = spawnSync('hg', ['-R', repo, ...cg3, 'bundle', '-q', '-a', '-t', type, file], {
        env: HG_ENV,
        encoding: 'utf8',
      });
      expect(r.status, r.stderr).toBe(0);
      const served = await ServedCloneBundles.create(repo, { files: [{ path: file }] });
      expect(served.files[0]!.spec).toBe(hgSpec(file));
      expect(served.files[0]!.spec).not.toContain('stream');
    },
  );

  it.each(['packed1.hg', 'stream-v2.hg'])('a stream bundle (%s): hg debugbundle --spec', async (name) => {
    const file = join(FIXTURES, 'default', name);
    const served = await ServedCloneBundles.create(repo, { files: [{ path: file }] });
    expect(served.files[0]!.spec).toBe(hgSpec(file));
  });
});
