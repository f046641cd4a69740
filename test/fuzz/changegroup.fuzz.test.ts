// Fuzzing the changegroup apply path end to end (`sluice apply`, `hg unbundle`'s job): bundles
// real hg wrote (cg1, cg2, cg3, compressed, with phase-heads), mutated and delivered in random
// pieces, applied to an empty repository, where every revision is new and so rebuilt and checked.
// Each case either applies (then hg verify passes, and the same bytes in one piece write the same
// store) or fails with a SluiceError of an input code, and then the repository is exactly as it
// was: same files, no store directory left behind, no lock, no journal.
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyBundleBytesToRepo } from '../../src/main/engine/changegroup';
import { JobContext } from '../../src/main/engine/context/job-context';
import { missing, removeDir, skipNote, tempDirMaker } from '../support/env';
import { copyRepo, hg, makeBundle, makeSourceRepo, treeHash, verifyOk } from '../interop/changegroup-support';
import {
  asyncPieces,
  cutsArb,
  mutate,
  mutatedArb,
  params,
  parsesOrSluiceError,
  splitBy,
} from './fuzz-support';

const makeTempDir = tempDirMaker('fuzz');
let work = '';
let empty = '';
let emptyHash = '';
const bundles: Buffer[] = [];

describe.skipIf(missing('hg'))(`fuzz: changegroup bundles applied to a repository${skipNote('hg')}`, () => {
  beforeAll(() => {
    work = makeTempDir('cg');
    const src = makeSourceRepo(join(work, 'src'));
    empty = join(work, 'empty');
    hg(['init', empty]);
    emptyHash = treeHash(empty);
    // small bundles (the first changesets) so mutations hit the framing, one whole one with the big file
    const specs: [string, string?][] = [
      ['none-v1', '0'],
      ['none-v2', '0:2'],
      ['none-v2;cg.version=03', '0'],
      ['gzip-v2;phases=true', '0:1'],
      ['none-v2;phases=true'],
    ];
    specs.forEach(([spec, revs], i) => {
      bundles.push(readFileSync(makeBundle(src, spec, join(work, `b${i}.hg`), revs)));
    });
  }, 120_000);
  afterAll(() => work && removeDir(work));

  it('mutated bundles in random pieces: applied and verified, or a SluiceError with the repository untouched', async () => {
    let n = 0;
    const outcomes = new Map<string, number>();
    await fc.assert(
      // the counterexample shows the mutations, not the 300 KiB they produce
      fc.asyncProperty(
        mutatedArb(bundles).map(({ input, mutations }) => ({ input, mutations })),
        cutsArb(),
        async (c, cuts) => {
          const m = { ...c, bytes: mutate(bundles[c.input]!, c.mutations) };
          const repo = copyRepo(empty, join(work, `r${n++}`));
          const outcome = await parsesOrSluiceError(
            () =>
              applyBundleBytesToRepo(
                repo,
                asyncPieces(splitBy(m.bytes, cuts)),
                new JobContext({ fileEvents: false }),
              ),
            `bundle ${m.input} ${JSON.stringify(m.mutations)}`,
          );
          outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
          // the same bytes in one piece: applied the same, or refused too
          const whole = copyRepo(empty, join(work, `w${n}`));
          const wholeOutcome = await parsesOrSluiceError(
            () =>
              applyBundleBytesToRepo(whole, asyncPieces([m.bytes]), new JobContext({ fileEvents: false })),
            `bundle ${m.input} whole`,
          );
          expect(wholeOutcome === 'ok', `${outcome} in pieces, ${wholeOutcome} whole`).toBe(outcome === 'ok');
          if (outcome === 'ok') {
            // every applied case verifies: a mutated file name is refused before the commit
            // (needed-files.ts, hg's server.validate), not left for hg verify to find
            const v = verifyOk(repo);
            expect(v.ok, v.out).toBe(true);
            expect(treeHash(join(whole, '.hg', 'store'))).toBe(treeHash(join(repo, '.hg', 'store')));
          } else expect(treeHash(repo), outcome).toBe(emptyHash);
          rmSync(whole, { recursive: true, force: true });
          for (const p of ['wlock', 'store/lock', 'store/journal'])
            expect(existsSync(join(repo, '.hg', p)), p).toBe(false);
          rmSync(repo, { recursive: true, force: true });
        },
      ),
      params(40),
    );
    // the mutations reached the checks past the framing, not just the first bytes
    expect([...outcomes.keys()].filter((k) => k !== 'ok').length).toBeGreaterThan(1);
  }, 300_000);
});
