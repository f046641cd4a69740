import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { cleanStaleTemporaries, inspectBundle, probeServer } from '../../../src/main/host/engine-api';
import { startServer } from '../../../src/main/engine/operations/serve/http-server';
import { OWNER_MARKER } from '../../../src/main/engine/repo/destination';

describe('cleanStaleTemporaries', () => {
  let parent: string;
  beforeEach(async () => {
    parent = await mkdtemp(join(tmpdir(), 'sluice-clean-'));
  });
  afterEach(() => rm(parent, { recursive: true, force: true }));

  async function temporary(name: string, marker?: object): Promise<void> {
    await mkdir(join(parent, name, '.hg', 'store'), { recursive: true });
    await writeFile(join(parent, name, '.hg', 'store', 'data.i'), 'x');
    if (marker) await writeFile(join(parent, name, OWNER_MARKER), JSON.stringify(marker));
  }

  it("removes this process's temporaries for the destination, and nothing else", async () => {
    const dest = join(parent, 'repo');
    const pid = process.pid;
    await temporary(`.repo.sluice-tmp-${pid}-aaaa1111`, { pid, host: 'h', startedAt: 1, dest });
    await temporary(`.repo.sluice-tmp-${pid}-bbbb2222`); // marker already removed before the final rename
    await temporary(`.other.sluice-tmp-${pid}-cccc3333`, {
      pid,
      host: 'h',
      startedAt: 1,
      dest: join(parent, 'other'),
    });
    await temporary(`.repo.sluice-tmp-${pid}-dddd4444`, {
      pid,
      host: 'h',
      startedAt: 1,
      dest: join(parent, 'elsewhere', 'repo'),
    });
    await mkdir(join(parent, 'repo-unrelated'));
    await cleanStaleTemporaries(dest);
    expect((await readdir(parent)).sort()).toEqual([
      `.other.sluice-tmp-${pid}-cccc3333`,
      `.repo.sluice-tmp-${pid}-dddd4444`,
      'repo-unrelated',
    ]);
  });

  it('does nothing when the parent does not exist', async () => {
    await expect(cleanStaleTemporaries(join(parent, 'no', 'such', 'repo'))).resolves.toBeUndefined();
  });
});

describe('inspectBundle', () => {
  it('reads the shipped sample bundle header', async () => {
    const info = await inspectBundle(new URL('../../../build/sample/sample.hg', import.meta.url).pathname);
    expect(info).toMatchObject({ type: 'v2', compression: 'UN', files: 28, unsupported: [] });
    expect(info.requirements).toContain('revlog-compression-zstd');
  });
});

describe('probeServer', () => {
  it("reports what the engine's own server offers", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-probe-'));
    try {
      const repo = join(dir, 'repo');
      await mkdir(repo);
      execFileSync('tar', [
        '-xzf',
        new URL('../../fixtures/hg/default/repo.tar.gz', import.meta.url).pathname,
        '-C',
        repo,
      ]);
      const server = await startServer({ repo, address: '127.0.0.1', port: 0 });
      try {
        const info = await probeServer(server.url);
        expect(info).toMatchObject({ streamV1: true, streamV2: true, heads: 1 });
        expect(info.streamRequirements).toContain('revlog-compression-zstd');
      } finally {
        await server.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('fails with a network error code for a port nobody listens on', async () => {
    await expect(probeServer('http://127.0.0.1:9/')).rejects.toMatchObject({
      code: expect.stringMatching(/^(NETWORK|TIMEOUT)$/),
    });
  });
});
