// A local repository as clone or pull source (operations/local-peer.ts: serveStdio in process): a
// cancel mid-pull, or a source that fails mid-changegroup (a corrupt filelog), leaves the
// destination as it was (a pull's transaction rolled back, no lock or journal left; a clone's DEST
// absent), and the source untouched.
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyBundle2ToRepo, createEmptyRepository } from '../../src/main/engine/changegroup';
import { SluiceError } from '../../src/main/engine/errors';
import { JobContext } from '../../src/main/engine/context/job-context';
import { buildRevlog } from '../support/revlog';
import { extractFixture, removeDir, tempDirMaker } from '../support/env';
import { cloneFromUrl } from '../../src/main/engine/operations/clone/clone';
import { pullFromUrl } from '../../src/main/engine/operations/pull/pull';
import type { JobPhase } from '../../src/shared/events';
import { treeHash } from '../interop/changegroup-support';
import { bundle2Of, craftCg2, pieces } from './craft';

let work = '';
let source = '';
let corrupt = '';
let n = 0;

beforeAll(async () => {
  work = tempDirMaker('hostile-local-source')('w');
  source = extractFixture('default', work);
  // a source whose filelog f.txt points past its data file: the changegroup fails at that file
  corrupt = join(work, 'corrupt');
  await createEmptyRepository(corrupt);
  const content = 'local source\n'.repeat(10);
  await applyBundle2ToRepo(
    corrupt,
    pieces(
      await bundle2Of(
        craftCg2([
          { name: 'a.txt', content: 'first\n' },
          { name: 'f.txt', content },
        ]).cg,
      ),
    ),
    new JobContext(),
  );
  const built = buildRevlog([{ text: content }], { inline: false, generalDelta: true });
  const index = Buffer.from(built.index);
  index.writeInt32BE(0x7fff0000, 8); // compressed length far past the .d
  writeFileSync(join(corrupt, '.hg', 'store', 'data', 'f.txt.i'), index);
  writeFileSync(join(corrupt, '.hg', 'store', 'data', 'f.txt.d'), built.data);
});
afterAll(() => removeDir(work));

/** A context whose job is cancelled when it enters `phase`. */
function cancelAt(phase: JobPhase): { ctx: JobContext; reached: () => boolean } {
  const ac = new AbortController();
  let reached = false;
  const ctx = new JobContext({
    signal: ac.signal,
    fileEvents: false,
    sink: (e) => {
      if (e.type === 'phase' && e.phase === phase) {
        reached = true;
        ac.abort();
      }
    },
  });
  return { ctx, reached: () => reached };
}

async function emptyRepo(): Promise<string> {
  const repo = join(work, `dest-${n++}`);
  await createEmptyRepository(repo);
  return repo;
}

const failure = (p: Promise<unknown>): Promise<SluiceError> =>
  p.then(
    () => {
      throw new Error('it succeeded');
    },
    (e: unknown) => e as SluiceError,
  );

describe('pull from a local path', () => {
  it.each(['changesets', 'manifests', 'files'] as const)(
    'cancelled when the changegroup reaches its %s: CANCELLED, the repository as it was, no lock or journal',
    async (phase) => {
      const repo = await emptyRepo();
      const before = treeHash(repo);
      const sourceBefore = treeHash(source);
      const { ctx, reached } = cancelAt(phase);
      const err = await failure(pullFromUrl({ kind: 'pull', repo, source }, ctx));
      expect(reached()).toBe(true);
      expect(err.code, err.message).toBe('CANCELLED');
      expect(treeHash(repo)).toBe(before);
      expect(readdirSync(join(repo, '.hg', 'store')).filter((f) => /lock|journal/.test(f))).toEqual([]);
      expect(treeHash(source)).toBe(sourceBefore);
      // and the next pull brings everything
      const done = await pullFromUrl({ kind: 'pull', repo, source: `file://${source}` }, new JobContext());
      expect(done.changesets).toBeGreaterThan(0);
    },
  );

  it('a source that fails mid-changegroup (a corrupt filelog): a typed error, the repository as it was', async () => {
    const repo = await emptyRepo();
    const before = treeHash(repo);
    const err = await failure(pullFromUrl({ kind: 'pull', repo, source: corrupt }, new JobContext()));
    expect(err).toBeInstanceOf(SluiceError);
    expect(err.message).toMatch(/f\.txt/);
    expect(treeHash(repo)).toBe(before);
    expect(readdirSync(join(repo, '.hg', 'store')).filter((f) => /lock|journal/.test(f))).toEqual([]);
  });
});

describe('clone from a local path', () => {
  it.each([
    ['write', false],
    ['manifests', true],
    ['files', true],
  ] as const)('cancelled at its %s (pull protocol: %s): CANCELLED, nothing at DEST', async (phase, pull) => {
    const parent = join(work, `clone-${n++}`);
    mkdirSync(parent);
    const { ctx, reached } = cancelAt(phase);
    const err = await failure(
      cloneFromUrl({ kind: 'clone', url: source, dest: join(parent, 'c'), update: true, pull }, ctx),
    );
    expect(reached()).toBe(true);
    expect(err.code, err.message).toBe('CANCELLED');
    expect(readdirSync(parent)).toEqual([]);
  });

  it.each([true, false])(
    'a source with a corrupt filelog (pull protocol: %s; a stream copies it and the checkout meets it): a typed error, nothing at DEST',
    async (pull) => {
      const parent = join(work, `clone-${n++}`);
      mkdirSync(parent);
      const err = await failure(
        cloneFromUrl(
          { kind: 'clone', url: corrupt, dest: join(parent, 'c'), update: true, pull },
          new JobContext(),
        ),
      );
      expect(err).toBeInstanceOf(SluiceError);
      expect(err.message).toMatch(/f\.txt/);
      expect(readdirSync(parent)).toEqual([]);
      expect(existsSync(join(parent, 'c'))).toBe(false);
    },
  );
});
