// The transport-independent command table: what each kind of command answers, with the
// fixture repository (six linear changesets, bookmark `mybook` on rev 2). The byte-exact replies
// against hg are checked through the transports (server.test.ts, the ssh interop tests).

import { COMMAND_ARGS, commandArgs } from '../../../../../src/main/engine/protocol/command-args';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { extractFixture, removeDir, tempDirMaker } from '../../../../support/env';
import {
  BadRequest,
  WIRE_COMMANDS,
  dispatchCommand,
  wireCommand,
  type CommandCall,
  type CommandEnv,
} from '../../../../../src/main/engine/operations/serve/commands';
import { randomBytes } from 'node:crypto';
import { ChangelogGraph } from '../../../../../src/main/engine/repo/changelog-graph';
import {
  RepoSnapshot,
  ServedRepo,
  type ServeSettings,
} from '../../../../../src/main/engine/operations/serve/repo-state';
import { ServedCloneBundles } from '../../../../../src/main/engine/operations/serve/served-clone-bundles';

let work = '';
let repo: ServedRepo;
let env: CommandEnv;

beforeAll(async () => {
  work = tempDirMaker('wire-commands')('t');
  const root = extractFixture('default', work);
  repo = new ServedRepo(root, { preferUncompressed: true });
  env = { chunkSize: 32768, cloneBundles: await ServedCloneBundles.create(root) };
});
afterAll(() => removeDir(work));

async function call(name: string, args: Record<string, string> = {}, transportCaps: string[] = []) {
  const c: CommandCall = {
    snap: await repo.snapshot(),
    args: new Map(Object.entries(args)),
    signal: new AbortController().signal,
    transportCaps,
  };
  return dispatchCommand(env, name, c);
}

async function text(name: string, args: Record<string, string> = {}): Promise<string> {
  const r = await call(name, args);
  if (r?.type !== 'bytes') throw new Error(`${name}: ${r?.type}`);
  return r.data.toString('latin1');
}

