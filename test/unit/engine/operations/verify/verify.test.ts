// verifyRepository against hg verify: clean fixture repos and corpora give the same counts and the
// same output; corrupted copies give the same problem lines (recorded from hg 6.3.2 below, and
// compared live when hg is installed).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cpSync, mkdirSync, readFileSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { MAKE_CORPUS } from '../../../../support/env';
import type { JobEventInput } from '../../../../../src/main/engine/context/job-context';
import { isSluiceError } from '../../../../../src/main/engine/errors';
import {
  SHAPES,
  extractFixtureRepo,
  hg,
  makeTempDir,
  missing,
  removeDir,
  skipNote,
} from '../../../../support/revlog';
import { verifyRepository, type VerifyReport } from '../../../../../src/main/engine/operations/verify/verify';
import { defaultScanWorkers } from '../../../../../src/main/engine/operations/verify/scan-pool';

let tmp: string;
const fixtures: Record<string, string> = {};
beforeAll(() => {
  tmp = makeTempDir('verify');
  for (const shape of SHAPES) {
    const dir = join(tmp, 'fixture-' + shape);
    mkdirSync(dir);
    fixtures[shape] = extractFixtureRepo(shape, dir);
  }
});
afterAll(() => removeDir(tmp));

const outLines = (r: VerifyReport): string[] => r.lines.filter((l) => l.stream === 'out').map((l) => l.text);
const errLines = (r: VerifyReport): string[] => r.lines.filter((l) => l.stream === 'err').map((l) => l.text);
const split = (s: string): string[] => s.split('\n').filter((l) => l !== '');

let copies = 0;
function copyFixture(shape: string): string {
  const dir = join(tmp, `copy-${copies++}`);
  mkdirSync(dir);
  cpSync(join(fixtures[shape]!, '.hg'), join(dir, '.hg'), { recursive: true });
  return dir;
}
const storeFile = (repo: string, p: string): string => join(repo, '.hg', 'store', p);
function patch(path: string, fn: (b: Buffer) => void): void {
  const b = readFileSync(path);
  fn(b);
  writeFileSync(path, b);
}
/** Offset of revision `rev`'s entry in an inline NAME.i. */
function inlineEntry(b: Buffer, rev: number): number {
  let off = 0;
  for (let r = 0; r < rev; r++) off += 64 + b.readInt32BE(off + 8);
  return off;
}

describe('verify: clean repositories', () => {
  for (const shape of SHAPES) {
    it(`${shape} fixture: hg's counts and output, no problems`, async () => {
      const report = await verifyRepository(fixtures[shape]!);
      expect([report.changesets, report.changes, report.files, report.errors, report.warnings]).toEqual([
        6, 24, 20, 0, 0,
      ]);
      expect(outLines(report)).toEqual([
        'checking changesets',
        'checking manifests',
        'crosschecking files in changesets and manifests',
        'checking files',
        'checked 6 changesets with 24 changes to 20 files',
      ]);
      expect(errLines(report)).toEqual([]);
      expect(report.problems).toEqual([]);
    });

    it.skipIf(missing('hg'))(`${shape} fixture: the same output as hg verify${skipNote('hg')}`, async () => {
      const report = await verifyRepository(fixtures[shape]!);
      const h = hg(['verify'], fixtures[shape]);
      expect(h.status).toBe(0);
      expect(outLines(report)).toEqual(split(h.stdout));
    });
  }

  it.skipIf(missing('hg', 'make-corpus'))(
    `tiny corpus from make-corpus.sh: same counts as hg verify${skipNote('hg', 'make-corpus')}`,
    async () => {
      const dir = join(tmp, 'tiny');
      const res = spawnSync('bash', [MAKE_CORPUS, '--preset', 'tiny', dir], {
        encoding: 'utf8',
      });
      expect(res.status, res.stderr).toBe(0);
      const report = await verifyRepository(dir);
      const h = hg(['verify'], dir);
      expect(h.status).toBe(0);
      expect(split(h.stdout).at(-1)).toBe(
        `checked ${report.changesets} changesets with ${report.changes} changes to ${report.files} files`,
      );
      expect(report.files).toBeGreaterThan(1000);
    },
  );
});

