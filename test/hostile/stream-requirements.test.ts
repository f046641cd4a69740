// What a stream clone's requirements may say, from a hostile server or bundle: the v1 `streamreqs`
// capability, the v2 part's `requirements` parameter and a packed1 header. No hg server streams a
// share's or a sparse working copy's requirement (they would make a clone neither hg nor Sluice
// can open), and a list of any length makes a message of bounded length.
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/main/engine/errors';
import { JobContext } from '../../src/main/engine/context/job-context';
import { applyBundleFile } from '../../src/main/engine/operations/apply/apply-stream-bundle';
import { packed1Header } from '../../src/main/engine/format/packed1';
import type { CloneRequest } from '../../src/shared/jobs';
import { FIXTURES } from '../interop/wire-support';
import { i32 } from './craft';
import type { Script } from '../wire-faults/harness';
import { clone, serve, useHostileBackend, work } from './server-support';

useHostileBackend('stream-reqs');

/** A clone that must fail with `code`, leaving nothing where it was to go. */
async function cloneRefused(url: string, req: Partial<CloneRequest>, code: string): Promise<SluiceError> {
  const { err, left } = await clone(url, req);
  expect(err).toBeInstanceOf(SluiceError);
  expect(err!.code, err!.message).toBe(code);
  expect(left).toEqual([]);
  return err!;
}

/** The capabilities reply with `streamreqs=` replaced by `reqs`. */
function streamreqs(reqs: string): Script {
  return async (_req, res, ctx) => {
    if (ctx.cmd !== 'capabilities') return false;
    const b = await ctx.forward();
    const caps = b.body.toString('latin1').replace(/streamreqs=\S*/, `streamreqs=${reqs}`);
    res.writeHead(200, b.headers);
    res.end(Buffer.from(caps, 'latin1'));
    return true;
  };
}

/**
 * A getbundle reply (`\x04none` HG20, no stream parameters, a stream2 part first) with the part's
 * `requirements` parameter replaced: the part header is rebuilt, the payload chunks kept.
 */
function withPartRequirements(body: Buffer, reqs: string): Buffer {
  const start = body.indexOf('HG20') + 8; // magic, then an empty stream parameter block
  const headerLen = body.readInt32BE(start);
  const h = body.subarray(start + 4, start + 4 + headerLen);
  let at = 1 + h[0]! + 4;
  const [mandatory, advisory] = [h[at]!, h[at + 1]!];
  const sizes = h.subarray(at + 2, at + 2 + 2 * (mandatory + advisory));
  at += 2 + sizes.length;
  const params: [string, string][] = [];
  for (let i = 0; i < mandatory + advisory; i++) {
    const key = h.subarray(at, (at += sizes[2 * i]!)).toString('latin1');
    const value = h.subarray(at, (at += sizes[2 * i + 1]!)).toString('latin1');
    params.push([key, key === 'requirements' ? encodeURIComponent(reqs) : value]);
  }
  const header = Buffer.concat([
    h.subarray(0, 1 + h[0]! + 4),
    Buffer.from([mandatory, advisory]),
    Buffer.from(params.flatMap(([k, v]) => [k.length, v.length])),
    ...params.flatMap(([k, v]) => [Buffer.from(k, 'latin1'), Buffer.from(v, 'latin1')]),
  ]);
  return Buffer.concat([
    body.subarray(0, start),
    i32(header.length),
    header,
    body.subarray(start + 4 + headerLen),
  ]);
}

describe('a stream requiring a share or a sparse working copy', () => {
  it.each(['shared', 'relshared', 'exp-sparse'])(
    'v1 (streamreqs=…,%s), with or without a working copy: UNSUPPORTED_REQUIREMENTS before any data, nothing at DEST',
    async (req) => {
      const s = await serve(streamreqs(`generaldelta,revlogv1,${req}`));
      for (const update of [false, true]) {
        const err = await cloneRefused(s.url, { stream: 'v1', update }, 'UNSUPPORTED_REQUIREMENTS');
        expect(err.message).toContain(req);
      }
      expect(s.hits.map((h) => h.cmd)).not.toContain('stream_out');
    },
  );

  it('v2 (the part says shared): UNSUPPORTED_REQUIREMENTS, nothing at DEST', async () => {
    const s = await serve(async (_req, res, ctx) => {
      if (ctx.cmd !== 'getbundle') return false;
      const b = await ctx.forward();
      res.writeHead(200, b.headers);
      res.end(withPartRequirements(b.body, 'generaldelta,revlogv1,shared,sparserevlog'));
      return true;
    });
    const err = await cloneRefused(s.url, { stream: 'v2' }, 'UNSUPPORTED_REQUIREMENTS');
    expect(err.message).toMatch(/requires shared, which describes a share/);
  });

  it('a packed1 bundle whose header says relshared: apply refuses it, nothing at DEST', async () => {
    const good = readFileSync(join(FIXTURES, 'default', 'packed1.hg'));
    const end = good.indexOf(0, 24) + 1; // the requirements end at their NUL
    const files = Number(good.readBigUInt64BE(6));
    const bytes = Number(good.readBigUInt64BE(14));
    const file = join(work, 'relshared.hg');
    writeFileSync(
      file,
      Buffer.concat([
        packed1Header(files, bytes, ['generaldelta', 'revlogv1', 'relshared']),
        good.subarray(end),
      ]),
    );
    const parent = join(work, 'apply-relshared');
    mkdirSync(parent);
    const err = await applyBundleFile(file, join(parent, 'dest'), {}, new JobContext()).catch(
      (e: unknown) => e,
    );
    expect((err as SluiceError).code, (err as Error).message).toBe('UNSUPPORTED_REQUIREMENTS');
    expect(readdirSync(parent)).toEqual([]);
  });
});

describe('a streamreqs capability listing 200 000 unknown requirements', () => {
  it('is refused in a message of bounded length naming the first few and the count', async () => {
    const names = Array.from({ length: 200_000 }, (_, i) => `r${i}`);
    const s = await serve(streamreqs(`revlogv1,${names.join(',')}`));
    const err = await cloneRefused(s.url, { stream: 'v1' }, 'UNSUPPORTED_REQUIREMENTS');
    expect(err.message.length).toBeLessThan(2000);
    expect(err.message).toMatch(/unsupported format: r0, r1, .* and 199990 more$/);
    expect(JSON.stringify(err.details).length).toBeLessThan(2000);
  });
});
