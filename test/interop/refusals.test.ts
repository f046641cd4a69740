// Repositories Sluice does not support yet, made by hg itself (largefiles, lfs, a narrow clone, a
// requirement nobody knows), are refused up front by every command that would read or write them,
// naming the feature (an unknown requirement in hg's words, localrepo.ensurerequirementsrecognized),
// with hg's exit status 255, and not a byte of the repository changed.
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hgSync, missing, removeDir, skipNote, tempDirMaker } from '../support/env';
import { treeHash } from './changegroup-support';
import { hgOrThrow as hg, sluice } from './cli-support';

const HINT = '(see https://mercurial-scm.org/wiki/MissingRequirement for more information)\n';

const requiresOf = (repo: string): string[] =>
  ['requires', 'store/requires'].flatMap((f) =>
    readFileSync(join(repo, '.hg', f), 'latin1')
      .split('\n')
      .filter(Boolean),
  );

/** Each repository's requirement, and Sluice's refusal (`abort:` and hint lines). */
const NOT_YET = '(use hg for this repository)\n';
const KINDS = {
  largefiles:
    'requires features Sluice does not support yet: largefiles (the largefiles extension)\n' + NOT_YET,
  lfs: 'requires features Sluice does not support yet: lfs (the lfs extension)\n' + NOT_YET,
  'narrowhg-experimental':
    'requires features Sluice does not support yet: a narrow clone (narrowhg-experimental)\n' + NOT_YET,
  'exp-sluice-invented': 'requires features unknown to this Mercurial: exp-sluice-invented\n' + HINT,
} as const;

describe.skipIf(missing('hg'))(`unsupported repositories are refused up front${skipNote('hg')}`, () => {
  const tempDir = tempDirMaker('refusals');
  let work = '';
  let plain = '';
  let bundle = '';
  const repos = new Map<string, string>();

  beforeAll(() => {
    work = tempDir('repos');
    plain = join(work, 'plain');
    hg(['init', plain]);
    mkdirSync(join(plain, 'd1'));
    mkdirSync(join(plain, 'd2'));
    writeFileSync(join(plain, 'd1', 'a'), 'a\n');
    writeFileSync(join(plain, 'd2', 'b'), 'b\n');
    hg(['commit', '-q', '-A', '-m', 'c0', '-d', '0 0'], plain);
    bundle = join(work, 'plain.hg');
    hg(['bundle', '-q', '-a', '-t', 'none-v2', bundle], plain);

    const large = join(work, 'largefiles');
    const withLarge = ['--config', 'extensions.largefiles='];
    hg([...withLarge, 'init', large]);
    writeFileSync(join(large, 'big'), 'big\n');
    hg([...withLarge, 'add', '-q', '--large', 'big'], large);
    hg([...withLarge, 'commit', '-q', '-m', 'big', '-d', '0 0'], large);
    repos.set('largefiles', large);

    const lfs = join(work, 'lfs');
    const withLfs = ['--config', 'extensions.lfs=', '--config', 'lfs.track=all()'];
    hg([...withLfs, 'init', lfs]);
    writeFileSync(join(lfs, 'blob'), 'blob\n');
    hg([...withLfs, 'commit', '-q', '-A', '-m', 'blob', '-d', '0 0'], lfs);
    repos.set('lfs', lfs);

    const narrow = join(work, 'narrow');
    hg(['clone', '-q', '--narrow', '--include', 'path:d1', '--config', 'extensions.narrow=', plain, narrow]);
    repos.set('narrowhg-experimental', narrow);

    const invented = join(work, 'invented');
    hg(['clone', '-q', plain, invented]);
    appendFileSync(join(invented, '.hg', 'store', 'requires'), 'exp-sluice-invented\n');
    repos.set('exp-sluice-invented', invented);

    // hg wrote each requirement itself (debugrequirements would refuse the repository too)
    for (const kind of Object.keys(KINDS)) expect(requiresOf(repos.get(kind)!), kind).toContain(kind);
  }, 120_000);
  afterAll(() => work && removeDir(work));

  for (const [kind, refusal] of Object.entries(KINDS)) {
    it(`${kind}: pull, apply, update and serve refuse it up front, nothing written`, async () => {
      const repo = repos.get(kind)!;
      const before = treeHash(repo);
      for (const args of [
        ['pull', repo, plain],
        ['apply', bundle, repo],
        ['update', repo],
        ['serve', repo, '--port', '0'],
      ]) {
        const ours = await sluice(args, { cwd: work });
        expect(ours.code, `sluice ${args[0]}: ${ours.stderr}`).toBe(255);
        expect(ours.stderr, `sluice ${args[0]}`).toBe('abort: repository ' + refusal);
        // refused before connecting or listening: not even `pulling from`
        expect(ours.stdout, `sluice ${args[0]}`).toBe('');
      }
      expect(treeHash(repo)).toBe(before);
    }, 120_000);
  }

  it("an unknown requirement: hg's own refusal is the same two lines, exit 255", () => {
    const theirs = hgSync(['pull', plain], repos.get('exp-sluice-invented'));
    expect(theirs.status).toBe(255);
    expect(theirs.stderr).toBe('abort: repository ' + KINDS['exp-sluice-invented']);
  });
});
