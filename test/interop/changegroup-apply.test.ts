// Changegroup bundles made by live hg, applied by Sluice into a new repository and into an
// existing one (hg clone -r of a middle revision): the result passes `hg verify` and `hg log`
// (nodes, phases, bookmarks) equals what `hg unbundle` of the same bundle gives. Hostile
// changegroups fail with a typed error and leave the repository byte-identical.
import {
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyChangegroupBundleFile } from '../../src/main/engine/operations/apply/apply-changegroup-bundle';
import { applyBundle2ToRepo, applyBundleBytesToRepo } from '../../src/main/engine/changegroup';
import { SluiceError } from '../../src/main/engine/errors';
import { Bundle2Reader, Bundle2Writer } from '../../src/main/engine/format/bundle2';
import { ByteSource } from '../../src/main/engine/format/byte-source';
import { JobContext } from '../../src/main/engine/context/job-context';
import { missing, skipNote } from '../support/env';
import type { SluiceEvent } from '../../src/shared/events';
import {
  BUNDLE_SPECS,
  cloneCg,
  copyRepo,
  hg,
  logOf,
  makeBundle,
  makeSourceRepo,
  parseHg10un,
  serializeHg10un,
  treeHash,
  verifyOk,
  type Cg1,
} from './changegroup-support';

