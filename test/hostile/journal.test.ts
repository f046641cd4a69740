// A hostile repository's leftover journal (what a crash leaves in .hg/store) is rolled back by
// the next write only through paths that stay in the repository: no symbolic link is followed to
// truncate, delete or overwrite a file outside it (hg's vfs pathauditor refuses them too).
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { applyBundle2ToRepo, createEmptyRepository } from '../../src/main/engine/changegroup';
import { SluiceError } from '../../src/main/engine/errors';
import { updateWorkingCopy } from '../../src/main/engine/operations/update/update';
import { JobContext } from '../../src/main/engine/context/job-context';
import { bundle2Of, craftCg2, pieces } from './craft';

const work = mkdtempSync(join(tmpdir(), 'sluice-hostile-journal-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
let n = 0;

/** A repository whose store holds `setup`'s journal, and a folder outside it with precious files. */
async function hostileRepo(
  setup: (store: string, outside: string) => void,
): Promise<{ repo: string; outside: string }> {
  const root = join(work, `case${n++}`);
  const repo = join(root, 'repo');
  const outside = join(root, 'outside');
  mkdirSync(outside, { recursive: true });
  writeFileSync(join(outside, 'victim.i'), 'precious');
  writeFileSync(join(outside, 'authorized_keys'), 'ssh-ed25519 mine');
  await createEmptyRepository(repo);
  setup(join(repo, '.hg', 'store'), outside);
  return { repo, outside };
}

async function pullInto(repo: string): Promise<unknown> {
  const bundle = await bundle2Of(craftCg2([{ name: 'a.txt', content: 'a\n' }]).cg);
  return applyBundle2ToRepo(repo, pieces(bundle), new JobContext()).catch((e: unknown) => e);
}

function untouched(outside: string): void {
  expect(readFileSync(join(outside, 'victim.i'), 'latin1')).toBe('precious');
  expect(readFileSync(join(outside, 'authorized_keys'), 'latin1')).toBe('ssh-ed25519 mine');
}

describe('a leftover journal naming paths through symbolic links', () => {
  it.each([
    [
      'truncation through a symlinked directory',
      (store: string, outside: string) => {
        symlinkSync(outside, join(store, 'evil'));
        writeFileSync(join(store, 'journal'), 'evil/victim.i\x003\n');
      },
    ],
    [
      'deletion through a symlinked directory',
      (store: string, outside: string) => {
        symlinkSync(outside, join(store, 'evil'));
        writeFileSync(join(store, 'journal'), 'evil/victim.i\x000\n');
      },
    ],
    [
      'truncation of a file that is a symlink',
      (store: string, outside: string) => {
        symlinkSync(join(outside, 'victim.i'), join(store, '00manifest.i'));
        writeFileSync(join(store, 'journal'), '00manifest.i\x002\n');
      },
    ],
    [
      'a backup restored over a file through a symlinked directory',
      (store: string, outside: string) => {
        symlinkSync(outside, join(store, 'evil'));
        writeFileSync(join(store, 'journal'), '');
        writeFileSync(join(store, 'journal.backup.x'), 'ssh-ed25519 attacker');
        writeFileSync(
          join(store, 'journal.backupfiles'),
          '2\n\x00evil/authorized_keys\x00journal.backup.x\x000\n',
        );
      },
    ],
    [
      'a backup read from outside through a symlink',
      (store: string, outside: string) => {
        symlinkSync(join(outside, 'authorized_keys'), join(store, 'journal.backup.x'));
        writeFileSync(join(store, 'journal'), '');
        writeFileSync(join(store, 'journal.backupfiles'), '2\n\x00phaseroots\x00journal.backup.x\x000\n');
      },
    ],
  ])('%s: UNSAFE_PATH, nothing outside touched, the journal kept', async (_what, setup) => {
    const { repo, outside } = await hostileRepo(setup);
    const err = await pullInto(repo);
    expect(err).toBeInstanceOf(SluiceError);
    expect((err as SluiceError).code, (err as Error).message).toBe('UNSAFE_PATH');
    expect((err as Error).message).toMatch(/traverses symbolic link/);
    untouched(outside);
    expect(existsSync(join(repo, '.hg', 'store', 'phaseroots'))).toBe(false);
    expect(existsSync(join(repo, '.hg', 'store', 'journal'))).toBe(true);
  });

  it('an honest leftover journal is still rolled back, then the pull goes on', async () => {
    const { repo, outside } = await hostileRepo((store) => {
      writeFileSync(join(store, 'data-leftover.i'), 'half-written');
      writeFileSync(join(store, 'journal'), 'data-leftover.i\x000\n');
    });
    const r = await pullInto(repo);
    expect((r as { changesets: number }).changesets).toBe(1);
    expect(existsSync(join(repo, '.hg', 'store', 'data-leftover.i'))).toBe(false);
    untouched(outside);
  });
});

describe('symbolic links planted where a transaction writes', () => {
  it('journal.*, backups, undo files and the atomic temporary replace the link, never write through it', async () => {
    const names = [
      ['store', 'journal.backupfiles'],
      ['store', 'journal.phaseroots'],
      ['store', 'journal.backup.phaseroots'],
      ['store', 'undo.backupfiles'],
      ['store', 'undo.backup.phaseroots'],
      ['store', `phaseroots.sluice-tmp-${process.pid}`],
      ['hg', 'journal.bookmarks'],
      ['hg', 'journal.desc'],
      ['hg', 'journal.branch'],
      ['hg', 'journal.dirstate'],
    ] as const;
    const { repo, outside } = await hostileRepo((store, out) => {
      // what the links would leak into: the repository's own bookmarks, attacker-chosen
      writeFileSync(join(store, '..', 'bookmarks'), 'ssh-ed25519 attacker\n');
      writeFileSync(join(store, 'phaseroots'), '');
      for (const [where, name] of names) {
        const target = join(out, name);
        writeFileSync(target, 'precious');
        symlinkSync(target, join(where === 'store' ? store : join(store, '..'), name));
      }
    });
    const r = await pullInto(repo);
    expect((r as { changesets: number }).changesets, String(r)).toBe(1);
    untouched(outside);
    for (const [, name] of names) expect(readFileSync(join(outside, name), 'latin1'), name).toBe('precious');
  });
});

describe('symbolic links planted where a checkout writes', () => {
  it('the dirstate and branch temporaries replace the link, never write through it', async () => {
    const names = [`dirstate.sluice-tmp-${process.pid}`, `branch.sluice-tmp-${process.pid}`];
    const { repo, outside } = await hostileRepo((store, out) => {
      for (const name of names) {
        writeFileSync(join(out, name), 'precious');
        symlinkSync(join(out, name), join(store, '..', name));
      }
    });
    expect(((await pullInto(repo)) as { changesets: number }).changesets).toBe(1);
    await updateWorkingCopy(repo, {}, new JobContext());
    expect(readFileSync(join(repo, 'a.txt'), 'latin1')).toBe('a\n');
    for (const name of names) expect(readFileSync(join(outside, name), 'latin1'), name).toBe('precious');
  });
});
