// Interop of `sluice status` with real hg 6.3.2: on crafted working copies (every change kind,
// copies, each ignore syntax, exec bits, symlinks, a file replaced by a directory, ambiguous
// mtimes, dirstate-v2) its output is byte-for-byte `hg status`'s for each option, and the
// dirstate entries it fixes up are the ones hg's own status writes (`hg debugstate` agrees).
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  mkdirSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CliIO } from '../../src/cli/command';
import { HG_ENV, missing, removeDir, skipNote, tempDirMaker } from '../support/env';

const noHg = missing('hg');
const OPTION_SETS = [
  [],
  ['-m'],
  ['-a'],
  ['-r'],
  ['-d'],
  ['-u'],
  ['-i'],
  ['-c'],
  ['-A'],
  ['-n'],
  ['-A', '-n'],
  ['-C'],
  ['-q'],
  ['-mardu'],
  ['-ic'],
];

const makeTempDir = tempDirMaker('status');
let work: string;
let main: (argv: string[], io: CliIO) => Promise<number>;
beforeAll(async () => {
  work = makeTempDir('interop');
  process.env['HGRCPATH'] = ''; // sluice reads the user's configuration as hg does: none, as HG_ENV gives hg
  process.env['SLUICE_CLI_NO_RUN'] = '1';
  ({ main } = await import('../../src/cli/main'));
});
afterAll(() => removeDir(work));

function hg(args: string[], cwd: string): { out: string; err: string; code: number } {
  const r = spawnSync('hg', args, { cwd, env: HG_ENV, maxBuffer: 64 << 20 });
  return { out: r.stdout.toString('latin1'), err: r.stderr.toString('latin1'), code: r.status ?? -1 };
}

function hgOk(args: string[], cwd: string): string {
  const r = hg(args, cwd);
  if (r.code !== 0) throw new Error(`hg ${args.join(' ')}: ${r.err}`);
  return r.out;
}

async function sluice(argv: string[]): Promise<{ out: string; err: string; code: number }> {
  let out = '';
  let err = '';
  const stream = (append: (s: string) => void) =>
    ({
      write: (s: string | Buffer) => (append(typeof s === 'string' ? s : s.toString('latin1')), true),
      isTTY: false,
    }) as unknown as NodeJS.WriteStream;
  const code = await main(argv, {
    stdout: stream((s) => (out += s)),
    stderr: stream((s) => (err += s)),
    signal: new AbortController().signal,
  });
  return { out, err, code };
}

/** `sluice status REPO ARGS` against `hg -R REPO status ARGS`, from outside the repository. */
async function expectSameStatus(repo: string, args: string[]): Promise<string> {
  const theirs = hg(['-R', repo, 'status', ...args], work);
  const ours = await sluice(['status', repo, ...args]);
  expect({ args, out: ours.out, err: ours.err, code: ours.code }).toEqual({
    args,
    out: theirs.out,
    err: theirs.err,
    code: theirs.code,
  });
  return ours.out;
}

let n = 0;
function newRepo(init: string[] = []): string {
  const repo = join(work, `repo-${n++}`);
  const v2 = init.includes('format.use-dirstate-v2=yes');
  hgOk(['init', ...init, ...(v2 ? ['--config', 'storage.dirstate-v2.slow-path=allow'] : []), repo], work);
  // hg without its Rust extension refuses a dirstate-v2 repository unless told the slow path will do
  if (v2) writeFileSync(join(repo, '.hg', 'hgrc'), '[storage]\ndirstate-v2.slow-path = allow\n');
  return repo;
}

function write(repo: string, path: string, data: string): void {
  mkdirSync(join(repo, path, '..'), { recursive: true });
  writeFileSync(join(repo, path), data);
}

/** A working copy with one file in every state (and a copy), its files' mtimes in the past. */
function everyKind(init: string[] = []): string {
  const repo = newRepo(init);
  for (const f of ['clean', 'modified', 'removed', 'deleted', 'copied-from', 'dir/sub/keep', 'same-size'])
    write(repo, f, `${f}\n`);
  write(repo, '.hgignore', 'syntax: glob\n*.o\nbuild/\n');
  hgOk(['commit', '-Am', 'base'], repo);
  write(repo, 'modified', 'modified, longer now\n');
  write(repo, 'added', 'added\n');
  hgOk(['add', 'added'], repo);
  hgOk(['rm', 'removed'], repo);
  unlinkSync(join(repo, 'deleted'));
  hgOk(['cp', 'copied-from', 'copied-to'], repo);
  write(repo, 'unknown', 'u\n');
  write(repo, 'dir/unknown2', 'u\n');
  write(repo, 'x.o', 'ignored\n');
  write(repo, 'build/out', 'ignored dir\n');
  return repo;
}