interface Corruption {
  name: string;
  shape?: 'default' | 'legacy';
  corrupt: (repo: string) => void;
  hgExit: number;
  /** hg verify -q output (stderr), recorded from hg 6.3.2 */
  lines: string[];
}

const CORRUPTIONS: Corruption[] = [
  {
    name: 'a flipped byte in a filelog chunk',
    corrupt: (r) => patch(storeFile(r, 'data/_r_e_a_d_m_e.txt.i'), (b) => (b[64 + 3] ^= 0x20)),
    hgExit: 1,
    lines: [
      ' README.txt@0: unpacking 2c186c8c5bc0: integrity check failed on data/README.txt:0',
      '1 integrity errors encountered!',
      '(first damaged changeset appears to be 0)',
    ],
  },
  {
    name: 'a truncated .d',
    corrupt: (r) =>
      truncateSync(storeFile(r, 'data/big.bin.d'), readFileSync(storeFile(r, 'data/big.bin.d')).length - 100),
    hgExit: 1,
    lines: [
      ' big.bin@0: data length off by -100 bytes',
      ' big.bin@4: unpacking d1fa5cdf4202: partial read of revlog data/big.bin.d; expected 405 bytes from offset 140001, got 305',
      '2 integrity errors encountered!',
      '(first damaged changeset appears to be 0)',
    ],
  },
  {
    name: 'a truncated inline .i (last chunk cut)',
    corrupt: (r) =>
      truncateSync(
        storeFile(r, 'data/_r_e_a_d_m_e.txt.i'),
        readFileSync(storeFile(r, 'data/_r_e_a_d_m_e.txt.i')).length - 10,
      ),
    hgExit: 1,
    lines: [
      ' README.txt@0: broken revlog! (index data/README.txt is corrupted)',
      "warning: orphan data file 'data/README.txt.i'",
      '1 warnings encountered!',
      '1 integrity errors encountered!',
      '(first damaged changeset appears to be 0)',
    ],
  },
  {
    name: 'a truncated split .i (inside an entry)',
    corrupt: (r) =>
      writeFileSync(
        storeFile(r, 'data/big.bin.i'),
        readFileSync(storeFile(r, 'data/big.bin.i')).subarray(0, 100),
      ),
    hgExit: 1,
    lines: [
      ' big.bin@0: broken revlog! (index data/big.bin is corrupted)',
      "warning: orphan data file 'data/big.bin.d'",
      "warning: orphan data file 'data/big.bin.i'",
      '2 warnings encountered!',
      '1 integrity errors encountered!',
      '(first damaged changeset appears to be 0)',
    ],
  },
  {
    name: 'a filelog parent out of range (p1 = 2 on a 2-revision log)',
    corrupt: (r) => patch(storeFile(r, 'data/big.bin.i'), (b) => b.writeInt32BE(2, 64 + 24)),
    hgExit: 1,
    lines: [
      ' big.bin@4: unpacking d1fa5cdf4202: revlog index out of range',
      ' big.bin@4: checking parents of d1fa5cdf4202: revlog index out of range',
      '2 integrity errors encountered!',
      '(first damaged changeset appears to be 4)',
    ],
  },
  {
    name: 'a changelog parent out of range',
    corrupt: (r) => patch(storeFile(r, '00changelog.i'), (b) => b.writeInt32BE(6, inlineEntry(b, 1) + 24)),
    hgExit: 1,
    lines: [
      ' changelog@1: checking parents of 71041c743343: revlog index out of range',
      ' 1: unpacking changeset 71041c743343: revlog index out of range',
      ' manifest@?: rev 1 points to unexpected changeset 1',
      ' manifest@?: c0171264f683 not in changesets',
      ' README.txt@?: rev 1 points to unexpected changeset 1',
      ' (expected )',
      '1 warnings encountered!',
      '5 integrity errors encountered!',
      '(first damaged changeset appears to be 1)',
    ],
  },
  {
    name: 'a missing filelog',
    corrupt: (r) => unlinkSync(storeFile(r, 'data/nulstart.bin.i')),
    hgExit: 1,
    lines: [
      " warning: revlog 'data/nulstart.bin.i' not in fncache!",
      ' 0: empty or missing nulstart.bin',
      ' nulstart.bin@0: manifest refers to unknown revision e868c8a5270f',
      '1 warnings encountered!',
      'hint: run "hg debugrebuildfncache" to recover from corrupt fncache',
      '2 integrity errors encountered!',
      '(first damaged changeset appears to be 0)',
    ],
  },
  {
    name: 'a wrong node id',
    corrupt: (r) => patch(storeFile(r, 'data/big.bin.i'), (b) => (b[64 + 40] ^= 1)),
    hgExit: 1,
    lines: [
      ' big.bin@4: unpacking d1fa5cdf4202: integrity check failed on data/big.bin:1',
      ' big.bin@4: d1fa5cdf4202 not in manifests',
      ' big.bin@4: manifest refers to unknown revision d1fa5cdf4202',
      '3 integrity errors encountered!',
      '(first damaged changeset appears to be 4)',
    ],
  },
  {
    name: 'an fncache entry missing and an orphan (warnings only)',
    corrupt: (r) => {
      const f = storeFile(r, 'fncache');
      const kept = readFileSync(f, 'latin1')
        .split('\n')
        .filter((l) => l && l !== 'data/trail..i');
      writeFileSync(f, kept.join('\n') + '\ndata/ghost.i\n', 'latin1');
      writeFileSync(storeFile(r, 'data/ghost.i'), readFileSync(storeFile(r, 'data/trail..i')));
    },
    hgExit: 0,
    lines: [
      " warning: revlog 'data/trail..i' not in fncache!",
      "warning: orphan data file 'data/ghost.i'",
      '2 warnings encountered!',
      'hint: run "hg debugrebuildfncache" to recover from corrupt fncache',
    ],
  },
  {
    name: 'a manifest linkrev pointing elsewhere',
    corrupt: (r) => patch(storeFile(r, '00manifest.i'), (b) => b.writeInt32BE(3, 20)),
    hgExit: 1,
    lines: [
      ' manifest@?: rev 0 points to unexpected changeset 3',
      ' (expected 0)',
      '1 warnings encountered!',
      '1 integrity errors encountered!',
    ],
  },
  {
    name: 'a missing .d (its lines name the absolute path: compared live with hg)',
    corrupt: (r) => unlinkSync(storeFile(r, 'data/big.bin.d')),
    hgExit: 1,
    lines: [],
  },
  {
    name: 'a corrupt zlib header in a manifest snapshot (legacy repo): Python zlib words',
    shape: 'legacy',
    corrupt: (r) => patch(storeFile(r, '00manifest.i'), (b) => (b[64 + 1] ^= 0x01)),
    hgExit: 1,
    lines: [
      ' manifest@0: reading delta a2f81b83c1fc: revlog decompress error: Error -3 while decompressing data: incorrect header check',
      ' .config/x@0: in changeset but not in manifest',
      ...'COM1/lpt9.log Upper/MixedCase.TXT aux.txt con.txt dir.hg/file.txt enddot./f'
        .split(' ')
        .map((f) => ` ${f}@0: in changeset but not in manifest`),
      ' endsp /f@0: in changeset but not in manifest',
      ...['foo.i/bar', 'nulstart.bin', 'sp ace/q:colon', 'til~de_und', 'trail.'].map(
        (f) => ` ${f}@0: in changeset but not in manifest`,
      ),
      ' very/long/directory/names/that/keep/going/and/going/further/down/the/tree/until/we/exceed/the/limit/Of/One/Hundred/Twenty/chars/file_With_A_Long_Name.txt@0: in changeset but not in manifest',
      ...'x.hg/e y.i/f z.d/g'.split(' ').map((f) => ` ${f}@0: in changeset but not in manifest`),
      ' README.txt@0: 2c186c8c5bc0 not in manifests',
      ' big.bin@0: e0a120a55031 not in manifests',
      '20 integrity errors encountered!',
      '(first damaged changeset appears to be 0)',
    ],
  },
];

