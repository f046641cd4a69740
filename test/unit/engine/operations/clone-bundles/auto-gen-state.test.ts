// The clone bundles' state in hg 6.5's own format (hgext/clonebundles.py: DONE-v1 / PENDING-v1
// lines, urllib-quoted URLs, hosts and paths, sorted), Sluice's extras in a sidecar, and the
// manifest hg's update_ondisk_manifest would write from it (plus Sluice's DIGEST).

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  advertisedBundles,
  autoGenText,
  pyQuote,
  readAutoGenState,
  saveAutoGenState,
  type AutoBundle,
  type DoneBundle,
} from '../../../../../src/main/engine/operations/clone-bundles/auto-gen-state';
import { removeDir, tempDirMaker } from '../../../../support/env';

const tempDir = tempDirMaker('autogen');
const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach(removeDir));
const hgDir = (): string => {
  const d = tempDir('hg');
  dirs.push(d);
  return d;
};

const NODE_A = 'a'.repeat(40);
const NODE_B = 'b'.repeat(40);
const done = (spec: string, revs: number, name: string, extra: Partial<DoneBundle> = {}): DoneBundle => ({
  status: 'done',
  spec,
  revs,
  tipRev: revs - 1,
  tipNode: revs > 20 ? NODE_B : NODE_A,
  url: `https://cdn.example.com/cb/${name}`,
  basename: name,
  ...extra,
});
const always = (): boolean => true;

