// Load: 16 concurrent clones from one `sluice serve` process (the CLI, as users run it) of the
// make-corpus tiny repo (1 034 store files): 8 by hg (v2), 8 by Sluice's client (4 v1, 4 v2);
// every clone verifies and matches the reference. A non-publishing server is checked on the side:
// its draft phases reach hg's v2 clone and Sluice's v1 and v2 clones alike.

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobContext } from '../../src/main/engine/context/job-context';
import { cloneFromUrl } from '../../src/main/engine/operations/clone/clone';
import { startServer } from '../../src/main/engine/operations/serve/http-server';
import {
  ROOT,
  describeClone,
  extractFixture,
  missing,
  skipNote,
  hgAsync,
  makeTinyCorpus,
  removeDir,
  storeDigest,
  tempDir,
} from './wire-support';

/** The real entry (bin/sluice.mjs re-runs it as a child that a signal to the parent would not reach). */
const SLUICE_BIN = existsSync(join(ROOT, 'bin', 'sluice.cjs'))
  ? join(ROOT, 'bin', 'sluice.cjs')
  : join(ROOT, 'bin', 'sluice.mjs');

async function startSluiceServe(
  repo: string,
  extra: string[] = [],
): Promise<{ url: string; proc: ChildProcess; log: string[] }> {
  const proc = spawn(process.execPath, [SLUICE_BIN, 'serve', repo, '--port', '0', ...extra], {
    env: { ...process.env, SLUICE_FROM_SOURCE: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const log: string[] = [];
  proc.stderr!.on('data', (d: Buffer) => log.push(...d.toString().split('\n').filter(Boolean)));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const t = setTimeout(
      () => reject(new Error(`sluice serve did not start: ${out} ${log.join('\n')}`)),
      30_000,
    );
    proc.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening at (\S+)/.exec(out);
      if (m) {
        clearTimeout(t);
        resolve(m[1]!);
      }
    });
    proc.on('exit', (code) => reject(new Error(`sluice serve exited ${code}: ${log.join('\n')}`)));
  });
  return { url, proc, log };
}

async function limit<T>(n: number, jobs: (() => Promise<T>)[]): Promise<T[]> {
  const out: T[] = new Array(jobs.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < jobs.length) {
        const i = next++;
        out[i] = await jobs[i]!();
      }
    }),
  );
  return out;
}

describe.skipIf(missing('hg', 'make-corpus'))(
  `sluice serve under load${skipNote('hg', 'make-corpus')}`,
  () => {
    let work = '';
    let repo = '';
    let server: Awaited<ReturnType<typeof startSluiceServe>> | null = null;

    beforeAll(async () => {
      work = tempDir('load');
      repo = makeTinyCorpus(work);
      server = await startSluiceServe(repo);
    }, 60_000);

    afterAll(async () => {
      const proc = server?.proc;
      if (proc && proc.exitCode === null) {
        const exited = new Promise<void>((r) => proc.once('exit', () => r()));
        proc.kill('SIGINT'); // the serve command closes and exits 0
        const t = setTimeout(() => proc.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(t);
      }
      if (work) removeDir(work);
    });

    it('16 concurrent clones (8 hg v2, 8 sluice v1/v2) all succeed and verify', async () => {
      const url = server!.url;
      const clones = Array.from({ length: 16 }, (_, i) => ({
        dest: join(work, `c${i}`),
        hg: i % 2 === 0,
        version: i % 4 === 1 ? 'v1' : 'v2',
      }));
      await Promise.all(
        clones.map(async (c) => {
          if (c.hg) {
            const r = await hgAsync(['clone', '-q', '--stream', '-U', url, c.dest]);
            expect(r.status, r.stderr).toBe(0);
          } else {
            const res = await cloneFromUrl(
              { kind: 'clone', url, dest: c.dest, stream: c.version as 'v1' | 'v2' },
              new JobContext({ fileEvents: false }),
            );
            expect(res.via).toBe(`stream-${c.version}`);
          }
        }),
      );
      const reference = storeDigest(clones[0]!.dest);
      expect(reference.size).toBeGreaterThan(1000);
      const views = await limit(
        4,
        clones.map((c) => () => describeClone(c.dest)),
      );
      for (const [i, v] of views.entries()) {
        expect(v.verify.status, `${clones[i]!.dest}: ${v.verify.stderr}`).toBe(0);
        expect(v.log).toBe(views[0]!.log);
        expect(storeDigest(clones[i]!.dest)).toEqual(reference);
      }
      // one log line per request, all answered 200
      const lines = server!.log.filter((l) => l.includes('"GET /?cmd='));
      expect(lines.length).toBeGreaterThanOrEqual(16 * 3);
      expect(lines.every((l) => / 200 \d+ \d+ms$/.test(l))).toBe(true);
    }, 180_000);

    it('a non-publishing server: draft phases reach hg v2 and sluice v1/v2 clones', async () => {
      const src = extractFixture('default', join(work, 'np'));
      const np = await startServer({ repo: src, publishing: false });
      try {
        const expected = (await hgAsync(['-R', src, 'phase', '-r', 'all()'])).stdout;
        expect(expected).toContain('draft');
        const hgDest = join(work, 'np-hg');
        expect((await hgAsync(['clone', '-q', '--stream', '-U', np.url, hgDest])).status).toBe(0);
        expect((await describeClone(hgDest)).phases).toBe(expected);
        for (const version of ['v1', 'v2'] as const) {
          const dest = join(work, `np-sluice-${version}`);
          const res = await cloneFromUrl(
            { kind: 'clone', url: np.url, dest, stream: version },
            new JobContext({ fileEvents: false }),
          );
          const view = await describeClone(dest);
          expect(view.verify.status).toBe(0);
          expect(view.phases).toBe(expected);
          if (version === 'v1') expect(res.draftRoots).toBe(1);
        }
      } finally {
        await np.close();
      }
    }, 60_000);
  },
);
