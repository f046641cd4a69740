// `sluice -R REPO serve --stdio` (the ssh server side) against hostile clients: the bounds of
// server-limits.ts apply as over HTTP (server-clients.test.ts): what one command may ask for, its
// arguments' size, and the idle timeout, here for a session that says nothing, a command
// trickled a byte at a time, and a reply nobody reads. Each bound with the honest request just
// below it still answered.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, extractFixture, removeDir, tempDirMaker } from '../support/env';
import {
  BATCH_MAX_COMMANDS,
  BETWEEN_MAX_PAIRS,
  GETBUNDLE_MAX_LIST,
  REQUEST_ARGS_COUNT_MAX,
  REQUEST_ARGS_MAX,
} from '../../src/main/engine/operations/serve/server-limits';
import { serveStdio, type StdioServerOptions } from '../../src/main/engine/operations/serve/stdio-server';

let work = '';
let repo = '';
let heads: string[] = [];

beforeAll(async () => {
  work = tempDirMaker('hostile-ssh-clients')('w');
  repo = extractFixture('default', work);
  const s = session();
  s.input.end('heads\n');
  await s.done;
  heads = s.out().split('\n')[1]!.split(' ');
});
afterAll(() => removeDir(work));

interface Session {
  input: PassThrough;
  output: PassThrough;
  /** 'ended', or what serveStdio rejected with */
  done: Promise<unknown>;
  out: () => string;
  err: () => string;
}

function session(opts: Partial<StdioServerOptions> = {}, output = new PassThrough()): Session {
  const input = new PassThrough();
  const errors = new PassThrough();
  const got: Buffer[] = [];
  const errs: Buffer[] = [];
  if (output.readableFlowing !== false) output.on('data', (b: Buffer) => got.push(b));
  errors.on('data', (b: Buffer) => errs.push(b));
  const done = serveStdio({ repo, input, output, errors, ...opts }).then(
    () => 'ended',
    (e: unknown) => e,
  );
  return {
    input,
    output,
    done,
    out: () => Buffer.concat(got).toString('latin1'),
    err: () => Buffer.concat(errs).toString('latin1'),
  };
}

/** `name\n` and the `key <len>\nvalue` pairs of its arguments */
function command(name: string, args: Record<string, string>): string {
  return `${name}\n${argPairs(args)}`;
}

/** `key <len>\nvalue` pairs (a command's arguments, or a `* N` list's) */
function argPairs(args: Record<string, string>): string {
  return Object.entries(args)
    .map(([k, v]) => `${k} ${Buffer.byteLength(v, 'latin1')}\n${v}`)
    .join('');
}

/** what the session came to within `ms` (the old server never ended a silent session) */
function within(done: Promise<unknown>, ms: number): Promise<unknown> {
  return Promise.race([done, new Promise((r) => setTimeout(() => r('still running'), ms))]);
}

const codeOf = (e: unknown): string | undefined => (e as { code?: string }).code;