describe('verify: corrupted copies (both tools find the problem)', () => {
  for (const c of CORRUPTIONS) {
    it(c.name, async () => {
      const repo = copyFixture(c.shape ?? 'default');
      c.corrupt(repo);
      const report = await verifyRepository(repo, {}, { throwOnErrors: false });
      expect(report.errors > 0 ? 1 : 0).toBe(c.hgExit);
      if (c.lines.length) expect(errLines(report)).toEqual(c.lines);
      // every filelog text streamed (the path of texts above 32 MiB): the same findings
      const streamed = await verifyRepository(repo, {}, { throwOnErrors: false, streamAbove: 0 });
      expect(streamed.lines).toEqual(report.lines);
      if (report.errors) {
        // the default: a job that verifies fails with VERIFY_FAILED carrying the report
        const err = await verifyRepository(repo).catch((e: unknown) => e);
        expect(isSluiceError(err) && err.code).toBe('VERIFY_FAILED');
        expect(isSluiceError(err) && (err.details as { report: VerifyReport }).report.errors).toBe(
          report.errors,
        );
      }
    });

    it.skipIf(missing('hg'))(`${c.name}: hg verify finds the same problems${skipNote('hg')}`, async () => {
      const repo = copyFixture(c.shape ?? 'default');
      c.corrupt(repo);
      const report = await verifyRepository(repo, {}, { throwOnErrors: false });
      const h = hg(['verify'], repo);
      expect(h.status).toBe(c.hgExit);
      expect(errLines(report)).toEqual(split(h.stderr));
      expect(outLines(report)).toEqual(split(h.stdout));
    });
  }

  it('a truncated changelog index aborts like hg (exit 255: index 00changelog is corrupted)', async () => {
    const repo = copyFixture('default');
    truncateSync(storeFile(repo, '00changelog.i'), 100);
    const err = await verifyRepository(repo).catch((e: unknown) => e);
    expect(isSluiceError(err) && err.code).toBe('REVLOG');
    expect(isSluiceError(err) && err.details).toMatchObject({
      revlog: '00changelog',
      problem: 'truncated-entry',
    });
  });

  it.skipIf(missing('hg'))(`hg verify aborts on the same truncated changelog index${skipNote('hg')}`, () => {
    const repo = copyFixture('default');
    truncateSync(storeFile(repo, '00changelog.i'), 100);
    const h = hg(['verify'], repo);
    expect(h.status).toBe(255);
    expect(h.stderr).toContain('abort: index 00changelog is corrupted');
  });
});

