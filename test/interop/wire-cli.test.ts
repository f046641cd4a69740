// The `sluice clone` command end to end (a child process, as users run it): NDJSON events, exit
// codes, the clear NO_STREAM message, nothing left at DEST on failure.

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SluiceEvent } from '../../src/shared/events';
import { startServer, type RunningServer } from '../../src/main/engine/operations/serve/http-server';
import { sluice } from './cli-support';
import { extractFixture, hgAsync, missing, removeDir, skipNote, tempDir } from './wire-support';

describe('sluice clone (CLI)', () => {
  let work = '';
  let server: RunningServer;
  let closed: RunningServer;

  beforeAll(async () => {
    work = tempDir('cli');
    const repo = extractFixture('default', work);
    server = await startServer({ repo });
    closed = await startServer({ repo, uncompressed: false });
  });

  afterAll(async () => {
    await server.close();
    await closed.close();
    removeDir(work);
  });

  it('clones with --json: start, progress, done events, the bookmark', async () => {
    const dest = join(work, 'ok');
    const r = await sluice(['clone', server.url, dest, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const events = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as SluiceEvent);
    const start = events.find((e) => e.type === 'start');
    expect(start).toMatchObject({ kind: 'clone', format: 'stream-v2', source: server.url });
    expect(events.some((e) => e.type === 'files')).toBe(true);
    expect(events.at(-1)).toMatchObject({ type: 'done', result: dest });
    expect(readFileSync(join(dest, '.hg', 'bookmarks'), 'utf8')).toMatch(/^[0-9a-f]{40} mybook\n$/);
  });

  it.skipIf(missing('hg'))(`the --json clone passes hg verify${skipNote('hg')}`, async () => {
    const v = await hgAsync(['-R', join(work, 'ok'), 'verify', '-q']);
    expect(v.status, v.stderr).toBe(0);
  });

  it('a server that allows no stream clone: the clone falls back to the pull protocol and says so', async () => {
    const dest = join(work, 'nostream');
    const r = await sluice(['clone', '-U', closed.url, dest]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout + r.stderr).toMatch(/pull protocol/);
    expect(existsSync(join(dest, '.hg', 'store', '00changelog.i'))).toBe(true);
    expect(readFileSync(join(dest, '.hg', 'bookmarks'), 'utf8')).toMatch(/^[0-9a-f]{40} mybook\n$/);
  });

  it.skipIf(missing('hg'))(`the pull-protocol fallback clone passes hg verify${skipNote('hg')}`, async () => {
    const v = await hgAsync(['-R', join(work, 'nostream'), 'verify', '-q']);
    expect(v.status, v.stderr).toBe(0);
  });

  it.skipIf(missing('hg'))(
    `[web] allow-pull = false: hg and sluice clients are both refused${skipNote('hg')}`,
    async () => {
      const repo = extractFixture('default', join(work, 'nopull'));
      writeFileSync(join(repo, '.hg', 'hgrc'), '[web]\nallow-pull = false\n');
      const s = await startServer({ repo });
      try {
        const hgDest = join(work, 'nopull-hg');
        const hg = await hgAsync(['clone', '-U', s.url, hgDest]);
        expect([hg.status, hg.stderr.trim()]).toEqual([255, 'abort: authorization failed']);
        const dest = join(work, 'nopull-sluice');
        const r = await sluice(['clone', s.url, dest]);
        expect(r.code).toBe(1);
        expect(r.stderr).toMatch(/^abort: authorization failed: pull not authorized$/m);
        expect(existsSync(hgDest) || existsSync(dest)).toBe(false);
      } finally {
        await s.close();
      }
    },
  );

  it('usage errors exit 2', async () => {
    expect((await sluice(['clone', 'ftp://host/x', join(work, 'u')])).code).toBe(2);
    expect((await sluice(['clone', server.url, join(work, 'u'), '--stream', 'v3'])).code).toBe(2);
  });
});