describe('clonebundles.auto-gen in hg 6.5 format', () => {
  it('quotes as Python urllib.parse.quote does (safe="/")', () => {
    expect(pyQuote('https://h.example:8443/a b/c~d_e.f-g')).toBe(
      'https%3A//h.example%3A8443/a%20b/c~d_e.f-g',
    );
    expect(pyQuote("x!'()*;=?&é")).toBe('x%21%27%28%29%2A%3B%3D%3F%26%C3%A9');
  });

  it('writes the lines hg writes, sorted', () => {
    const text = autoGenText([
      done('zstd-v2', 21, 'full-zstd-v2-21_revs-bbbbbbbbbbbb_tip-1_acbr.hg'),
      {
        status: 'pending',
        spec: 'gzip-v2',
        revs: 21,
        tipRev: 20,
        tipNode: NODE_B,
        host: 'build host/4026531836',
        pid: 4242,
        path: '/srv/repo/.hg/tmp-bundles/full-gzip-v2.hg',
      },
    ]);
    expect(text).toBe(
      `DONE-v1 zstd-v2 21 20 ${NODE_B} https%3A//cdn.example.com/cb/full-zstd-v2-21_revs-bbbbbbbbbbbb_tip-1_acbr.hg full-zstd-v2-21_revs-bbbbbbbbbbbb_tip-1_acbr.hg\n` +
        `PENDING-v1 gzip-v2 21 20 ${NODE_B} build%20host/4026531836 4242 /srv/repo/.hg/tmp-bundles/full-gzip-v2.hg\n`,
    );
  });

  it('reads a state hg wrote (raw bundle types, other lines ignored), with Sluice extras from the sidecar', async () => {
    const dir = hgDir();
    writeFileSync(
      join(dir, 'clonebundles.auto-gen'),
      `DONE-v1 none-v2;stream=v2 5 4 ${NODE_A} http%3A//h/full-none-v2;stream=v2-5_revs-aaaaaaaaaaaa_tip-9_txn.hg full-none-v2;stream=v2-5_revs-aaaaaaaaaaaa_tip-9_txn.hg\n` +
        `DONE-v1 zstd-v2 5 4 ${NODE_A} http%3A//h/z.hg z.hg\n` +
        'SOMETHING-v9 from a later hg\n',
    );
    writeFileSync(
      join(dir, 'clonebundles.sluice.json'),
      JSON.stringify({ 'z.hg': { manifestSpec: 'zstd-v2', sha256: 'c'.repeat(64), size: 9 } }),
    );
    const bundles = await readAutoGenState(dir);
    expect(bundles).toEqual([
      done('none-v2;stream=v2', 5, 'full-none-v2;stream=v2-5_revs-aaaaaaaaaaaa_tip-9_txn.hg', {
        url: 'http://h/full-none-v2;stream=v2-5_revs-aaaaaaaaaaaa_tip-9_txn.hg',
      }),
      done('zstd-v2', 5, 'z.hg', {
        url: 'http://h/z.hg',
        manifestSpec: 'zstd-v2',
        sha256: 'c'.repeat(64),
        size: 9,
      }),
    ]);
  });

  it.each([
    ['a short line', `DONE-v1 zstd-v2 5 4 ${NODE_A} http%3A//h/z.hg\n`, 'MALFORMED'],
    ['a bad node', 'DONE-v1 zstd-v2 5 4 nothex http%3A//h/z.hg z.hg\n', 'MALFORMED'],
    ['a path as basename', `DONE-v1 zstd-v2 5 4 ${NODE_A} http%3A//h/z.hg ../../hgrc\n`, 'UNSAFE_PATH'],
    ['a hidden basename', `DONE-v1 zstd-v2 5 4 ${NODE_A} http%3A//h/z.hg .hgrc\n`, 'UNSAFE_PATH'],
    ['a bad pid', `PENDING-v1 zstd-v2 5 4 ${NODE_A} host -1 %2Ftmp%2Fx\n`, 'MALFORMED'],
    ['bad quoting', `DONE-v1 zstd-v2 5 4 ${NODE_A} http%ZZ z.hg\n`, 'MALFORMED'],
  ])('refuses %s', async (_what, text, code) => {
    const dir = hgDir();
    writeFileSync(join(dir, 'clonebundles.auto-gen'), text);
    await expect(readAutoGenState(dir)).rejects.toMatchObject({ code });
  });

  it('advertises the largest valid bundle of each type, as update_ondisk_manifest, formats first', () => {
    const old = done('zstd-v2', 10, 'old.hg');
    const cur = done('zstd-v2', 21, 'cur.hg');
    const gz = done('gzip-v2', 21, 'gz.hg');
    const none = done('none-v2', 21, 'none.hg');
    const stripped = done('bzip2-v2', 30, 'stripped.hg');
    const valid = (b: AutoBundle): boolean => b !== stripped;
    expect(advertisedBundles([old, cur, gz, none, stripped], valid)).toEqual([gz, none, cur]);
    expect(advertisedBundles([old, cur, gz, none, stripped], valid, ['zstd-v2'])).toEqual([cur, gz, none]);
  });

  it('saves state, sidecar and manifest together; no manifest when nothing is advertised', async () => {
    const dir = hgDir();
    const sha = 'd'.repeat(64);
    const cur = done('zstd-v2', 21, 'cur.hg', { manifestSpec: 'zstd-v2', sha256: sha, size: 100 });
    const old = done('zstd-v2', 10, 'old.hg');
    const hgMade = done('gzip-v2', 21, 'gz.hg', { url: 'http://plain/gz.hg' });
    await saveAutoGenState(dir, [old, cur, hgMade], always);
    expect(readFileSync(join(dir, 'clonebundles.manifest'), 'utf8')).toBe(
      'http://plain/gz.hg BUNDLESPEC=gzip-v2\n' +
        `https://cdn.example.com/cb/cur.hg BUNDLESPEC=zstd-v2 REQUIRESNI=true DIGEST=sha256:${sha}\n`,
    );
    expect(await readAutoGenState(dir)).toEqual([hgMade, old, cur]);
    await saveAutoGenState(dir, [old], () => false);
    expect(existsSync(join(dir, 'clonebundles.manifest'))).toBe(false);
    expect(JSON.parse(readFileSync(join(dir, 'clonebundles.sluice.json'), 'utf8'))).toEqual({});
  });

  it('a damaged sidecar costs only the extras', async () => {
    const dir = hgDir();
    await saveAutoGenState(
      dir,
      [done('zstd-v2', 21, 'cur.hg', { manifestSpec: 'x', sha256: 'e'.repeat(64), size: 1 })],
      always,
    );
    writeFileSync(join(dir, 'clonebundles.sluice.json'), '{"cur.hg": {"manifestSpec": "a b"');
    expect(await readAutoGenState(dir)).toEqual([done('zstd-v2', 21, 'cur.hg')]);
  });
});
