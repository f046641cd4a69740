import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SluiceError } from '../../../../src/main/engine/errors';
import { removeDir, tempDirMaker } from '../../../support/env';
import {
  auditPathSet,
  checkWinFilename,
  displayPath,
  PathAuditor,
} from '../../../../src/main/engine/working-copy/path-auditor';

const makeTempDir = tempDirMaker('checkout');
const dirs: string[] = [];
function repoDir(): string {
  const d = makeTempDir('audit');
  mkdirSync(join(d, '.hg'));
  dirs.push(d);
  return d;
}
afterAll(() => dirs.forEach(removeDir));

function refusal(fn: () => void): SluiceError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(SluiceError);
    expect((e as SluiceError).code).toBe('UNSAFE_PATH');
    return e as SluiceError;
  }
  throw new Error('not refused');
}

describe('PathAuditor.checkName (pathauditor.__call__)', () => {
  const a = new PathAuditor(repoDir(), { windows: false, caseInsensitive: false });
  it.each([
    '../x',
    'a/../../x',
    '/etc/passwd',
    '.hg/hgrc',
    '.HG/hgrc',
    '.Hg./hgrc',
    'sub/.hg/hgrc',
    'sub/.hG/store/x',
    'HG~1/hgrc',
    'hg8b6c~2/x',
    '.h\xe2\x80\x8cg/hgrc', // U+200C inside: HFS+ ignores it
    'a//b',
    './x',
    '',
    'a\rb', // scmutil.checkfilename / manifest._checkforbidden: hg never stores these
    'dir/x\r',
    'nul\0byte',
    // every kind of name checkName's one-scan fast path must hand to the full checks
    'a/',
    'x/..',
    'x/.',
    'a\nb',
    'd/\xef\xbb\xbf.hg/x', // U+FEFF in front: HFS+ ignores it
  ])('refuses %j, naming it', (p) => {
    const e = refusal(() => a.checkName(p));
    if (p)
      expect(JSON.stringify(e.details)).toContain(
        JSON.stringify(Buffer.from(p, 'latin1').toString('utf8')).slice(1, -1).slice(0, 3),
      );
  });
  it.each([
    'a',
    'x.hg/file',
    'hg~x/y',
    '.hgtags',
    '.hgignore',
    'aux',
    'con.txt',
    'colon:name',
    'trailing ',
    '.hg ',
    'a/b.hg/c',
  ])('accepts %j on POSIX', (p) => expect(() => a.checkName(p)).not.toThrow());
});

describe('Windows rules (checkwinfilename), by flag', () => {
  const w = new PathAuditor(repoDir(), { windows: true, caseInsensitive: true });
  it.each([
    ['aux', "filename contains 'aux', which is reserved on Windows"],
    ['dir/CON.txt', "filename contains 'CON', which is reserved on Windows"],
    ['lpt9.log', "filename contains 'lpt9', which is reserved on Windows"],
    ['colon:name', "filename contains ':', which is reserved on Windows"],
    ['a|b', "filename contains '|', which is reserved on Windows"],
    ['bell\x07', "filename contains '\\x07', which is invalid on Windows"],
    ['.hg ', "filename ends with ' ', which is not allowed on Windows"],
    ['trailing.', "filename ends with '.', which is not allowed on Windows"],
    ['x\\', "filename ends with '\\', which is invalid on Windows"],
  ])('%j: %s', (p, why) => {
    expect(checkWinFilename(p)).toBe(why);
    refusal(() => w.checkName(p));
  });
  it('treats a backslash as a separator (.hg reached through it)', () => {
    refusal(() => w.checkName('sub\\.hg\\hgrc'));
    refusal(() => w.checkName('C:/x'));
  });
  it('accepts ordinary names', () => {
    expect(checkWinFilename('xml.con')).toBeNull();
    expect(() => w.checkName('src/main.c')).not.toThrow();
  });
});

describe('auditPathSet', () => {
  it('refuses a file that is also a directory (a path through a symlink in the manifest)', () => {
    const a = new PathAuditor(repoDir(), { windows: false, caseInsensitive: false });
    const e = refusal(() => auditPathSet(a, ['link', 'link/hgrc']));
    expect(e.message).toContain('link/hgrc');
  });
  it('refuses case-folding collisions on a case-insensitive filesystem only', () => {
    const ci = new PathAuditor(repoDir(), { windows: false, caseInsensitive: true });
    refusal(() => auditPathSet(ci, ['Case/README', 'Case/readme']));
    refusal(() => auditPathSet(ci, ['A/x', 'a/y']));
    refusal(() => auditPathSet(ci, ['a', 'A/y']));
    const cs = new PathAuditor(repoDir(), { windows: false, caseInsensitive: false });
    expect(() => auditPathSet(cs, ['Case/README', 'Case/readme', 'A/x', 'a/y'])).not.toThrow();
  });
});

describe('on-disk checks (pathauditor._checkfs)', () => {
  it('refuses a directory that is a symlink, and a nested repository', () => {
    const root = repoDir();
    const outside = makeTempDir('outside');
    dirs.push(outside);
    symlinkSync(outside, join(root, 'evil'));
    mkdirSync(join(root, 'nested', '.hg'), { recursive: true });
    const a = new PathAuditor(root, { windows: false, caseInsensitive: false });
    expect(refusal(() => a.audit('evil/x')).message).toContain("traverses symbolic link 'evil'");
    expect(refusal(() => a.audit('nested/x')).message).toContain("inside nested repo 'nested'");
    expect(() => a.audit('fine/x')).not.toThrow();
  });
  it('probes the filesystem for case sensitivity (this one is case-sensitive)', () => {
    expect(new PathAuditor(repoDir()).caseInsensitive).toBe(
      process.platform === 'darwin' || process.platform === 'win32',
    );
  });
});

describe('displayPath', () => {
  it("shows a path's bytes as UTF-8, ASCII as it is, and bytes that are not UTF-8 as U+FFFD", () => {
    const latin1 = (s: string) => Buffer.from(s, 'utf8').toString('latin1');
    expect(displayPath('data/src/main.c.i')).toBe('data/src/main.c.i');
    expect(displayPath(latin1('data/größe-文件-😀.i'))).toBe('data/größe-文件-😀.i');
    expect(displayPath('data/\xff.i')).toBe('data/\ufffd.i');
    expect(displayPath('data/\x7f\x80.i')).toBe('data/\x7f\ufffd.i');
  });
});