describe('serve --stdio: requests asking for too much', () => {
  it(`an argument of more than ${REQUEST_ARGS_MAX} bytes is refused from its length (PROTOCOL); 300k nodes (12 MB) are answered`, async () => {
    const over = session();
    over.input.end(`known\nnodes ${REQUEST_ARGS_MAX + 1}\n`); // the value never comes: not waited for
    const err = await within(over.done, 5000);
    expect(codeOf(err)).toBe('PROTOCOL');
    expect((err as Error).message).toMatch(`argument nodes larger than ${REQUEST_ARGS_MAX} bytes`);

    const ok = session();
    const nodes = [...heads, ...Array(300_000).fill('f'.repeat(40))].join(' ');
    // `known` declares `nodes *`; sent in 64 KiB pieces, as a pipe delivers them (the reader
    // once paused the pipe at 4 MiB and waited for the rest of the argument forever)
    const request = Buffer.from(`${command('known', { nodes })}* 0\n`, 'latin1');
    for (let at = 0; at < request.length; at += 64 << 10)
      ok.input.write(request.subarray(at, at + (64 << 10)));
    ok.input.end();
    expect(await ok.done).toBe('ended');
    expect(ok.out()).toBe(`${heads.length + 300_000}\n${'1'.repeat(heads.length)}${'0'.repeat(300_000)}`);
  });

  it(`a batch of more than ${BATCH_MAX_COMMANDS} commands is an out-of-band error; ${BATCH_MAX_COMMANDS} are answered`, async () => {
    // `batch` declares `cmds *`: a `* 0` line ends its arguments
    const batch = (n: number) => `${command('batch', { cmds: Array(n).fill('heads ').join(';') })}* 0\n`;
    const over = session();
    over.input.end(batch(BATCH_MAX_COMMANDS + 1));
    expect(await over.done).toBe('ended');
    expect(over.err()).toMatch(/too many commands in one batch/);
    expect(over.out()).toBe('\n');
    const ok = session();
    ok.input.end(batch(BATCH_MAX_COMMANDS));
    expect(await ok.done).toBe('ended');
    const body = ok.out().slice(ok.out().indexOf('\n') + 1);
    expect(body.split(';')).toHaveLength(BATCH_MAX_COMMANDS);
  });

  it(`more than ${REQUEST_ARGS_COUNT_MAX} arguments (\`* N\`) are refused from the count line (PROTOCOL)`, async () => {
    const s = session();
    s.input.end(`getbundle\n* ${REQUEST_ARGS_COUNT_MAX + 1}\n`);
    const err = await within(s.done, 5000);
    expect(codeOf(err)).toBe('PROTOCOL');
    expect((err as Error).message).toMatch(/too many arguments/);
  });

  it(`between: more than ${BETWEEN_MAX_PAIRS} pairs is an out-of-band error`, async () => {
    const pairs = (n: number) =>
      Array(n)
        .fill(`${heads[0]}-${'0'.repeat(40)}`)
        .join(' ');
    const s = session();
    s.input.end(
      command('between', { pairs: pairs(BETWEEN_MAX_PAIRS + 1) }) + command('between', { pairs: pairs(10) }),
    );
    expect(await s.done).toBe('ended');
    expect(s.err()).toMatch(/too many between pairs/);
    const [first, second] = [s.out().slice(0, 1), s.out().slice(1)];
    expect(first).toBe('\n');
    expect(second.split('\n').length).toBe(12); // `<len>\n` + 10 lines + ''
  });

  it(`getbundle: more than ${GETBUNDLE_MAX_LIST} listkeys namespaces is an error:abort part`, async () => {
    const s = session();
    s.input.end(
      `getbundle\n* 3\n${[
        'bundlecaps HG20',
        `listkeys ${Array(GETBUNDLE_MAX_LIST + 1)
          .fill('bookmarks')
          .join(',')}`,
        'cg 0',
      ]
        .map((kv) => {
          const sp = kv.indexOf(' ');
          return `${kv.slice(0, sp)} ${kv.length - sp - 1}\n${kv.slice(sp + 1)}`;
        })
        .join('')}`,
    );
    expect(await s.done).toBe('ended');
    expect(s.out()).toMatch(/error:abort/i);
    expect(s.out()).toContain('too many listkeys entries');
  });
});