describe('wire commands', () => {
  it('hello is `capabilities: ` + the capabilities reply; transport caps are merged and sorted', async () => {
    const caps = await text('capabilities');
    expect(await text('hello')).toBe(`capabilities: ${caps}\n`);
    const withSsh = await call('capabilities', {}, ['protocaps', 'batch']);
    const tokens = (withSsh as { data: Buffer }).data.toString('latin1').split(' ');
    expect(tokens).toEqual([...tokens].sort());
    expect(tokens.filter((t) => t === 'batch')).toHaveLength(1);
    expect(tokens).toContain('protocaps');
  });

  it('between: first-parent nodes at distances 1, 2, 4 below top (localrepo.between); the null pair answers one empty line', async () => {
    const snap = await repo.snapshot();
    const hex = (r: number): string => snap.hex(r);
    const nul = '0'.repeat(40);
    expect(await text('between', { pairs: `${nul}-${nul}` })).toBe('\n');
    expect(await text('between', { pairs: `${hex(5)}-${nul} ${hex(5)}-${hex(2)}` })).toBe(
      `${hex(4)} ${hex(3)} ${hex(1)}\n${hex(4)} ${hex(3)}\n`,
    );
    await expect(call('between', { pairs: 'zz' })).rejects.toBeInstanceOf(BadRequest);
  });

  it('batch runs the batchable commands in order; a non-batchable one is an out-of-band error', async () => {
    const heads = await text('heads');
    const out = await text('batch', { cmds: 'heads ;listkeys namespace=bookmarks' });
    expect(out.split(';')).toEqual([heads, `mybook\t${(await repo.snapshot()).hex(2)}`]);
    const refused = await call('batch', { cmds: 'stream_out ' });
    expect(refused?.type).toBe('error');
  });

  it('stream_out is a legacy stream with its exact length; getbundle stream=1 a stream that must not be compressed', async () => {
    const v1 = await call('stream_out');
    expect(v1?.type).toBe('stream-legacy');
    if (v1?.type !== 'stream-legacy') return;
    let n = 0;
    for await (const c of v1.body) n += c.length;
    expect(n).toBe(v1.length);
    const v2 = await call('getbundle', { bundlecaps: 'HG20', cg: '0', stream: '1' });
    expect(v2?.type).toBe('stream');
    if (v2?.type !== 'stream') return;
    expect(v2.preferUncompressed).toBe(true);
    n = 0;
    for await (const c of v2.body) n += c.length;
    expect(n).toBe(v2.length);
    expect(v2.interruption()).toBeNull();
  });

  it('unknown commands have no entry; push commands answer read-only; missing arguments are BadRequest', async () => {
    expect(await call('nosuch')).toBeUndefined();
    expect(wireCommand('toString')).toBeUndefined();
    expect(await call('unbundle')).toEqual({
      type: 'error',
      message: 'sluice serve is read-only: unbundle is not supported\n',
    });
    await expect(call('known')).rejects.toBeInstanceOf(BadRequest);
    // every command has its ssh argument names (wireprotov1server's spec strings), and no other
    expect(commandArgs('getbundle')).toBe('*');
    expect(commandArgs('known')).toBe('nodes *');
    expect(commandArgs('toString')).toBeUndefined();
    expect(Object.keys(WIRE_COMMANDS).sort()).toEqual(Object.keys(COMMAND_ARGS).sort());
  });

  it('lookup of a node prefix of any length (odd too) answers the one changeset it names, else unknown', async () => {
    const snap = await repo.snapshot();
    const hexes = Array.from({ length: snap.graph.length }, (_, r) => snap.hex(r));
    const keys = new Set<string>(['a', 'f', 'ffff', '0123456789abcdef012345678']);
    for (const h of hexes) for (let n = 1; n <= 13; n++) keys.add(h.slice(0, n));
    for (const key of keys) {
      if (/^\d+$/.test(key) && Number(key) < hexes.length) continue; // a revision number
      const matches = hexes.filter((h) => h.startsWith(key));
      const want = matches.length === 1 ? `1 ${matches[0]}\n` : `0 unknown revision '${key}'\n`;
      expect(await text('lookup', { key }), key).toBe(want);
    }
    expect(await text('lookup', { key: hexes[3]! })).toBe(`1 ${hexes[3]}\n`);
  });

  it('a batch of prefix lookups on a long history: each a binary search, not a walk of the history (the nodes read are counted)', async () => {
    // 5000 root changesets with random nodes, every 7th secret (a phase root: only itself, having
    // no descendants); the nodes array counts its reads
    const n = 5000;
    const nodes = Array.from({ length: n }, () => randomBytes(20).toString('latin1'));
    let reads = 0;
    const counted = new Proxy(nodes, {
      get(t, k, r) {
        if (typeof k === 'string' && /^\d+$/.test(k)) reads++;
        return Reflect.get(t, k, r) as unknown;
      },
    });
    const graph = new ChangelogGraph(counted, new Int32Array(n).fill(-1), new Int32Array(n).fill(-1));
    const secret = nodes.filter((_, r) => r % 7 === 3).map((b) => Buffer.from(b, 'latin1').toString('hex'));
    const snap = new RepoSnapshot(
      '/x',
      '/x/.hg/store',
      graph,
      new Map([[2, secret]]),
      [],
      new Set(),
      {} as ServeSettings,
      null,
    );
    const hexes = nodes.map((b) => Buffer.from(b, 'latin1').toString('hex'));
    const keys = Array.from({ length: 1000 }, (_, i) => hexes[(i * 37) % n]!.slice(0, 1 + (i % 9)));
    const c: CommandCall = {
      snap,
      args: new Map([['cmds', keys.map((k) => `lookup key=${k}`).join(';')]]),
      signal: new AbortController().signal,
      transportCaps: [],
    };
    reads = 0;
    const r = await dispatchCommand(env, 'batch', c);
    const answers = (r as { data: Buffer }).data.toString('latin1').split(';');
    // a walk per lookup reads 5000 nodes each (5 million); sorting once and searching: far fewer
    expect(reads).toBeLessThan(40 * n);
    const hidden = new Set(secret);
    keys.forEach((key, i) => {
      const matches = hexes.filter((h) => h.startsWith(key) && !hidden.has(h));
      const want =
        matches.length === 1 && !/^\d+$/.test(key) ? `1 ${matches[0]}\n` : `0 unknown revision '${key}'\n`;
      if (/^\d+$/.test(key)) return; // a revision number, not a prefix
      expect(answers[i], key).toBe(want);
    });
  });
});
