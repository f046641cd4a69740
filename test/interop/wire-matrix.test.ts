// Interop matrix: {hg serve, sluice serve} × {hg client, sluice client} × {stream v1, v2} ×
// {fixture default (zstd, share-safe), fixture legacy (zlib, no generaldelta), make-corpus tiny}.
// Every clone: `hg verify` clean, `hg log` with phases and bookmarks, `hg phase -r 'all()'` and
// `hg bookmarks` identical to hg's own v2 clone from hg serve (the reference), store files
// byte-identical to the reference's, same fncache entries and requires files.
// v1 servers are hg serve --config server.bundle2.stream=false / sluice serve streamV2=false.
// (hg 6.3.2's v1 client has a read bug over HTTP on large repos; these three are small enough.)

import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobContext } from '../../src/main/engine/context/job-context';
import { cloneFromUrl } from '../../src/main/engine/operations/clone/clone';
import { startServer, type RunningServer } from '../../src/main/engine/operations/serve/http-server';
import {
  describeClone,
  extractFixture,
  fncacheSet,
  missing,
  skipNote,
  hgAsync,
  makeTinyCorpus,
  removeDir,
  requiresOf,
  startHgServe,
  storeDigest,
  tempDir,
  type HgServer,
} from './wire-support';

const REPOS = ['default', 'legacy', 'tiny'] as const;
type RepoName = (typeof REPOS)[number];

interface Served {
  hgV2: HgServer;
  hgV1: HgServer;
  sluiceV2: RunningServer;
  sluiceV1: RunningServer;
  reference: string;
  refView: Awaited<ReturnType<typeof describeClone>>;
}

describe.skipIf(missing('hg', 'make-corpus'))(`wire interop matrix${skipNote('hg', 'make-corpus')}`, () => {
  let work = '';
  const served = {} as Record<RepoName, Served>;
  // every server started, kept as it starts: one failing start must not leak the others
  const stops: (() => void | Promise<void>)[] = [];
  const hgServe = async (repo: string, config?: string[]) => {
    const s = await startHgServe(repo, config);
    stops.push(() => s.stop());
    return s;
  };
  const sluiceServe = async (opts: Parameters<typeof startServer>[0]) => {
    const s = await startServer(opts);
    stops.push(() => s.close());
    return s;
  };
  let n = 0;

  beforeAll(async () => {
    work = tempDir('matrix');
    const sources: Record<RepoName, string> = {
      default: extractFixture('default', work),
      legacy: extractFixture('legacy', work),
      tiny: makeTinyCorpus(work),
    };
    await Promise.all(
      REPOS.map(async (name) => {
        const repo = sources[name];
        const [hgV2, hgV1, sluiceV2, sluiceV1] = await Promise.all([
          hgServe(repo),
          hgServe(repo, ['server.bundle2.stream=false']),
          sluiceServe({ repo }),
          sluiceServe({ repo, streamV2: false }),
        ]);
        const reference = join(work, `ref-${name}`);
        const r = await hgAsync(['clone', '-q', '--stream', '-U', hgV2.url, reference]);
        if (r.status !== 0) throw new Error(`reference clone failed: ${r.stderr}`);
        served[name] = { hgV2, hgV1, sluiceV2, sluiceV1, reference, refView: await describeClone(reference) };
      }),
    );
  }, 180_000);

  afterAll(async () => {
    for (const stop of stops) await stop();
    if (work) removeDir(work);
  });

  for (const repo of REPOS) {
    for (const server of ['hg', 'sluice'] as const) {
      for (const client of ['hg', 'sluice'] as const) {
        for (const version of ['v1', 'v2'] as const) {
          it(`${client} client <- ${server} serve, stream ${version}, ${repo} repo`, async () => {
            const s = served[repo];
            const url =
              server === 'hg'
                ? version === 'v2'
                  ? s.hgV2.url
                  : s.hgV1.url
                : version === 'v2'
                  ? s.sluiceV2.url
                  : s.sluiceV1.url;
            const dest = join(work, `c${n++}-${client}-${server}-${version}-${repo}`);
            if (client === 'hg') {
              const r = await hgAsync(['clone', '--stream', '-U', '--debug', url, dest]);
              expect(r.status, r.stderr).toBe(0);
              // the v2 trace goes through getbundle, the v1 trace through stream_out
              expect(r.stdout).toContain(
                version === 'v2' ? 'bundle2-input-part: "stream2"' : 'sending stream_out command',
              );
            } else {
              const ctx = new JobContext({ fileEvents: false });
              const res = await cloneFromUrl({ kind: 'clone', url, dest, stream: version }, ctx);
              expect(res.via).toBe(version === 'v2' ? 'stream-v2' : 'stream-v1');
            }
            const view = await describeClone(dest);
            expect(view.verify.status, view.verify.stdout + view.verify.stderr).toBe(0);
            expect(view.verify.stdout + view.verify.stderr).toBe('');
            expect(view.log).toBe(s.refView.log);
            expect(view.phases).toBe(s.refView.phases);
            expect(view.bookmarks).toBe(s.refView.bookmarks);
            expect(storeDigest(dest)).toEqual(storeDigest(s.reference));
            expect(fncacheSet(dest)).toEqual(fncacheSet(s.reference));
            expect(requiresOf(dest)).toBe(requiresOf(s.reference));
            // not deleted here: on this ext4 (no journal) creating files right after a mass delete
            // is slow for minutes; everything goes in afterAll
          });
        }
      }
    }
  }
});
