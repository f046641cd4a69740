// Changegroups written by Sluice, applied by real hg: a whole repository and an incremental range
// (hg clone -r at a middle changeset, then the rest), cg2 and cg3, the fast (linkrev) and slow
// (manifest) file paths. hg unbundle must take them, verify, and show the source's log.
// And the deltas chosen are hg's own (`hg bundle`, the cgpacker hg serve uses): the receiver's
// work depends only on them (it stores a delta it is given as is), so `hg clone --pull` from
// sluice serve costs hg's client exactly what it costs from hg serve.

import { createReadStream, createWriteStream, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  computeOutgoing,
  emitChangegroup,
  type ChangegroupVersion,
} from '../../src/main/engine/changegroup/emit';
import { APPLY_PARTS } from '../../src/main/engine/changegroup/add-changegroup';
import { ChangegroupReader } from '../../src/main/engine/changegroup/reader';
import { ByteSource } from '../../src/main/engine/format/byte-source';
import { Bundle2Reader } from '../../src/main/engine/format/bundle2';
import { locateRepository } from '../../src/main/engine/store/requirements';
import { ChangelogGraph } from '../../src/main/engine/repo/changelog-graph';
import { bundle2Reply } from '../../src/main/engine/operations/serve/bundle2-reply';
import { missing, removeDir, skipNote, tempDir } from './wire-support';
import { hgOk, logOf, makeHistoryRepo, verifyOf, type HistoryRepo } from './pull-support';

async function writeBundle(
  repo: string,
  out: string,
  version: ChangegroupVersion,
  commonHex: string[],
  fastPathLinkrev: boolean,
): Promise<number> {
  const loc = await locateRepository(repo);
  const g = await ChangelogGraph.read(loc.storeDir);
  const common = commonHex.map((h) => g.rev(Buffer.from(h, 'hex').toString('latin1'))!);
  const outgoing = computeOutgoing(g, common, g.headRevs());
  const cg = emitChangegroup(loc, outgoing, { version, fastPathLinkrev });
  const part = {
    type: 'changegroup',
    mandatoryParams: [['version', version]] as [string, string][],
    data: cg,
  };
  await pipeline(Readable.from(bundle2Reply([part], 32768)), createWriteStream(out));
  return outgoing.missing.length;
}

/** `group node<-base` for every chunk of a cg2 bundle's changegroup part, in order. */
async function deltaBasesOf(file: string): Promise<string[]> {
  const bundle = await Bundle2Reader.open(new ByteSource(createReadStream(file)), {
    knownParts: APPLY_PARTS,
  });
  try {
    for (let part = await bundle.nextPart(); part; part = await bundle.nextPart()) {
      if (part.type !== 'changegroup') continue;
      const cg = new ChangegroupReader(part.payload, '02');
      const out: string[] = [];
      const group = async (name: string): Promise<void> => {
        await cg.readGroup((d) => {
          const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex').slice(0, 12);
          const base = hex(d.deltaBase);
          const kind = /^0+$/.test(base)
            ? 'full'
            : base === hex(d.p1) || base === hex(d.p2)
              ? 'parent'
              : 'other';
          out.push(`${name} ${hex(d.node)}<-${base} ${kind}`);
        });
      };
      await group('changelog');
      await group('manifest');
      for (let name = await cg.nextName(); name !== null; name = await cg.nextName()) await group(name);
      return out;
    }
    throw new Error(`${file}: no changegroup part`);
  } finally {
    await bundle.close();
  }
}

describe.skipIf(missing('hg'))(`changegroups from Sluice applied by hg${skipNote('hg')}`, () => {
  let work = '';
  let src: HistoryRepo;
  let allLog = '';
  /** what hg clone -r middle + hg pull leaves */
  let pulledLog = '';
  const nodes = (s: string): string =>
    s
      .split('\n')
      .map((l) => l.split(' ')[0])
      .join('\n');

  beforeAll(async () => {
    work = tempDir('cg-emit');
    src = await makeHistoryRepo(work);
    allLog = await logOf(src.path);
    const ref = join(work, 'ref');
    await hgOk(['clone', '-q', '-U', '-r', src.middle, src.path, ref], work);
    await hgOk(['-R', ref, 'pull', '-q', src.path], work);
    pulledLog = await logOf(ref);
  }, 120_000);
  afterAll(() => {
    if (work) removeDir(work);
  });

  for (const [version, fast] of [
    ['02', true],
    ['03', false],
  ] as const) {
    {
      it(`cg${version[1]}, ${fast ? 'fast' : 'slow'} linkrev path: a whole repository, then an incremental range`, async () => {
        const tag = `${version}-${fast}`;
        const whole = join(work, `whole-${tag}`);
        await hgOk(['init', whole], work);
        const n = await writeBundle(src.path, join(work, `whole-${tag}.hg`), version, [], fast);
        expect(n).toBe(allLog.split('\n').filter(Boolean).length);
        await hgOk(['-R', whole, 'unbundle', '-q', join(work, `whole-${tag}.hg`)], work);
        expect((await verifyOf(whole)).status).toBe(0);
        expect(nodes(await logOf(whole))).toBe(nodes(allLog));

        const part = join(work, `part-${tag}`);
        await hgOk(['clone', '-q', '-U', '-r', src.middle, src.path, part], work);
        await writeBundle(src.path, join(work, `part-${tag}.hg`), version, [src.middle], fast);
        await hgOk(['-R', part, 'unbundle', '-q', join(work, `part-${tag}.hg`)], work);
        const v = await verifyOf(part);
        expect(v.stderr + v.stdout).toBe('');
        expect(v.status).toBe(0);
        expect(nodes(await logOf(part))).toBe(nodes(pulledLog));
      }, 60_000);
    }
  }

  it("sends hg's delta bases: each revision against the base `hg bundle` picks (a whole repository, a range)", async () => {
    // a file whose store has intermediate snapshots (a delta against an older snapshot, not a
    // parent) and full texts in mid-history (sent as a delta against p1, computed)
    const chain = join(work, 'chain');
    await hgOk(['init', chain], work);
    for (let i = 1; i <= 10; i++) {
      writeFileSync(join(chain, 'f'), Array.from({ length: i * 300 }, (_, k) => `${k}\n`).join(''));
      await hgOk(['commit', '-q', '-A', '-m', `r${i}`, '-u', 't', '--config', 'format.maxchainlen=2'], chain);
    }
    const chainMiddle = (await hgOk(['log', '-r', '4', '-T', '{node}'], chain)).trim();
    for (const [tag, repo, common] of [
      ['all', src.path, []],
      ['range', src.path, [src.middle]],
      ['chain-all', chain, []],
      ['chain-range', chain, [chainMiddle]],
    ] as const) {
      const ours = join(work, `bases-${tag}.hg`);
      const theirs = join(work, `bases-${tag}-hg.hg`);
      await writeBundle(repo, ours, '02', [...common], true);
      const range = common.length ? ['--base', common[0]!] : ['--all'];
      await hgOk(['-R', repo, 'bundle', '-q', '-t', 'none-v2', ...range, theirs], work);
      const expected = await deltaBasesOf(theirs);
      // hg sends the changelog as full texts; the chain repository's snapshots go as stored
      expect(expected.filter((l) => l.startsWith('changelog ')).every((l) => l.endsWith(' full'))).toBe(true);
      if (tag.startsWith('chain'))
        expect(expected.filter((l) => l.endsWith(' other')).length).toBeGreaterThan(0);
      expect(await deltaBasesOf(ours)).toEqual(expected);
    }
  }, 60_000);
});
