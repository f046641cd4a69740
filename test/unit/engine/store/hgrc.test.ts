import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SluiceError } from '../../../../src/main/engine/errors.js';
import { parseBool, parseConfig, readRepoConfig } from '../../../../src/main/engine/store/hgrc.js';
import {
  missing,
  skipNote,
  hex,
  hg,
  makeTempDir,
  removeDir,
  runHgPython,
  unhex,
} from '../../../support/store.js';

let tmp: string;
beforeEach(() => {
  tmp = makeTempDir('hgrc');
});
afterEach(() => removeDir(tmp));

const CASES: string[] = [
  '[phases]\npublish = False\n',
  '[phases]\npublish=no\n[server]\nuncompressed = 0\npreferuncompressed = yes\nbundle2.stream = off\n',
  '# comment\n; other\n\n[web]\nallow-pull = true\nallow_read = alice, bob  carol\nname = My Repo  \n',
  '[paths]\ndefault = https://example.com/repo\n  continued line\n # comment inside\n  more\nother = x\n',
  '[a]\nkey = 1\nkey = 2\n%unset key\nk2 = v\n',
  '\xef\xbb\xbf[bom]\nx = y\n',
  '[s]\r\nk = v\r\nk2 = v2\r\n',
  '[s]\rk = v\r',
  '[x]y]\nk = v\n',
  '[s]\nempty =\nsp = a b c \nkey with space = 1\n',
  'top = level\n[s]\nk=v=w\n',
  '[s]\nk = caf\xc3\xa9\xa0\n',
  '[s]\nk = v\n%include nonexistent-file\nz = 1\n', // without a file to resolve against: an error, as in hg
  '[s]\n   ; indented comment\nk = v\n',
  '[s]\n  bad leading\n',
  '[s]\n=novalue\n',
  '[s]\nno equals here\n',
];