describe.skipIf(missing('hg'))(
  `verify: a repository with merges, copies, renames, removals, symlinks${skipNote('hg')}`,
  () => {
    let repo: string;
    beforeAll(() => {
      repo = join(tmp, 'rich');
      const script = [
        'set -e',
        `hg init ${repo}`,
        `cd ${repo}`,
        'echo a > a; echo b > b; mkdir d; echo c > d/c; ln -s a link; printf "#!/bin/sh\\n" > x.sh; chmod +x x.sh',
        "hg add -q; hg ci -qm 0 -d '0 0'",
        "hg cp a a2; hg mv b b2; hg ci -qm copies -d '1 0'",
        "hg up -q 0; echo more >> a; hg ci -qm branch -d '2 0'",
        "hg merge -q 1 >/dev/null; hg ci -qm merge -d '3 0'",
        "hg rm -q d/c; hg ci -qm rm -d '4 0'",
        "mkdir -p d; echo new > d/c; hg add -q d/c; hg ci -qm readd -d '5 0'",
      ].join('\n');
      const res = spawnSync('bash', ['-c', script], {
        encoding: 'utf8',
        env: { ...process.env, HGPLAIN: '1', HGUSER: 't', HGRCPATH: '' },
      });
      if (res.status !== 0) throw new Error(res.stderr);
    });

    it('same output as hg verify', async () => {
      const report = await verifyRepository(repo);
      expect([report.changesets, report.changes, report.files]).toEqual([6, 10, 7]);
      const h = hg(['verify'], repo);
      expect(outLines(report)).toEqual(split(h.stdout));
      expect(errLines(report)).toEqual([]);
    });

    it('a missing copy source: the same four problems as hg', async () => {
      const broken = join(tmp, 'rich-broken');
      mkdirSync(broken);
      cpSync(join(repo, '.hg'), join(broken, '.hg'), { recursive: true });
      unlinkSync(storeFile(broken, 'data/b.i'));
      const report = await verifyRepository(broken, {}, { throwOnErrors: false });
      const h = hg(['verify'], broken);
      expect(h.status).toBe(1);
      expect(errLines(report)).toEqual(split(h.stderr));
      expect(errLines(report)).toContain(' b2@1: empty or missing copy source revlog b:1e88685f5dde');
      // the copy metadata read from the first bytes of streamed texts: the same problems
      const streamed = await verifyRepository(broken, {}, { throwOnErrors: false, streamAbove: 0 });
      expect(streamed.lines).toEqual(report.lines);
    });
  },
);

