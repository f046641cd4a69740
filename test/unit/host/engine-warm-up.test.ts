import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runJob } from '../../../src/main/host/engine-api';
import { warmUpBundle, warmUpEngine } from '../../../src/main/host/engine-warm-up';
import type { SluiceEvent } from '../../../src/shared/events';

describe("the engine worker's warm-up", () => {
  let dir: string;
  let savedTmp: string | undefined;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-warm-up-test-'));
    savedTmp = process.env.TMPDIR;
    // os.tmpdir() reads TMPDIR on each call: the warm-up's folder goes where the test can look
    process.env.TMPDIR = dir;
  });
  afterEach(async () => {
    if (savedTmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = savedTmp;
    await rm(dir, { recursive: true, force: true });
  });

  it('applies its bundle through the engine as a job would', async () => {
    const bundlePath = join(dir, 'w.hg');
    await writeFile(bundlePath, warmUpBundle());
    const events: SluiceEvent[] = [];
    const dest = join(dir, 'repo');
    await runJob(
      { kind: 'apply', bundlePath, dest },
      { jobId: 'w', emit: (e) => events.push(e), signal: new AbortController().signal },
    );
    expect(events.at(-1)).toMatchObject({ type: 'done', files: 24 });
    expect(events.filter((e) => e.type === 'files').flatMap((e) => e.entries)).toHaveLength(24);
    expect(await readdir(join(dest, '.hg', 'store', 'data', 'warm-up'))).toHaveLength(24);
  });

  it('leaves nothing behind, run to its end or cancelled at any point', async () => {
    await warmUpEngine(new AbortController().signal, 50);
    expect(await readdir(dir)).toEqual([]);
    for (const after of [0, 1, 5, 20]) {
      const controller = new AbortController();
      setTimeout(() => controller.abort(), after);
      await warmUpEngine(controller.signal, 50);
      expect(await readdir(dir)).toEqual([]);
    }
  });
});