describe('parseConfig', () => {
  it('reads the settings Sluice needs', () => {
    const c = parseConfig(CASES[1]!);
    expect(c.getBool('phases', 'publish', true)).toBe(false);
    expect(c.getBool('server', 'uncompressed', true)).toBe(false);
    expect(c.getBool('server', 'preferuncompressed', false)).toBe(true);
    expect(c.getBool('server', 'bundle2.stream', true)).toBe(false);
    expect(c.getBool('server', 'uncompressedallowsecret', false)).toBe(false);
    const w = parseConfig(CASES[2]!);
    expect(w.getList('web', 'allow_read')).toEqual(['alice', 'bob', 'carol']);
    expect(w.get('web', 'name')).toBe('My Repo');
    expect(parseConfig(CASES[3]!).get('paths', 'default')).toBe(
      'https://example.com/repo\ncontinued line\n# comment inside\nmore',
    );
  });
  it('parses booleans like stringutil.parsebool', () => {
    for (const t of ['1', 'yes', 'TRUE', 'On', 'always']) expect(parseBool(t)).toBe(true);
    for (const f of ['0', 'No', 'false', 'OFF', 'never']) expect(parseBool(f)).toBe(false);
    expect(parseBool('maybe')).toBeNull();
    expect(parseBool('')).toBeNull();
    const c = parseConfig('[phases]\npublish = maybe\n');
    expect(() => c.getBool('phases', 'publish', true)).toThrowError(
      /phases.publish is not a boolean \('maybe'\)/,
    );
  });
  it('reports syntax errors as MALFORMED with the line', () => {
    for (const bad of [CASES[13]!, CASES[14]!, CASES[15]!, CASES[16]!]) {
      let err: unknown;
      try {
        parseConfig(bad, 'x/hgrc');
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(SluiceError);
      expect((err as SluiceError).code).toBe('MALFORMED');
      expect((err as SluiceError).message).toMatch(/x\/hgrc:2/);
    }
  });
});

describe.skipIf(missing('hg-python'))(`vs Mercurial's config.parse${skipNote('hg-python')}`, () => {
  it('produces the same sections, items and errors', () => {
    const script = `
import sys
from mercurial import config, error
for line in sys.stdin:
    data = bytes.fromhex(line.strip())
    c = config.config()
    try:
        c.parse(b'src', data)
    except error.ConfigError:
        print('ERROR'); continue
    out = []
    for s in c:
        for k, v in c.items(s):
            out.append(s.hex() + ':' + k.hex() + ':' + v.hex())
    print(' '.join(out) or '-')
`;
    const lines = runHgPython(
      script,
      CASES.map((c) => hex(c)),
    );
    CASES.forEach((text, i) => {
      const theirs = lines[i]!;
      let ours: string;
      try {
        const c = parseConfig(text, 'src');
        const parts: string[] = [];
        for (const s of ['', 'phases', 'server', 'web', 'paths', 'a', 'bom', 's', 'x]y']) {
          for (const [k, v] of c.items(s)) parts.push(`${hex(s)}:${hex(k)}:${hex(v)}`);
        }
        ours = parts.join(' ') || '-';
      } catch (e) {
        expect(e).toBeInstanceOf(SluiceError);
        ours = 'ERROR';
      }
      // hg iterates sections in sorted order; compare as sets of triples
      expect(ours.split(' ').sort(), `case ${i}: ${JSON.stringify(text)}`).toEqual(theirs.split(' ').sort());
    });
    expect(unhex(hex('x'))).toBe('x');
  });
});

describe('readRepoConfig', () => {
  it('reads .hg/hgrc then .hg/hgrc-not-shared, following %include relative to the file', async () => {
    mkdirSync(join(tmp, '.hg', 'inc'), { recursive: true });
    writeFileSync(
      join(tmp, '.hg', 'hgrc'),
      '[phases]\npublish = true\n%include inc/extra.rc\n[web]\nname = repo\n',
    );
    writeFileSync(
      join(tmp, '.hg', 'inc', 'extra.rc'),
      '[server]\nuncompressed = false\n%include ../loop.rc\n',
    );
    writeFileSync(join(tmp, '.hg', 'loop.rc'), '[web]\ncontact = me\n');
    writeFileSync(join(tmp, '.hg', 'hgrc-not-shared'), '[phases]\npublish = false\n');
    const c = await readRepoConfig(tmp);
    expect(c.getBool('phases', 'publish', true)).toBe(false);
    expect(c.getBool('server', 'uncompressed', true)).toBe(false);
    expect(c.get('web', 'contact')).toBe('me');
    expect(c.get('web', 'name')).toBe('repo');
  });
  it('stops a self-including config', async () => {
    mkdirSync(join(tmp, '.hg'));
    writeFileSync(join(tmp, '.hg', 'hgrc'), '%include hgrc\n');
    await expect(readRepoConfig(tmp)).rejects.toThrowError(/nested too deeply/);
  });
  it('has defaults when there is no hgrc', async () => {
    mkdirSync(join(tmp, '.hg'));
    const c = await readRepoConfig(tmp);
    expect(c.getBool('phases', 'publish', true)).toBe(true);
    c.set('phases', 'publish', 'false');
    expect(c.getBool('phases', 'publish', true)).toBe(false);
  });
});

describe.skipIf(missing('hg'))(`vs hg config${skipNote('hg')}`, () => {
  it('agrees with `hg config` on a repository hgrc with includes and continuations', async () => {
    hg(['init', join(tmp, 'r')]);
    writeFileSync(
      join(tmp, 'r', '.hg', 'hgrc'),
      '[phases]\npublish = Off\n[server]\npreferuncompressed=True\n%include sub/more.rc\n[web]\ndescription = one\n  two\n',
    );
    mkdirSync(join(tmp, 'r', '.hg', 'sub'));
    writeFileSync(join(tmp, 'r', '.hg', 'sub', 'more.rc'), '[server]\nbundle2.stream = never\n');
    const c = await readRepoConfig(join(tmp, 'r'));
    for (const key of [
      'phases.publish',
      'server.preferuncompressed',
      'server.bundle2.stream',
      'web.description',
    ]) {
      const [section, ...rest] = key.split('.');
      const theirs = hg(['config', '-R', join(tmp, 'r'), key]).stdout.replace(/\n$/, '');
      // `hg config` prints a multi-line value with its newlines escaped
      expect(c.get(section!, rest.join('.'))?.replaceAll('\n', '\\n')).toBe(theirs);
    }
    const publishing = hg([
      'config',
      '-R',
      join(tmp, 'r'),
      '--config',
      'ui.x=1',
      'phases.publish',
    ]).stdout.trim();
    expect(c.getBool('phases', 'publish', true)).toBe(parseBool(publishing));
  });
});
