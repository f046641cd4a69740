// sluice serve against hg 6.3.2's own replies, byte for byte (test/fixtures/hg/*: getbundle-stream2.bin
// and stream_out.bin were captured from `hg serve` on the same repositories), plus the protocol
// details a client relies on: capabilities, batch, heads/known, listkeys, branchmap, errors.
// No hg needed: the fixtures are the reference.

import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inflateSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobContext } from '../../../../../src/main/engine/context/job-context';
import { cloneFromUrl } from '../../../../../src/main/engine/operations/clone/clone';
import { startServer, type RunningServer } from '../../../../../src/main/engine/operations/serve/http-server';

const FIXTURES = resolve(dirname(fileURLToPath(import.meta.url)), '../../../../fixtures/hg');
let work = '';
const servers: Record<string, RunningServer> = {};

function extract(name: string): string {
  const dest = join(work, name);
  mkdirSync(dest);
  expect(spawnSync('tar', ['xzf', join(FIXTURES, name, 'repo.tar.gz'), '-C', dest]).status).toBe(0);
  return dest;
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'sluice-wire-server-'));
  for (const name of ['default', 'legacy']) servers[name] = await startServer({ repo: extract(name) });
});

afterAll(async () => {
  for (const s of Object.values(servers)) await s.close();
  rmSync(work, { recursive: true, force: true });
});

async function get(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; type: string; body: Buffer; length: string | null }> {
  const r = await fetch(url, { headers });
  return {
    status: r.status,
    type: r.headers.get('content-type') ?? '',
    body: Buffer.from(await r.arrayBuffer()),
    length: r.headers.get('content-length'),
  };
}

describe.each(['default', 'legacy'])('sluice serve, %s fixture', (name) => {
  const fixture = (f: string): Buffer => readFileSync(join(FIXTURES, name, f));

  it('getbundle stream=1 is byte-identical to hg serve (0.2, engine none, exact Content-Length)', async () => {
    const r = await get(`${servers[name]!.url}?cmd=getbundle`, {
      'X-HgArg-1': 'bundlecaps=HG20&cg=0&stream=1',
      'X-HgProto-1': '0.1 0.2 comp=none',
    });
    expect(r.type).toBe('application/mercurial-0.2');
    expect(r.body.equals(fixture('getbundle-stream2.bin'))).toBe(true);
    expect(Number(r.length)).toBe(r.body.length);
  });

  it('a client without 0.2 gets application/mercurial-0.1, zlib-compressed (hg: always zlib)', async () => {
    const r = await get(`${servers[name]!.url}?cmd=getbundle`, {
      'X-HgArg-1': 'bundlecaps=HG20&cg=0&stream=1',
    });
    expect(r.type).toBe('application/mercurial-0.1');
    expect(r.body[0]).toBe(0x78);
    expect(inflateSync(r.body).equals(fixture('getbundle-stream2.bin').subarray(5))).toBe(true);
  });

  it('stream_out is byte-identical to hg serve (0.1, never compressed)', async () => {
    const r = await get(`${servers[name]!.url}?cmd=stream_out`);
    expect(r.type).toBe('application/mercurial-0.1');
    expect(r.body.equals(fixture('stream_out.bin'))).toBe(true);
  });

  it('capabilities: the stream caps of hg, only what is served', async () => {
    const caps = (await get(`${servers[name]!.url}?cmd=capabilities`)).body.toString('latin1').split(' ');
    const hgCaps = fixture('capabilities.txt').toString('latin1').trim().split(' ');
    for (const c of hgCaps.filter((x) =>
      /^(stream|streamreqs=|bundle2=|httpheader|httpmediatype|batch|getbundle|known|compression|branchmap)/.test(
        x,
      ),
    )) {
      if (c.startsWith('bundle2=')) continue; // ours adds nothing but drops nothing hg clients need
      expect(caps).toContain(c);
    }
    expect(caps).toContain('stream-preferred');
    expect(caps.some((c) => c.startsWith('unbundle'))).toBe(false);
    expect([...caps].sort()).toEqual(caps);
  });

  it('batch heads/known, heads, listkeys bookmarks, branchmap', async () => {
    const url = servers[name]!.url;
    const head = fixture('heads.txt').toString().trim();
    const b = await get(`${url}?cmd=batch`, {
      'X-HgArg-1': `cmds=heads+%3Bknown+nodes%3D${head}+${'0'.repeat(40)}`,
    });
    expect(b.body.toString()).toBe(`${head}\n;10`);
    expect((await get(`${url}?cmd=heads`)).body.toString()).toBe(`${head}\n`);
    const lk = await get(`${url}?cmd=listkeys`, { 'X-HgArg-1': 'namespace=bookmarks' });
    expect(lk.body.toString()).toBe(fixture('listkeys-bookmarks.txt').toString().replace(/\n$/, ''));
    expect((await get(`${url}?cmd=branchmap`)).body.toString()).toBe(`default ${head}`);
    // query-string arguments (pre-1.9 clients) work too
    // phases.listphases: the local draft roots even when publishing, then the flag (as hg serve)
    expect((await get(`${url}?cmd=listkeys&namespace=phases`)).body.toString()).toMatch(
      /^[0-9a-f]{40}\t1\npublishing\tTrue$/,
    );
  });

  it('errors: a cg1-only pull is refused with an error:abort part, bundle1 with hg-error, unknown commands 400, sub-paths 404', async () => {
    const url = servers[name]!.url;
    const pull = await get(`${url}?cmd=getbundle`, {
      'X-HgArg-1': 'bundlecaps=HG20,bundle2%3DHG20%250Achangegroup%253D01&common=' + '0'.repeat(40),
      'X-HgProto-1': '0.1 0.2 comp=zstd,zlib,none',
    });
    expect(pull.body.subarray(0, 5).toString('latin1')).toBe('\x04none');
    expect(pull.body.toString('latin1')).toContain('ERROR:ABORT');
    expect(pull.body.toString('latin1')).toContain('no common changegroup version');
    const b1 = await get(`${url}?cmd=getbundle`, { 'X-HgArg-1': 'common=' + '0'.repeat(40) });
    expect(b1.type).toBe('application/hg-error');
    expect(b1.body.toString()).toMatch(/bundle2 required/);
    expect((await get(`${url}?cmd=nosuchthing`)).status).toBe(400);
    const sub = await get(`${url}sub?cmd=capabilities`);
    expect([sub.status, sub.body.toString()]).toEqual([404, '0\nNot Found\n']);
    const push = await get(`${url}?cmd=unbundle`);
    expect(push.type).toBe('application/hg-error');
    expect(push.body.toString()).toMatch(/read-only/);
  });
});