const work = mkdtempSync(join(tmpdir(), 'sluice-cg-apply-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

let src = '';
let base = '';
const bundles = new Map<string, string>();
/** `hg log` after `hg unbundle` (the same for every type; phase-heads make a difference) */
const refLog = new Map<string, string>();

function refKey(where: 'new' | 'old', spec: string): string {
  return `${where}-${spec.includes('phases=true') ? 'phases' : 'plain'}`;
}

async function* bytes(b: Buffer): AsyncGenerator<Uint8Array> {
  // odd split points: parsers must take bytes in any split
  for (let i = 0; i < b.length; i += 7919) yield b.subarray(i, i + 7919);
}

describe.skipIf(missing('hg'))(`changegroup bundles from hg applied by Sluice${skipNote('hg')}`, () => {
  beforeAll(() => {
    src = makeSourceRepo(join(work, 'src'));
    base = join(work, 'base');
    hg(['clone', '-q', '-U', '-r', '1', src, base]);
    for (const spec of BUNDLE_SPECS) {
      bundles.set(spec, makeBundle(src, spec, join(work, spec.replace(/[;=]/g, '_') + '.hg')));
    }
    for (const spec of ['none-v2', 'gzip-v2;phases=true']) {
      const fresh = join(work, `ref-new-${refKey('new', spec)}`);
      hg(['init', fresh]);
      hg(['unbundle', '-q', bundles.get(spec)!], fresh);
      refLog.set(refKey('new', spec), logOf(fresh));
      const old = copyRepo(base, join(work, `ref-old-${refKey('old', spec)}`));
      hg(['unbundle', '-q', bundles.get(spec)!], old);
      refLog.set(refKey('old', spec), logOf(old));
    }
  });

  it.each(BUNDLE_SPECS)('%s into a new repository: verifies, log equals hg unbundle', async (spec) => {
    const bundle = bundles.get(spec)!;
    const dest = join(work, `new-${spec.replace(/[;=]/g, '_')}`);
    const events: SluiceEvent[] = [];
    const r = await applyChangegroupBundleFile(bundle, dest, new JobContext({ sink: (e) => events.push(e) }));
    expect(r.created).toBe(true);
    expect(r.changesets).toBe(6);
    const v = verifyOk(dest);
    expect(v.ok, v.out).toBe(true);
    expect(logOf(dest)).toBe(refLog.get(refKey('new', spec)));
    // phases of the job, per-file entries batched
    const phases = events.filter((e) => e.type === 'phase').map((e) => (e as { phase: string }).phase);
    expect(phases).toEqual(expect.arrayContaining(['changesets', 'manifests', 'files', 'finalize']));
    const files = events.flatMap((e) => (e.type === 'files' ? e.entries.map((f) => f.name) : []));
    expect(files).toContain('data/big.txt.i');
    // the 20000-line file went past 128 KiB: split like hg's
    expect(readFileSync(join(dest, '.hg/store/data/big.txt.d')).length).toBeGreaterThan(0);
    expect(readFileSync(join(dest, '.hg/store/fncache'), 'latin1')).toContain('data/big.txt.d\n');
  });

  it.each(BUNDLE_SPECS)(
    '%s into an existing repository (clone -r 1): verifies, log equals hg unbundle',
    async (spec) => {
      const bundle = bundles.get(spec)!;
      const dest = copyRepo(base, join(work, `old-${spec.replace(/[;=]/g, '_')}`));
      const r = await applyChangegroupBundleFile(bundle, dest, new JobContext());
      expect(r.created).toBe(false);
      expect(r.changesets).toBe(4);
      const v = verifyOk(dest);
      expect(v.ok, v.out).toBe(true);
      expect(logOf(dest)).toBe(refLog.get(refKey('old', spec)));
      // applying it again adds nothing and changes nothing (but what `hg rollback` would undo)
      const tree = treeHash(dest, /^undo/);
      const again = await applyChangegroupBundleFile(bundle, dest, new JobContext());
      expect(again.changesets).toBe(0);
      expect(treeHash(dest, /^undo/)).toBe(tree);
    },
  );

  it('hg rollback undoes an apply, as after hg unbundle: the same undo files, the repository as before', async () => {
    const bundle = bundles.get('gzip-v2;phases=true')!;
    const ours = copyRepo(base, join(work, 'rollback-sluice'));
    const theirs = copyRepo(base, join(work, 'rollback-hg'));
    await applyChangegroupBundleFile(bundle, ours, new JobContext());
    hg(['unbundle', '-q', bundle], theirs);
    const undoFiles = (repo: string): string[] =>
      [
        ...readdirSync(join(repo, '.hg')).filter((n) => n.startsWith('undo')),
        ...readdirSync(join(repo, '.hg', 'store')).map((n) => `store/${n}`),
      ]
        .filter((n) => /(^|\/)undo/.test(n))
        .sort();
    expect(undoFiles(ours)).toEqual(undoFiles(theirs));
    for (const f of [
      'undo.desc',
      'undo.branch',
      'undo.dirstate',
      'store/undo.backupfiles',
      'store/undo.phaseroots',
    ])
      expect(readFileSync(join(ours, '.hg', f), 'latin1'), f).toBe(
        readFileSync(join(theirs, '.hg', f), 'latin1'),
      );
    expect(hg(['rollback'], ours)).toMatch(/repository tip rolled back to revision 1 \(undo unbundle\)/);
    expect(logOf(ours)).toBe(logOf(base));
    const v = verifyOk(ours);
    expect(v.ok, v.out).toBe(true);
    // what the journal kept is back byte for byte (but the undo files hg's rollback consumes)
    expect(treeHash(join(ours, '.hg', 'store'), /^undo|^fncache$/)).toBe(
      treeHash(join(base, '.hg', 'store'), /^undo|^fncache$/),
    );
  });

  it('bookmarks and phase-heads parts land as hg unbundle lands them', async () => {
    // the cg2 payload of hg's bundle, re-wrapped with the parts hg's pull sends
    const file = readFileSync(bundles.get('none-v2')!);
    const reader = await Bundle2Reader.open(ByteSource.fromBytes(file), {
      knownParts: { changegroup: ['version', 'nbchanges'] },
    });
    const part = (await reader.nextPart())!;
    const payload = Buffer.from(await readAll(part.payload));
    await reader.close();
    const heads = hg(['log', '-r', 'heads(all())', '-T', '{node}\n'], src).trim().split('\n');
    const rev3 = hg(['log', '-r', '3', '-T', '{node}'], src);
    const w = new Bundle2Writer();
    w.addPart({ type: 'changegroup', mandatoryParams: [['version', '02']], data: payload });
    const marks = Buffer.concat(
      [
        ['alpha', rev3],
        ['beta', heads[0]!],
      ].map(([name, hex]) => {
        const n = Buffer.from(name!, 'latin1');
        const head = Buffer.alloc(22);
        Buffer.from(hex!, 'hex').copy(head);
        head.writeUInt16BE(n.length, 20);
        return Buffer.concat([head, n]);
      }),
    );
    w.addPart({ type: 'bookmarks', data: marks });
    const ph = Buffer.alloc(24);
    ph.writeInt32BE(0, 0); // rev 3 and its ancestors public
    Buffer.from(rev3, 'hex').copy(ph, 4);
    w.addPart({ type: 'phase-heads', data: ph });
    const out: Buffer[] = [];
    for await (const c of w.chunks()) out.push(Buffer.from(c));
    const made = join(work, 'marks.hg');
    writeFileSync(made, Buffer.concat(out));

    const ref = join(work, 'ref-marks');
    hg(['init', ref]);
    hg(['unbundle', '-q', made], ref);
    const dest = join(work, 'marks');
    hg(['init', dest]);
    const r = await applyBundle2ToRepo(dest, bytes(Buffer.concat(out)), new JobContext());
    expect(r.bookmarks.map(([n]) => n)).toEqual(['alpha', 'beta']);
    expect(r.phaseHeads).toHaveLength(1);
    expect(verifyOk(dest).ok).toBe(true);
    expect(logOf(dest)).toBe(logOf(ref));
    expect(logOf(dest)).toMatch(/ public alpha\n/);
  });
});

async function readAll(src: ByteSource): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for (let p = await src.readSome(1 << 20); p; p = await src.readSome(1 << 20)) parts.push(Buffer.from(p));
  return Buffer.concat(parts);
}

describe.skipIf(missing('hg'))(`hostile changegroups${skipNote('hg')}`, () => {
  let cg: Cg1;
  let repo = '';
  beforeAll(() => {
    if (!src) {
      src = makeSourceRepo(join(work, 'src-h'));
    }
    const file = makeBundle(src, 'none-v1', join(work, 'hostile-base.hg'));
    cg = parseHg10un(readFileSync(file));
    repo = join(work, 'hostile-repo');
    hg(['clone', '-q', '-U', '-r', '1', src, repo]);
  });

  const cases: [string, (c: Cg1) => Buffer | Cg1, string, string?][] = [
    [
      'a changeset chunk length past the end',
      (c) => {
        const b = serializeHg10un(c);
        b.writeInt32BE(0x00fffff0, 6); // within maxRevisionSize: read until the input ends
        return b;
      },
      'TRUNCATED',
    ],
    [
      'a changeset chunk length past the revision bound',
      (c) => {
        const b = serializeHg10un(c);
        b.writeInt32BE(0x7ffffff0, 6);
        return b;
      },
      'LIMIT',
    ],
    [
      'an invalid chunk length (1..4)',
      (c) => {
        const b = serializeHg10un(c);
        b.writeInt32BE(3, 6);
        return b;
      },
      'MALFORMED',
    ],
    [
      'a chunk shorter than its header',
      (c) => {
        const b = serializeHg10un(c);
        b.writeInt32BE(40, 6);
        return b;
      },
      'MALFORMED',
    ],
    [
      'a delta patching past the end of its base',
      (c) => {
        const d = c.files.find((f) => f.name === 'a.txt')!.deltas[2]!; // new to the repository
        d.delta.writeInt32BE(1 << 20, 4); // hunk end far beyond the base text
        return c;
      },
      'REVLOG',
      'bad-delta',
    ],
    [
      'file content that does not hash to its node',
      (c) => {
        const d = c.files.find((f) => f.name === 'a.txt')!.deltas[2]!;
        d.delta[d.delta.length - 2] ^= 1;
        return c;
      },
      'REVLOG',
      'node-mismatch',
    ],
    [
      'a changeset with an unknown parent',
      (c) => {
        c.changesets[2]!.p1.fill(0x42);
        return c;
      },
      'REVLOG',
      'unknown-parent',
    ],
    [
      'a manifest linked to an unknown changeset',
      (c) => {
        c.manifests[3]!.linkNode.fill(0x17);
        return c;
      },
      'REVLOG',
      'link-out-of-range',
    ],
    [
      'a filelog named .hg/hgrc',
      (c) => {
        c.files[0]!.name = '.hg/hgrc';
        return c;
      },
      'UNSAFE_PATH',
    ],
    [
      'a filelog escaping the store (../../x)',
      (c) => {
        c.files[0]!.name = '../../x';
        return c;
      },
      'UNSAFE_PATH',
    ],
    [
      'a filelog with an absolute name',
      (c) => {
        c.files[0]!.name = '/etc/passwd';
        return c;
      },
      'UNSAFE_PATH',
    ],
    ['a truncated stream', (c) => serializeHg10un(c).subarray(0, 3000), 'TRUNCATED'],
  ];

  it.each(cases)('%s: typed error, repository byte-identical', async (_what, mutate, code, problem) => {
    const dest = copyRepo(repo, join(work, `hostile-${Math.random().toString(16).slice(2)}`));
    const before = treeHash(dest);
    const m = mutate(cloneCg(cg));
    const b = Buffer.isBuffer(m) ? m : serializeHg10un(m);
    const err = await applyBundleBytesToRepo(dest, bytes(b), new JobContext()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SluiceError);
    expect((err as SluiceError).code, (err as Error).message).toBe(code);
    if (problem) expect((err as SluiceError).details?.problem).toBe(problem);
    expect(treeHash(dest)).toBe(before);
    expect(verifyOk(dest).ok).toBe(true);
  });

  it('a cancelled apply leaves the repository byte-identical', async () => {
    const dest = copyRepo(repo, join(work, 'hostile-cancel'));
    const before = treeHash(dest);
    const ac = new AbortController();
    const b = serializeHg10un(cg);
    async function* slow(): AsyncGenerator<Uint8Array> {
      for (let i = 0; i < b.length; i += 512) {
        if (i > 4096) ac.abort();
        yield b.subarray(i, i + 512);
      }
    }
    const err = await applyBundleBytesToRepo(dest, slow(), new JobContext({ signal: ac.signal })).catch(
      (e: unknown) => e,
    );
    expect((err as SluiceError).code).toBe('CANCELLED');
    expect(treeHash(dest)).toBe(before);
  });

  it('a stream clone bundle is refused for an existing repository', async () => {
    const stream = join(work, 'stream.hg');
    hg(['bundle', '-q', '-a', '-t', 'none-v2;stream=v2', stream], src);
    const dest = copyRepo(repo, join(work, 'hostile-stream'));
    const before = treeHash(dest);
    const err = await applyBundleBytesToRepo(dest, bytes(readFileSync(stream)), new JobContext()).catch(
      (e: unknown) => e,
    );
    expect((err as SluiceError).code).toBe('BAD_MAGIC');
    expect((err as Error).message).toMatch(/stream clone bundle/);
    expect(treeHash(dest)).toBe(before);
  });

  it('a store directory that is a symbolic link is not written through (hg: "traverses symbolic link")', async () => {
    const dest = copyRepo(repo, join(work, 'hostile-symlink'));
    const outside = join(work, 'hostile-symlink-outside');
    // data/ moved out of the store, a link left in its place
    renameSync(join(dest, '.hg', 'store', 'data'), outside);
    symlinkSync(outside, join(dest, '.hg', 'store', 'data'));
    const before = treeHash(dest) + treeHash(outside);
    const b = serializeHg10un(cg);
    const err = await applyBundleBytesToRepo(dest, bytes(b), new JobContext()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SluiceError);
    expect((err as SluiceError).code, (err as Error).message).toBe('UNSAFE_PATH');
    expect((err as Error).message).toMatch(/symbolic link/);
    expect(treeHash(dest) + treeHash(outside)).toBe(before);
  });
});