describe('serve --stdio: clients that stall', () => {
  it('a session that says nothing ends with TIMEOUT after the session idle timeout', async () => {
    const s = session({ sessionIdleTimeoutMs: 300 });
    const err = await within(s.done, 5000);
    expect(codeOf(err)).toBe('TIMEOUT');
    expect((err as Error).message).toBe('no command from the client in 300 ms');
    expect(s.out()).toBe('');
  });

  it('a pause between commands longer than the idle timeout (local work, as hg does after a stream_out) is within the session idle timeout', async () => {
    const s = session({ idleTimeoutMs: 200, sessionIdleTimeoutMs: 5000 });
    s.input.write('heads\n');
    await new Promise((r) => setTimeout(r, 700));
    s.input.end('heads\n');
    expect(await within(s.done, 5000)).toBe('ended');
    expect(s.out().split('\n').filter(Boolean)).toHaveLength(4);
  });

  it('a command trickled a byte every 40 ms (never idle that long) must still arrive whole within the timeout', async () => {
    const s = session({ idleTimeoutMs: 600 });
    const bytes = Buffer.from(`${command('known', { nodes: heads.join(' ') })}* 0\n`, 'latin1');
    let at = 0;
    const timer = setInterval(() => {
      if (at < bytes.length) s.input.write(bytes.subarray(at, ++at));
    }, 40);
    const err = await within(s.done, 5000);
    clearInterval(timer);
    expect(bytes.length * 40).toBeGreaterThan(1200); // the whole command takes over twice the timeout
    expect(codeOf(err)).toBe('TIMEOUT');
    expect(s.out()).toBe('');
  });

  it('commands with pauses below the timeout between them are all answered', async () => {
    const s = session({ idleTimeoutMs: 600 });
    for (let i = 0; i < 4; i++) {
      s.input.write('heads\n');
      await new Promise((r) => setTimeout(r, 250)); // 1 s in all: longer than the timeout
    }
    s.input.end();
    expect(await s.done).toBe('ended');
    expect(s.out().split('\n').filter(Boolean)).toHaveLength(8);
  });

  it('a client that reads none of a reply ends the session with TIMEOUT', async () => {
    const output = new PassThrough({ highWaterMark: 1 });
    output.pause();
    const s = session({ idleTimeoutMs: 300 }, output);
    s.input.write('stream_out\n');
    const err = await within(s.done, 5000);
    expect(codeOf(err)).toBe('TIMEOUT');
    expect((err as Error).message).toMatch(/read nothing of the reply/);
  });

  it('a client that reads a reply too slowly (2 KiB every 40 ms: each 4 KiB write drains within the idle timeout, 20 KiB per 400 ms is below the floor) ends the session with TIMEOUT', async () => {
    const output = new PassThrough({ highWaterMark: 1024 });
    output.pause();
    let read = 0;
    const reader = setInterval(() => {
      const b = output.read(2048) as Buffer | null;
      if (b) read += b.length;
    }, 40);
    const s = session({ idleTimeoutMs: 400, chunkSize: 4096 }, output);
    // the whole history as a changegroup (147 KB in 4 KiB chunks)
    s.input.write(
      `getbundle\n* 2\n${argPairs({ bundlecaps: `HG20,bundle2=${encodeURIComponent('HG20\nchangegroup=02')}`, heads: heads.join(' ') })}`,
    );
    const err = await within(s.done, 8000);
    clearInterval(reader);
    expect(codeOf(err), `${String(err)} after ${read} bytes`).toBe('TIMEOUT');
    expect((err as Error).message).toMatch(
      /^the client read only \d+ bytes of the reply in 0\.\d s of waiting \(reading too slowly\)$/,
    );
    expect(read).toBeGreaterThan(0);
    expect(read).toBeLessThan(64 << 10);
  });

  it('the CLI: `sluice -R REPO serve --stdio --idle-timeout 1` with a silent client exits with an abort', async () => {
    const child = spawn(
      process.execPath,
      [join(ROOT, 'bin', 'sluice.cjs'), '-R', repo, 'serve', '--stdio', '--idle-timeout', '1'],
      {
        cwd: ROOT,
        env: { ...process.env, SLUICE_FROM_SOURCE: '1', SLUICE_CLI_NO_RUN: '' },
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    let err = '';
    child.stderr.on('data', (b: Buffer) => (err += b.toString()));
    child.stdout.resume();
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    const code = await within(exited, 30_000);
    if (code === 'still running') child.kill();
    expect(code).toBe(1);
    expect(err).toMatch(/^abort: no command from the client in 1000 ms/m);
  }, 40_000);
});
