// Changegroups written by Sluice, applied by real hg: a whole repository and an incremental range
// (hg clone -r at a middle changeset, then the rest), cg2 and cg3, the fast (linkrev) and slow
// (manifest) file paths. hg unbundle must take them, verify, and show the source's log.

import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  computeOutgoing,
  emitChangegroup,
  type ChangegroupVersion,
} from '../../src/main/engine/changegroup/emit';
import { locateRepository } from '../../src/main/engine/store/requirements';
import { ChangelogGraph } from '../../src/main/engine/wire/changelog-graph';
import { bundle2Reply } from '../../src/main/engine/wire/bundle2-reply';
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
});
