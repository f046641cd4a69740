// serveStdio against a hostile client: what one request may make the server hold is bounded.
import { PassThrough } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { extractFixtureRepo, removeDir, tempDirMaker } from '../../../../support/env';
import { REQUEST_ARGS_MAX } from '../../../../../src/main/engine/operations/serve/server-limits';
import { serveStdio } from '../../../../../src/main/engine/operations/serve/stdio-server';

const makeTempDir = tempDirMaker('ssh-server');
const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

function session(): { input: PassThrough; done: Promise<unknown>; out: () => string } {
  const dir = makeTempDir('repo');
  dirs.push(dir);
  const repo = extractFixtureRepo('default', dir);
  const input = new PassThrough();
  const output = new PassThrough();
  const errors = new PassThrough();
  const got: Buffer[] = [];
  output.on('data', (b: Buffer) => got.push(b));
  errors.resume();
  const done = serveStdio({ repo, input, output, errors }).then(
    () => 'ended',
    (e: unknown) => e,
  );
  return { input, done, out: () => Buffer.concat(got).toString('latin1') };
}

describe('sluice serve --stdio, hostile requests', () => {
  it('arguments of one command are bounded in all, not only one by one (`* N` pairs just below the bound each)', async () => {
    const s = session();
    const piece = Buffer.alloc((REQUEST_ARGS_MAX >> 1) + 1, 0x61);
    s.input.write('getbundle\n* 3\n');
    s.input.write(`heads ${piece.length}\n`);
    s.input.write(piece);
    s.input.write(`common ${piece.length}\n`);
    s.input.end(piece); // never read: the header already exceeds the budget
    const err = (await s.done) as Error & { code?: string };
    expect(err).toBeInstanceOf(Error);
    expect(err.code).toBe('PROTOCOL');
    expect(err.message).toBe(`arguments larger than ${REQUEST_ARGS_MAX} bytes in all`);
  });

  it('arguments within the budget are read and the command answered', async () => {
    const s = session();
    s.input.write('heads\n');
    s.input.end('\n');
    expect(await s.done).toBe('ended');
    expect(s.out()).toMatch(/^41\n[0-9a-f]{40}\n$/);
  });
});
