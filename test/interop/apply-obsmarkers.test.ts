// Bundles with obsolescence markers, made by `hg bundle` with
// experimental.evolution.bundle-obsmarker (the part is mandatory unless
// bundle-obsmarker:mandatory=false), applied by Sluice as `hg unbundle` applies them
// (bundle2.handleobsmarker): into a repository that may create markers they merge into the
// obsstore; into one that may not (evolution off), a mandatory part aborts the whole unbundle
// (obsstore.add of a read-only store: `abort: creating obsolete markers is not enabled on this
// repo`, the transaction rolled back) and an advisory one is skipped.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyChangegroupBundleFile } from '../../src/main/engine/operations/apply/apply-changegroup-bundle';
import { SluiceError } from '../../src/main/engine/errors';
import { JobContext } from '../../src/main/engine/context/job-context';
import { hgSync, missing, skipNote } from '../support/env';
import { pullFromUrl } from '../../src/main/engine/operations/pull/pull';
import { startServer } from '../../src/main/engine/operations/serve/http-server';
import { copyRepo, hg, logOf, treeHash, verifyOk } from './changegroup-support';
import { scriptedServer } from '../wire-faults/harness';
import { hgAsync } from './wire-support';

const work = mkdtempSync(join(tmpdir(), 'sluice-apply-obs-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const EVOLVE = ['--config', 'experimental.evolution=all'];
const BUNDLE_OBS = ['--config', 'experimental.evolution.bundle-obsmarker=yes'];
const HG_ABORT = 'creating obsolete markers is not enabled on this repo';

describe.skipIf(missing('hg'))(`bundles with obsolescence markers applied by Sluice${skipNote('hg')}`, () => {
  let src = '';
  let base = '';
  let mandatory = '';
  let advisory = '';
  let whole = '';

  beforeAll(() => {
    src = join(work, 'src');
    hg(['init', src]);
    writeFileSync(join(src, '.hg', 'hgrc'), '[experimental]\nevolution = all\n[phases]\npublish = False\n');
    for (const text of ['a', 'b', 'c']) {
      writeFileSync(join(src, 'f'), text);
      hg(['commit', '-q', '-A', '-m', text, '-d', '0 0'], src);
    }
    writeFileSync(join(src, 'f'), 'c2');
    hg(['commit', '-q', '--amend', '-m', 'c2', '-d', '0 0'], src);
    base = join(work, 'base');
    hg(['clone', '-q', '-U', '-r', '0', src, base]);
    mandatory = join(work, 'mandatory.hg');
    advisory = join(work, 'advisory.hg');
    whole = join(work, 'whole.hg');
    const bundle = (out: string, revs: string[], extra: string[] = []): void =>
      void hg(['bundle', '-q', ...revs, ...BUNDLE_OBS, ...extra, out], src);
    bundle(mandatory, ['-r', 'tip', '--base', '0']);
    bundle(
      advisory,
      ['-r', 'tip', '--base', '0'],
      ['--config', 'experimental.evolution.bundle-obsmarker:mandatory=no'],
    );
    bundle(whole, ['--all']);
  });

  /** A copy of base, evolution on or off in its hgrc. */
  function destOf(label: string, evolve: boolean): string {
    const dest = copyRepo(base, join(work, label));
    writeFileSync(join(dest, '.hg', 'hgrc'), evolve ? '[experimental]\nevolution = all\n' : '');
    return dest;
  }

  it('hg bundle writes the part mandatory (OBSMARKERS) by default, advisory when told', () => {
    expect(hg(['debugbundle', '--part-type', 'obsmarkers', mandatory])).toMatch(
      /obsmarkers -- \{\} \(mandatory: True\)/,
    );
    expect(hg(['debugbundle', '--part-type', 'obsmarkers', advisory])).toMatch(
      /obsmarkers -- \{\} \(mandatory: False\)/,
    );
  });

  it('mandatory part, evolution off: hg unbundle aborts, and so does Sluice, the repository as it was', async () => {
    const theirs = destOf('off-hg', false);
    const ours = destOf('off-sluice', false);
    const before = treeHash(ours);
    const h = hgSync(['unbundle', '-q', mandatory], theirs);
    expect(h.status).toBe(255);
    expect(h.stderr).toContain(`abort: ${HG_ABORT}`);
    const err = await applyChangegroupBundleFile(mandatory, ours, new JobContext()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SluiceError);
    expect((err as SluiceError).code).toBe('OBSOLESCENCE_DISABLED');
    expect((err as Error).message).toBe(HG_ABORT);
    // nothing half-written: not the changesets before the part, no journal, no lock
    expect(treeHash(ours)).toBe(before);
    expect(logOf(ours)).toBe(logOf(theirs));
    expect(verifyOk(ours).ok).toBe(true);
  });

  it('mandatory part, evolution off, a new DEST: refused, no DEST left', async () => {
    const theirs = join(work, 'off-new-hg');
    hg(['init', theirs]);
    expect(hgSync(['unbundle', '-q', whole], theirs).stderr).toContain(`abort: ${HG_ABORT}`);
    const dest = join(work, 'off-new');
    const err = await applyChangegroupBundleFile(whole, dest, new JobContext()).catch((e: unknown) => e);
    expect((err as SluiceError).code).toBe('OBSOLESCENCE_DISABLED');
    expect(existsSync(dest)).toBe(false);
  });

  it('advisory part, evolution off: the changesets land without the markers, as with hg unbundle', async () => {
    const theirs = destOf('adv-hg', false);
    const ours = destOf('adv-sluice', false);
    expect(hgSync(['unbundle', '-q', advisory], theirs).status).toBe(0);
    await applyChangegroupBundleFile(advisory, ours, new JobContext());
    expect(existsSync(join(theirs, '.hg', 'store', 'obsstore'))).toBe(false);
    expect(existsSync(join(ours, '.hg', 'store', 'obsstore'))).toBe(false);
    expect(logOf(ours)).toBe(logOf(theirs));
    expect(verifyOk(ours).ok).toBe(true);
  });

  it.each([
    ['mandatory', () => mandatory],
    ['advisory', () => advisory],
  ])('%s part, evolution on: the obsstore hg unbundle writes', async (label, path) => {
    const theirs = destOf(`on-${label}-hg`, true);
    const ours = destOf(`on-${label}-sluice`, true);
    expect(hgSync(['unbundle', '-q', path()], theirs).status).toBe(0);
    await applyChangegroupBundleFile(path(), ours, new JobContext());
    const obsstore = readFileSync(join(ours, '.hg', 'store', 'obsstore'));
    expect(obsstore.equals(readFileSync(join(theirs, '.hg', 'store', 'obsstore')))).toBe(true);
    expect(hg([...EVOLVE, 'log', '--hidden', '-T', '{node} {phase}\n'], ours)).toBe(
      hg([...EVOLVE, 'log', '--hidden', '-T', '{node} {phase}\n'], theirs),
    );
  });

  it('a pull reply with a mandatory obsmarkers part nobody asked for, evolution off: the pull aborts as hg pull does, the repository as it was', async () => {
    // a server that answers getbundle with a bundle file's parts whatever was asked
    const bundle = join(work, 'unasked.hg');
    hg(['bundle', '-q', '-t', 'none-v2', '-r', 'tip', '--base', '0', ...BUNDLE_OBS, bundle], src);
    const body = Buffer.concat([Buffer.from('\x04none', 'latin1'), readFileSync(bundle)]);
    const backend = await startServer({ repo: src });
    const front = await scriptedServer(backend.url, (_req, res, ctx) => {
      if (ctx.cmd !== 'getbundle') return false;
      res.writeHead(200, { 'Content-Type': 'application/mercurial-0.2' });
      res.end(body);
      return true;
    });
    try {
      const repo = destOf('unasked', false);
      const before = treeHash(repo);
      const err = await pullFromUrl({ kind: 'pull', repo, source: front.url }, new JobContext()).catch(
        (e: unknown) => e,
      );
      expect((err as SluiceError).code).toBe('OBSOLESCENCE_DISABLED');
      expect(treeHash(repo)).toBe(before);
      const twin = destOf('unasked-hg', false);
      const h = await hgAsync(['-R', twin, 'pull', front.url]);
      expect(h.status).toBe(255);
      expect(h.stderr).toContain(`abort: ${HG_ABORT}`);
      expect(logOf(twin)).toBe(logOf(repo));
    } finally {
      await front.close();
      await backend.close();
    }
  });
});
