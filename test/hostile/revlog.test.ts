// Revlogs a hostile server can hand over by stream clone (copied as they are, as hg copies them):
// index entries pointing outside the data file, sizes that lie, delta bases above their revision
// or in a cycle, parents out of range, a decompression bomb behind a lying size. `sluice verify`,
// checkout (update, and the checkout of a clone) and `sluice serve` (a pull from it) must fail with
// a typed error naming the revlog, never allocate what a header announces, never loop; the server
// keeps serving.
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyBundle2ToRepo, createEmptyRepository } from '../../src/main/engine/changegroup';
import { updateWorkingCopy } from '../../src/main/engine/operations/update/update';
import { SluiceError } from '../../src/main/engine/errors';
import { JobContext } from '../../src/main/engine/context/job-context';
import { buildRevlog } from '../support/revlog';
import { removeDir, tempDirMaker } from '../support/env';
import { verifyRepository } from '../../src/main/engine/operations/verify/verify';
import { cloneFromUrl } from '../../src/main/engine/operations/clone/clone';
import { startServer } from '../../src/main/engine/operations/serve/http-server';
import { bundle2Of, craftCg2, pieces, zstdFrame } from './craft';

const CONTENT = 'hostile revlog\n'.repeat(20);
const FILELOG = join('.hg', 'store', 'data', 'f.txt');
/** a decompression bomb's size: past checkout's and verify's STREAM_ABOVE, so it is streamed */
const BOMB = 160 << 20;
/** what reading it may grow the process by (worker threads included): below the bomb's size
 *  (building its text whole took twice that) */
const MEMORY_BOUND_MIB = 128;

let work = '';
let clean = '';

beforeAll(async () => {
  work = tempDirMaker('hostile-revlog')('w');
  clean = join(work, 'clean');
  await createEmptyRepository(clean);
  await applyBundle2ToRepo(
    clean,
    pieces(await bundle2Of(craftCg2([{ name: 'f.txt', content: CONTENT }]).cg)),
    new JobContext(),
  );
});
afterAll(() => removeDir(work));

/** Field offsets in a 64-byte v1 index entry. */
const COMPRESSED = 8;
const RAW_SIZE = 12;
const BASE = 16;
const P1 = 24;

interface Case {
  label: string;
  /** the filelog f.txt.i and f.txt.d (split) */
  revlog(): { index: Buffer; data: Buffer };
  /** the problem key the reader reports (details.problem) */
  problem: RegExp;
  /** the text is right (its node matches) and only a field lies: read as hg reads it, verify reports it */
  readable?: boolean;
  /** verify's line about it */
  verifyLine: RegExp;
}

/** f.txt's one revision (the node the manifest names), split, then `patch` applied to its entry. */
function oneRevision(patch: (entry: Buffer) => void, chunk?: Buffer): { index: Buffer; data: Buffer } {
  const built = buildRevlog([{ text: CONTENT }], { inline: false, generalDelta: true });
  const index = Buffer.from(built.index);
  let data = built.data;
  if (chunk) {
    data = chunk;
    index.writeInt32BE(chunk.length, COMPRESSED);
  }
  patch(index);
  return { index, data };
}

const cases: Case[] = [
  {
    label: 'an entry whose chunk lies beyond the end of the .d file',
    revlog: () => oneRevision((e) => e.writeInt32BE(0x7fff0000, COMPRESSED)),
    problem: /partial-read/,
    verifyLine: /f\.txt@0: unpacking [0-9a-f]{12}: partial read of revlog/,
  },
  {
    label: 'an uncompressed size of 2 GiB over a 300-byte text',
    revlog: () => oneRevision((e) => e.writeInt32BE(0x7fffffff, RAW_SIZE)),
    problem: /none/,
    readable: true,
    verifyLine: /f\.txt@0: unpacked size is 300, 2147483647 expected/,
  },
  {
    label: 'a zstd bomb (160 MiB of zeros in 6 KB) behind a size of 160 MiB',
    revlog: () => oneRevision((e) => e.writeInt32BE(BOMB, RAW_SIZE), zstdFrame([{ zeros: BOMB }])),
    problem: /node-mismatch/,
    verifyLine: /f\.txt@0: unpacking [0-9a-f]{12}: integrity check failed on data\/f\.txt:0/,
  },
  {
    label: 'a delta base above its revision',
    revlog: () => oneRevision((e) => e.writeInt32BE(5, BASE)),
    problem: /base-out-of-range/,
    verifyLine: /f\.txt@0: unpacking [0-9a-f]{12}: .*base/,
  },
  {
    label: 'delta bases in a cycle (0 on 1, 1 on 0)',
    revlog: () => {
      const built = buildRevlog([{ text: CONTENT }, { text: `${CONTENT}more\n` }], {
        inline: false,
        generalDelta: true,
      });
      const index = Buffer.from(built.index);
      index.writeInt32BE(1, BASE); // rev 0 (the manifest's node) deltas on rev 1
      index.writeInt32BE(0, 64 + BASE); // rev 1 on rev 0
      return { index, data: built.data };
    },
    problem: /base-out-of-range/,
    verifyLine: /f\.txt@0: unpacking [0-9a-f]{12}: .*base/,
  },
  {
    label: 'a parent out of range',
    revlog: () => oneRevision((e) => e.writeInt32BE(9, P1)),
    problem: /parent-out-of-range/,
    verifyLine: /f\.txt@0: .*out of range/,
  },
];