describe('verify: job behaviour', () => {
  it('emits start (standalone), log lines and throttled progress ending at 100 %', async () => {
    const events: JobEventInput[] = [];
    await verifyRepository(
      fixtures.default!,
      { emit: (e) => events.push(e), progressIntervalMs: 0 },
      { emitStart: true },
    );
    const start = events[0]!;
    expect(start).toMatchObject({ type: 'start', kind: 'verify', files: 23 });
    const progress = events.flatMap((e) => (e.type === 'progress' ? [e] : []));
    const last = progress.at(-1)!;
    expect(last.bytes).toBe(last.totalBytes);
    expect(last.files).toBe(last.totalFiles);
    expect(progress.length).toBeGreaterThan(2);
    const logs = events.flatMap((e) => (e.type === 'log' ? [e.message] : []));
    expect(logs.at(-1)).toBe('checked 6 changesets with 24 changes to 20 files');
  });

  it('is cancellable and refuses what is not a repository', async () => {
    const ac = new AbortController();
    ac.abort();
    const err = await verifyRepository(fixtures.default!, { signal: ac.signal }).catch((e: unknown) => e);
    expect(isSluiceError(err) && err.code).toBe('CANCELLED');
    const notRepo = await verifyRepository(join(tmp, 'nowhere')).catch((e: unknown) => e);
    expect(isSluiceError(notRepo) && notRepo.code).toBe('NOT_A_REPO');
  });

  it('reads through the thread pool give the same report as synchronous reads', async () => {
    const repo = copyFixture('default');
    truncateSync(storeFile(repo, 'data/big.bin.d'), 1000);
    const sync = await verifyRepository(repo, {}, { throwOnErrors: false, io: 'sync' });
    const pooled = await verifyRepository(repo, {}, { throwOnErrors: false, io: 'async', concurrency: 3 });
    expect(pooled.lines).toEqual(sync.lines);
    expect(sync.errors).toBeGreaterThan(0);
  });

  it('uses no scan worker by default on two cores (its memory is not worth 3% of wall time there), one per other core up to 3 beyond', () => {
    expect([1, 2, 3, 4, 8].map((cores) => defaultScanWorkers(cores))).toEqual([0, 0, 2, 3, 3]);
  });

  it('filelogs read on worker threads give the same report as one thread (clean and damaged)', async () => {
    const repo = copyFixture('default');
    const one = await verifyRepository(repo, {}, { throwOnErrors: false, workers: 0 });
    const two = await verifyRepository(
      repo,
      {},
      { throwOnErrors: false, workers: 2, scanOnMainThread: false },
    );
    expect(two.lines).toEqual(one.lines);
    expect(two.changes).toBeGreaterThan(0);
    expect(one.workerScans).toBe(0);
    expect(two.workerScans).toBeGreaterThan(0);
    patch(storeFile(repo, 'data/_r_e_a_d_m_e.txt.i'), (b) => (b[64 + 3] ^= 0x20));
    truncateSync(storeFile(repo, 'data/big.bin.d'), 1000);
    const damagedOne = await verifyRepository(repo, {}, { throwOnErrors: false, workers: 0 });
    const damagedTwo = await verifyRepository(
      repo,
      {},
      {
        throwOnErrors: false,
        workers: 2,
        scanOnMainThread: false,
      },
    );
    expect(damagedTwo.workerScans).toBe(damagedTwo.files);
    expect(damagedTwo.lines).toEqual(damagedOne.lines);
    expect(damagedTwo.errors).toBeGreaterThan(1);
  });

  it('--full also rebuilds every manifest (still clean on the fixtures)', async () => {
    const report = await verifyRepository(fixtures.legacy!, {}, { full: true });
    expect(report.errors).toBe(0);
  });
});