describe.skipIf(noHg)(`sluice status against hg status${skipNote('hg')}`, () => {
  for (const [label, init] of [
    ['dirstate-v1', ['--config', 'format.use-dirstate-v2=no']],
    ['dirstate-v2', ['--config', 'format.use-dirstate-v2=yes']],
  ] as const) {
    it(`every change kind and option (${label})`, async () => {
      const repo = everyKind([...init]);
      for (const args of OPTION_SETS) await expectSameStatus(repo, args);
      const all = await expectSameStatus(repo, ['-A']);
      expect(all).toContain('A copied-to\n  copied-from\n');
      // from inside the repository, and with hg's global -R before the command
      const inside = await sluice(['-R', repo, 'status', '-A']);
      expect(inside.out).toBe(all);
    });
  }

  it('ignore syntaxes: regexp, glob, rootglob, include:, subinclude:, [ui] ignore, (?i)', async () => {
    const repo = newRepo();
    write(
      repo,
      '.hgignore',
      [
        '# default syntax is regexp',
        '\\.pyc$',
        '^tmp/',
        '(?i)\\.BAK$',
        'literal\\#hash',
        'syntax: glob',
        '*.log',
        'glob:cache/**',
        'rootglob:top.txt',
        're:^re-only',
        'syntax: rootglob',
        'root-*.dat',
        'include:more-ignores',
        'subinclude:sub/.hgignore',
        'syntax: nonsense',
      ].join('\n') + '\n',
    );
    write(repo, 'more-ignores', 'syntax: glob\n*.inc\n');
    write(repo, 'sub/.hgignore', 'syntax: glob\nlocal-*\n');
    write(repo, '.hg/hgrc', '[ui]\nignore.extra = extra-ignores\n');
    write(repo, 'extra-ignores', 'syntax: glob\n*.extra\n');
    write(repo, 'keep', 'k\n');
    hgOk(['commit', '-Am', 'base'], repo);
    for (const f of [
      'a.pyc',
      'a.py',
      'tmp/x',
      'x/tmp/y',
      'f.bak',
      'F.BAK',
      'literal#hash',
      'a.log',
      'd/b.log',
      'cache/a/b',
      'd/cache/c',
      'top.txt',
      'd/top.txt',
      're-only-x',
      'd/re-only',
      'root-1.dat',
      'd/root-2.dat',
      'x.inc',
      'sub/local-1',
      'local-2',
      'sub/other',
      'y.extra',
      'plain',
    ])
      write(repo, f, 'x\n');
    await expectSameStatus(repo, []);
    await expectSameStatus(repo, ['-i']);
    await expectSameStatus(repo, ['-A']);
  });

  it('a missing [ui] ignore file is warned about as hg does', async () => {
    const repo = newRepo();
    write(repo, '.hg/hgrc', '[ui]\nignore = no-such-file\n');
    write(repo, 'u', 'u\n');
    await expectSameStatus(repo, []);
  });

  it('exec bits, symlinks, a file replaced by a directory', async () => {
    const repo = newRepo();
    write(repo, 'script', 'echo\n');
    write(repo, 'plain', 'p\n');
    write(repo, 'becomes-dir', 'f\n');
    write(repo, 'target-a', 'a\n');
    symlinkSync('target-a', join(repo, 'link'));
    symlinkSync('target-a', join(repo, 'link-to-file'));
    hgOk(['commit', '-Am', 'base'], repo);
    chmodSync(join(repo, 'script'), 0o755);
    unlinkSync(join(repo, 'link'));
    symlinkSync('target-b', join(repo, 'link')); // same length: only the target differs
    unlinkSync(join(repo, 'link-to-file'));
    write(repo, 'link-to-file', 'target-a');
    unlinkSync(join(repo, 'becomes-dir'));
    write(repo, 'becomes-dir/inside', 'x\n');
    for (const args of OPTION_SETS) await expectSameStatus(repo, args);
  });

  it('ambiguous mtimes: same size, new contents, same second as the dirstate write', async () => {
    const repo = newRepo();
    write(repo, 'a', 'aaaa\n');
    write(repo, 'b', 'bbbb\n');
    hgOk(['commit', '-Am', 'base'], repo);
    write(repo, 'a', 'AAAA\n'); // within the commit's second: the dirstate holds no mtime for it
    await expectSameStatus(repo, ['-A']);
  });

  for (const [label, init] of [
    ['dirstate-v1', ['--config', 'format.use-dirstate-v2=no']],
    ['dirstate-v2', ['--config', 'format.use-dirstate-v2=yes']],
  ] as const)
    it(`debugrebuilddirstate, debugsetparents: lookups by content, fix-ups as hg writes them (${label})`, async () => {
      const repo = newRepo([...init]);
      for (const f of ['one', 'two', 'three']) write(repo, f, `${f} v1\n`);
      hgOk(['commit', '-Am', 'r0'], repo);
      write(repo, 'two', 'two v2\n'); // same size
      hgOk(['commit', '-m', 'r1'], repo);
      hgOk(['debugrebuilddirstate'], repo);
      const past = new Date('2020-01-01T00:00:00Z');
      for (const f of ['one', 'two', 'three']) utimesSync(join(repo, f), past, past);
      const theirs = join(work, `repo-${n++}`);
      cpSync(repo, theirs, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true });
      expect((await sluice(['status', repo, '-A'])).out).toBe(hgOk(['status', '-A'], theirs));
      // both fixed up the entries: the same dirstate, dates included
      expect(hgOk(['debugstate'], repo)).toBe(hgOk(['debugstate'], theirs));
      expect(hgOk(['debugstate'], repo)).not.toContain('unset');
      // the parent moved under the files: stat says clean, as for hg
      hgOk(['debugsetparents', '0'], repo);
      await expectSameStatus(repo, ['-A']);
      write(repo, 'three', 'THREE v\n');
      await expectSameStatus(repo, ['-A']);
    });

  it('lookups by hash: data starting with \\1\\n, a copy with metadata, a symlink, a same-size change', async () => {
    const repo = newRepo();
    write(repo, 'meta', '\x01\nlooks like metadata\n');
    write(repo, 'orig', 'original\n');
    symlinkSync('orig', join(repo, 'link'));
    hgOk(['commit', '-Am', 'r0'], repo);
    hgOk(['copy', 'orig', 'copy'], repo);
    hgOk(['commit', '-m', 'r1'], repo);
    hgOk(['debugrebuilddirstate'], repo);
    const past = new Date('2020-01-01T00:00:00Z');
    for (const f of ['meta', 'orig', 'copy']) utimesSync(join(repo, f), past, past);
    write(repo, 'orig', 'ORIGINAL\n'); // same size, in doubt
    const theirs = join(work, `repo-${n++}`);
    cpSync(repo, theirs, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true });
    const ours = (await sluice(['status', repo, '-A'])).out;
    expect(ours).toBe(hgOk(['status', '-A'], theirs));
    expect(ours).toContain('C meta\n');
    expect(ours).toContain('C copy\n');
    expect(ours).toContain('M orig\n');
  });

  it.skipIf(process.getuid?.() === 0)(
    `unreadable files and directories${process.getuid?.() === 0 ? ' (skipped: root reads files whatever their mode)' : ''}`,
    async () => {
      const repo = newRepo();
      write(repo, 'secret', 'same\n');
      write(repo, 'closed/x', 'x\n');
      hgOk(['commit', '-Am', 'base'], repo);
      write(repo, 'secret', 'SAME\n'); // same size, in doubt: read by both
      write(repo, 'closed/new', 'n\n');
      chmodSync(join(repo, 'secret'), 0);
      chmodSync(join(repo, 'closed'), 0);
      try {
        await expectSameStatus(repo, []);
      } finally {
        chmodSync(join(repo, 'closed'), 0o755);
        chmodSync(join(repo, 'secret'), 0o644);
      }
    },
  );

  it('a nested repository is left out; an unknown file inside .hg is not listed', async () => {
    const repo = newRepo();
    write(repo, 'a', 'a\n');
    hgOk(['commit', '-Am', 'base'], repo);
    hgOk(['init', join(repo, 'nested')], work);
    write(repo, 'nested/file', 'n\n');
    write(repo, 'other/file', 'o\n');
    await expectSameStatus(repo, ['-A']);
    rmSync(join(repo, 'other'), { recursive: true });
  });
});