let copies = 0;
/** A copy of the clean repository with f.txt's filelog replaced. */
function hostileRepo(c: Case): string {
  const repo = join(work, `r${copies++}`);
  cpSync(clean, repo, { recursive: true });
  const { index, data } = c.revlog();
  writeFileSync(join(repo, `${FILELOG}.i`), index);
  writeFileSync(join(repo, `${FILELOG}.d`), data);
  return repo;
}

/** What `fn` failed with (it must fail), within a generous bound: never a hang. */
async function failure(fn: () => Promise<unknown>): Promise<SluiceError> {
  const r = await Promise.race([
    fn().then(
      () => 'succeeded',
      (e: unknown) => e,
    ),
    new Promise((res) => setTimeout(() => res('still running after 30 s'), 30_000)),
  ]);
  expect(r).toBeInstanceOf(SluiceError);
  return r as SluiceError;
}

/** external memory grown while `fn` ran, sampled: the bound a lying header must not buy */
async function peakGrowth<T>(fn: () => Promise<T>): Promise<{ result: T; grownMiB: number }> {
  const base = process.memoryUsage().rss;
  let peak = base;
  const t = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
  try {
    const result = await fn();
    peak = Math.max(peak, process.memoryUsage().rss);
    return { result, grownMiB: (peak - base) / 2 ** 20 };
  } finally {
    clearInterval(t);
  }
}

describe.each(cases)('$label', (c) => {
  it('checkout: a typed REVLOG error naming data/f.txt, no allocation by the header', async () => {
    const repo = hostileRepo(c);
    if (c.readable) {
      const { grownMiB } = await peakGrowth(() => updateWorkingCopy(repo, {}, new JobContext()));
      expect(readFileSync(join(repo, 'f.txt'), 'latin1')).toBe(CONTENT);
      expect(grownMiB).toBeLessThan(MEMORY_BOUND_MIB);
      return;
    }
    const { result: err, grownMiB } = await peakGrowth(() =>
      failure(() => updateWorkingCopy(repo, {}, new JobContext())),
    );
    expect(err.code, err.message).toBe('REVLOG');
    expect(String(err.details?.revlog)).toMatch(/data\/f\.txt/);
    expect(String(err.details?.problem)).toMatch(c.problem);
    expect(grownMiB).toBeLessThan(MEMORY_BOUND_MIB);
  });

  it('verify: VERIFY_FAILED, the problem reported on data/f.txt', async () => {
    const repo = hostileRepo(c);
    const lines: string[] = [];
    const { result: err, grownMiB } = await peakGrowth(() =>
      failure(() => verifyRepository(repo, {}, { onLine: (l) => lines.push(l.text) })),
    );
    expect(err.code, err.message).toBe('VERIFY_FAILED');
    expect(lines.join('\n')).toMatch(c.verifyLine);
    expect(grownMiB).toBeLessThan(MEMORY_BOUND_MIB);
  });

  it('serve: a pull from it fails typed (naming data/f.txt), nothing at DEST, no allocation by the header, and the server answers the next request', async () => {
    const repo = hostileRepo(c);
    const server = await startServer({ repo });
    try {
      const dest = join(work, `d${copies++}`, 'clone');
      if (c.readable) {
        await cloneFromUrl(
          { kind: 'clone', url: server.url, dest, pull: true, update: true },
          new JobContext(),
        );
        expect(readFileSync(join(dest, 'f.txt'), 'latin1')).toBe(CONTENT);
        return;
      }
      const { result: err, grownMiB } = await peakGrowth(() =>
        failure(() =>
          cloneFromUrl({ kind: 'clone', url: server.url, dest, pull: true }, new JobContext(), {
            idleTimeoutMs: 10_000,
          }),
        ),
      );
      expect(err.code, err.message).toMatch(/^(REMOTE_ABORT|REVLOG|PROTOCOL|TRUNCATED)$/);
      expect(err.message).toMatch(/f\.txt/);
      expect(grownMiB).toBeLessThan(MEMORY_BOUND_MIB);
      expect(existsSync(dest)).toBe(false);
      const heads = await fetch(`${server.url}?cmd=heads`);
      expect(heads.status).toBe(200);
    } finally {
      await server.close();
    }
  });
});

describe('a stream clone of a hostile revlog', () => {
  it('copies it as hg does; the clone checkout fails typed (REVLOG naming data/f.txt), nothing at DEST', async () => {
    const repo = hostileRepo(cases[0]!);
    const server = await startServer({ repo });
    try {
      const parent = join(work, `s${copies++}`);
      mkdirSync(parent);
      const err = await failure(() =>
        cloneFromUrl(
          { kind: 'clone', url: server.url, dest: join(parent, 'clone'), update: true },
          new JobContext(),
        ),
      );
      expect(err.code, err.message).toBe('REVLOG');
      expect(String(err.details?.revlog)).toMatch(/data\/f\.txt/);
      expect(readdirSync(parent)).toEqual([]);
    } finally {
      await server.close();
    }
  });
});