describe('sluice serve settings', () => {
  it('no stream: stream_out answers 1, getbundle stream=1 an error:abort, caps without stream', async () => {
    const repo = join(work, 'default');
    const s = await startServer({ repo, uncompressed: false });
    try {
      expect((await get(`${s.url}?cmd=stream_out`)).body.toString()).toBe('1\n');
      const caps = (await get(`${s.url}?cmd=capabilities`)).body.toString();
      expect(caps).not.toMatch(/streamreqs|stream-preferred|stream%3Dv2/);
      const r = await get(`${s.url}?cmd=getbundle`, {
        'X-HgArg-1': 'bundlecaps=HG20&cg=0&stream=1',
        'X-HgProto-1': '0.1 0.2 comp=none',
      });
      expect(r.body.toString('latin1')).toContain(
        'stream data requested but server does not allow this feature',
      );
    } finally {
      await s.close();
    }
  });

  it('v1 only: no bundle2 stream=v2, stream_out still served', async () => {
    const s = await startServer({ repo: join(work, 'legacy'), streamV2: false });
    try {
      const caps = (await get(`${s.url}?cmd=capabilities`)).body.toString();
      expect(caps).not.toContain('stream%3Dv2');
      expect(caps.split(' ')).toContain('stream');
      expect((await get(`${s.url}?cmd=stream_out`)).body.subarray(0, 2).toString()).toBe('0\n');
    } finally {
      await s.close();
    }
  });

  it('[web] allow-pull, deny_read, allow_read: refused like hgweb (401, reason as status text)', async () => {
    // the replies of `hg serve` 6.3.2 with the same settings (checked live): `401 pull not
    // authorized` / `401 read not authorized`, body `0\n<reason>\n`; pages need read only
    const cases: Array<[string, { page: string | null; wire: string | null }]> = [
      ['allow-pull = false', { page: null, wire: 'pull not authorized' }],
      ['allowpull = no', { page: null, wire: 'pull not authorized' }],
      ['allow-pull = true\nallowpull = false', { page: null, wire: null }],
      ['deny_read = bob', { page: 'read not authorized', wire: 'read not authorized' }],
      ['allow_read = alice, bob', { page: 'read not authorized', wire: 'read not authorized' }],
      ['allow_read = *', { page: null, wire: null }],
    ];
    for (const [i, [config, expected]] of cases.entries()) {
      const repo = join(work, `access-${i}`);
      mkdirSync(repo);
      expect(spawnSync('tar', ['xzf', join(FIXTURES, 'default', 'repo.tar.gz'), '-C', repo]).status).toBe(0);
      writeFileSync(join(repo, '.hg', 'hgrc'), `[web]\n${config}\n`);
      const s = await startServer({ repo });
      try {
        for (const [url, want] of [
          [s.url, expected.page],
          [`${s.url}?cmd=capabilities`, expected.wire],
          [`${s.url}?cmd=stream_out`, expected.wire],
        ] as const) {
          const r = await fetch(url);
          const body = Buffer.from(await r.arrayBuffer()).toString('latin1');
          if (want === null) {
            expect(r.status, `${config}: ${url}`).toBe(200);
          } else {
            expect([r.status, r.statusText, body], `${config}: ${url}`).toEqual([401, want, `0\n${want}\n`]);
          }
        }
        if (expected.wire) {
          // Sluice's client: no challenge, so no credentials prompt; hg's reason in the error
          let asked = 0;
          const dest = join(work, `access-clone-${i}`);
          const err = await cloneFromUrl(
            { kind: 'clone', url: s.url, dest },
            new JobContext({ fileEvents: false }),
            {
              credentials: async () => {
                asked++;
                return null;
              },
            },
          ).catch((e: unknown) => e);
          expect(err).toMatchObject({
            code: 'ACCESS_DENIED',
            message: `authorization failed: ${expected.wire}`,
          });
          expect(asked).toBe(0);
          expect(existsSync(dest)).toBe(false);
        }
      } finally {
        await s.close();
      }
    }
  });

  it('a locked store: the stream waits until the lock is gone (hg lists under the lock too)', async () => {
    const repo = join(work, 'default');
    const lock = join(repo, '.hg', 'store', 'lock');
    writeFileSync(lock, 'somehost:1');
    const s = await startServer({ repo });
    try {
      const pending = get(`${s.url}?cmd=stream_out`);
      await new Promise((r) => setTimeout(r, 300));
      rmSync(lock);
      const r = await pending;
      expect(r.body.equals(readFileSync(join(FIXTURES, 'default', 'stream_out.bin')))).toBe(true);
    } finally {
      rmSync(lock, { force: true });
      await s.close();
    }
  });
});
