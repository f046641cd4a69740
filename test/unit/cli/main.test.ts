import { spawn } from 'node:child_process';
import {
  createWriteStream,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SluiceEvent } from '../../../src/shared/events';
import type { CliIO } from '../../../src/cli/command';
import { loadCliMain, runCli, type CliRun } from '../../support/cli';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const FIXTURES = join(ROOT, 'test', 'fixtures', 'hg');
const work = mkdtempSync(join(tmpdir(), 'sluice-cli-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

let main: (argv: string[], io: CliIO) => Promise<number>;
beforeAll(async () => {
  main = await loadCliMain(); // main() without running the process entry
});

/** Runs main() in-process with captured output. */
const cli = (...argv: string[]): Promise<CliRun> => runCli(main, argv);

let n = 0;
const dest = () => join(work, `repo-${n++}`);

describe('sluice CLI', () => {
  it('--help lists the commands (exit 0); no arguments is a usage error (exit 2)', async () => {
    const help = await cli('--help');
    expect(help.code).toBe(0);
    for (const c of ['apply', 'bundle', 'inspect', 'clone', 'verify', 'serve'])
      expect(help.out).toMatch(new RegExp(`^  ${c} `, 'm'));
    expect((await cli()).code).toBe(2);
    const applyHelp = await cli('apply', '--help');
    expect(applyHelp).toMatchObject({ code: 0 });
    expect(applyHelp.out).toContain('--background-close on|off|auto');
  });

  it('usage errors exit 2 with the usage line', async () => {
    expect(await cli('nope')).toMatchObject({
      code: 2,
      err: expect.stringContaining("unknown command 'nope'"),
    });
    const missing = await cli('apply', 'only-one-arg');
    expect(missing.code).toBe(2);
    expect(missing.err).toContain('sluice apply: missing arguments');
    expect(missing.err).toContain('usage: sluice apply BUNDLE DEST');
    expect((await cli('apply', 'a', 'b', '--background-close', 'sometimes')).err).toContain(
      '--background-close must be one of on, off, auto',
    );
    expect((await cli('apply', 'a', 'b', '--close-threads', '0')).code).toBe(2);
    expect((await cli('apply', 'a', 'b', '--bogus')).code).toBe(2);
    expect((await cli('bundle', 'r', 'o', '--type', 'v3')).code).toBe(2);
    const badUrl = await cli('serve', 'r', '--public-url', 'ftp://hg.example.org/');
    expect(badUrl).toMatchObject({
      code: 2,
      err: expect.stringContaining('--public-url: public URL must be http'),
    });
    expect((await cli('serve', '--stdio', '-R', 'r', '--public-url', 'http://h/')).code).toBe(2);
  });

  it('clone --connect-timeout bounds the ssh handshake: a remote that prompts for a password and waits is an abort naming the host, nothing at DEST', async () => {
    const script = join(work, 'prompting-remote.sh');
    writeFileSync(script, `printf 'Password: '\nwhile read -r line; do :; done\n`);
    const d = dest();
    const r = await cli('clone', 'ssh://host/repo', d, '--ssh', `sh ${script}`, '--connect-timeout', '1');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(
      /^abort: no Mercurial server answered on host within 1 s \(the remote's last output: "Password:"\)/m,
    );
    expect(existsSync(d)).toBe(false);
  });

  it('apply prints hg-style status lines and exits 0', async () => {
    const d = dest();
    const r = await cli('apply', join(FIXTURES, 'default', 'stream-v2.hg'), d);
    expect(r).toMatchObject({ code: 0, err: '' });
    expect(r.out).toMatch(
      /^28 files to transfer, 142 KB of data\ntransferred 142 KB in [0-9.]+ seconds \(.+\/sec\)\n$/,
    );
    expect(existsSync(join(d, '.hg', 'store', '00changelog.i'))).toBe(true);
  });

  it('--json prints every event as NDJSON: start, phases, files, progress, done', async () => {
    const r = await cli('apply', '--json', join(FIXTURES, 'legacy', 'packed1.hg'), dest());
    expect(r.code).toBe(0);
    const events = r.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as SluiceEvent);
    expect(events[0]).toMatchObject({ type: 'start', kind: 'apply', format: 'packed1', files: 23 });
    expect(events.at(-1)).toMatchObject({ type: 'done', files: 23, close: { background: false } });
    const done = events.at(-1) as Extract<SluiceEvent, { type: 'done' }>;
    expect(done.peakRssBytes).toBeGreaterThan(0);
    expect(done.userCpuMs).toBeGreaterThanOrEqual(0);
    const files = events.flatMap((e) => (e.type === 'files' ? e.entries : []));
    expect(files).toHaveLength(23);
    // batched with the progress ticks, never one message per file: each files event is the
    // pending entries flushed just before a progress event (how many ticks depends on the load)
    const batches = events.flatMap((e, i) => (e.type === 'files' ? [i] : []));
    expect(batches.length).toBeLessThan(files.length);
    for (const i of batches) expect(events[i + 1]?.type).toBe('progress');
    expect(events.filter((e) => e.type === 'progress').at(-1)).toMatchObject({
      files: 23,
      totalFiles: 23,
      etaMs: 0,
    });
  });

  it('--debug prints one hg-style line per file', async () => {
    const r = await cli('apply', '--debug', join(FIXTURES, 'default', 'stream-v2.hg'), dest());
    expect(r.code).toBe(0);
    expect(r.out).toContain('adding [s] data/.config/x.i (67 bytes)\n');
    expect(r.out).toContain('adding [s] data/big.bin.d (137 KB)\n');
    expect(r.out).toContain('adding [c] rbc-names-v1 (7 bytes)\n');
    expect(r.out.match(/^adding /gm)).toHaveLength(28);
  });

  it('errors print `abort: ...` on stderr and exit 1 (DEST_EXISTS, not a bundle)', async () => {
    const d = dest();
    expect((await cli('apply', join(FIXTURES, 'default', 'packed1.hg'), d)).code).toBe(0);
    const again = await cli('apply', join(FIXTURES, 'default', 'packed1.hg'), d);
    expect(again.code).toBe(1);
    // a stream bundle never adds to an existing repository, and says so
    expect(again.err).toMatch(
      new RegExp(`^abort: destination '${d}' is not empty: .* is a stream clone bundle`),
    );
    const notBundle = join(work, 'not-a-bundle');
    writeFileSync(notBundle, 'hello world');
    const bad = await cli('apply', notBundle, dest());
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/^abort: not a stream clone bundle/);
    expect(readdirSync(work).filter((f) => f.includes('sluice-tmp'))).toEqual([]);
  });

  it('inspect shows the header, --json the BundleInfo', async () => {
    const text = await cli('inspect', join(FIXTURES, 'default', 'stream-v2-zstd.hg'));
    expect(text.code).toBe(0);
    expect(text.out).toContain('type: v2 (zstd-v2;stream=v2)\n');
    expect(text.out).toContain(
      'requirements: generaldelta, revlog-compression-zstd, revlogv1, sparserevlog\n',
    );
    const json = await cli('inspect', '--json', join(FIXTURES, 'default', 'packed1.hg'));
    expect(JSON.parse(json.out)).toMatchObject({
      type: 'packed1',
      compression: 'UN',
      files: 23,
      unsupported: [],
    });
  });

  it('bundle then apply round-trips (packed1 and v2 zstd with 4 KiB chunks)', async () => {
    const repo = join(work, 'src-repo');
    const fromFixture = join(FIXTURES, 'default', 'stream-v2.hg');
    expect((await cli('apply', fromFixture, repo)).code).toBe(0);
    for (const args of [
      ['--type', 'packed1'],
      ['--type', 'v2', '--compression', 'zstd', '--chunk-size', '4096'],
    ]) {
      const out = join(work, `b-${n++}.hg`);
      const made = await cli('bundle', repo, out, ...args);
      expect(made.code).toBe(0);
      expect(made.out).toMatch(
        /^writing \d+ bytes for \d+ files\nbundle requirements: generaldelta, revlog-compression-zstd, revlogv1, sparserevlog\n/,
      );
      const d = dest();
      expect((await cli('apply', out, d)).code).toBe(0);
      expect(
        readFileSync(join(d, '.hg/store/00changelog.i')).equals(
          readFileSync(join(repo, '.hg/store/00changelog.i')),
        ),
      ).toBe(true);
    }
  });
});

describe('sluice CLI process', () => {
  it('SIGINT cancels cleanly: exit 130, DEST absent, temporary removed', async () => {
    // The bundle is a FIFO fed by the test: the apply waits mid-stream until we interrupt it.
    const fifo = join(work, 'bundle.fifo');
    const { execFileSync } = await import('node:child_process');
    execFileSync('mkfifo', [fifo]);
    const d = join(work, 'interrupted');
    const child = spawn(process.execPath, [join(ROOT, 'bin', 'sluice.cjs'), 'apply', fifo, d], {
      cwd: ROOT,
      env: { ...process.env, SLUICE_FROM_SOURCE: '1', SLUICE_CLI_NO_RUN: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (err += b.toString()));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    const writer = createWriteStream(fifo);
    // packed1 header announcing 3 files, then the first one only
    const reqs = Buffer.from('revlogv1\0', 'latin1');
    const head = Buffer.alloc(24);
    head.write('HGS1UN', 0, 'latin1');
    head.writeBigUInt64BE(3n, 6);
    head.writeBigUInt64BE(30n, 14);
    head.writeUInt16BE(reqs.length, 22);
    writer.write(Buffer.concat([head, reqs, Buffer.from('data/a.i\x0010\n0123456789', 'latin1')]));
    // wait until the job started and its temporary exists (it is made just after the start
    // event is printed: waiting for the line alone raced on a loaded machine)
    const findTemp = (): string | undefined =>
      readdirSync(work).find((f) => f.startsWith('.interrupted.sluice-tmp-'));
    for (let i = 0; i < 600 && !(out.includes('3 files to transfer') && findTemp()); i++)
      await new Promise((r) => setTimeout(r, 50));
    expect(findTemp(), `stdout: ${out}\nstderr: ${err}`).toBeDefined();
    child.kill('SIGINT');
    await new Promise((r) => setTimeout(r, 300));
    writer.end(); // EOF: the blocked read returns, the job sees the cancel
    expect(await exited).toBe(130);
    expect(err).toContain('interrupted!');
    expect(existsSync(d)).toBe(false);
    expect(readdirSync(work).filter((f) => f.includes('sluice-tmp'))).toEqual([]);
  }, 60_000);
});
