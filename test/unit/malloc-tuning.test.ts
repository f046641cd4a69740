import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import {
  MMAP_THRESHOLD,
  MMAP_THRESHOLD_ENV,
  isStreamBundleFile,
  mallocTunedEnv,
} from '../../src/main/malloc-tuning';
import { ROOT } from '../support/env';

/** A bundle2 file's first bytes: stream parameters, then the first part's header. */
function bundle2Head(params: string, partType: string): Buffer {
  const p = Buffer.from(params, 'latin1');
  const type = Buffer.from(partType, 'latin1');
  const header = Buffer.concat([Buffer.from([type.length]), type, Buffer.alloc(5)]);
  const size = (n: number) => Buffer.from([n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]);
  return Buffer.concat([Buffer.from('HG20'), size(p.length), p, size(header.length), header]);
}

describe('mallocTunedEnv', () => {
  const env = { PATH: '/usr/bin', HOME: '/home/u' };
  const bundles = mkdtempSync(join(tmpdir(), 'sluice-malloc-bundles-'));
  afterAll(() => rmSync(bundles, { recursive: true, force: true }));
  const bundle = (name: string, bytes: Buffer) => {
    const path = join(bundles, name);
    writeFileSync(path, bytes);
    return path;
  };

  it('fixes the threshold for the changegroup commands on Linux, keeping the environment', () => {
    for (const argv of [
      ['clone', '--pull', 'http://h/', 'dest'],
      ['pull', 'repo'],
      ['apply', 'b.hg', 'dest'],
      ['-R', 'repo', 'pull'],
      ['--repository=repo', 'pull'],
    ]) {
      expect(mallocTunedEnv(argv, env, 'linux')).toEqual({
        ...env,
        [MMAP_THRESHOLD_ENV]: String(MMAP_THRESHOLD),
      });
    }
  });

  it('knows a stream bundle by its first bytes, as hg writes them', () => {
    expect(isStreamBundleFile(bundle('p1.hg', Buffer.from('HGS1UN\0\0')))).toBe(true);
    expect(isStreamBundleFile(bundle('s2.hg', bundle2Head('', 'STREAM2')))).toBe(true);
    expect(isStreamBundleFile(bundle('s2un.hg', bundle2Head('Compression=UN', 'stream2')))).toBe(true);
    // compressed: the part's header cannot be read without decoding, so not known to be one
    expect(isStreamBundleFile(bundle('s2zs.hg', bundle2Head('Compression=ZS', 'STREAM2')))).toBe(false);
    expect(isStreamBundleFile(bundle('cg.hg', bundle2Head('', 'CHANGEGROUP')))).toBe(false);
    expect(isStreamBundleFile(bundle('hg10.hg', Buffer.from('HG10UN')))).toBe(false);
    expect(isStreamBundleFile(bundle('short.hg', bundle2Head('', 'STREAM2').subarray(0, 14)))).toBe(false);
    expect(isStreamBundleFile(join(bundles, 'missing.hg'))).toBe(false);
  });

  it('applies a stream bundle as it is, a changegroup bundle under the threshold', () => {
    const stream = bundle('stream.hg', bundle2Head('', 'STREAM2'));
    const cg = bundle('cg2.hg', bundle2Head('', 'CHANGEGROUP'));
    expect(mallocTunedEnv(['apply', stream, 'dest'], env, 'linux')).toBeUndefined();
    expect(mallocTunedEnv(['apply', '--close-threads', '8', stream, 'd'], env, 'linux')).toBeUndefined();
    expect(mallocTunedEnv(['apply', cg, 'dest'], env, 'linux')?.[MMAP_THRESHOLD_ENV]).toBe(
      String(MMAP_THRESHOLD),
    );
  });

  it('leaves other commands, other systems and a threshold already chosen alone', () => {
    expect(mallocTunedEnv(['status'], env, 'linux')).toBeUndefined();
    expect(mallocTunedEnv(['verify', 'repo'], env, 'linux')).toBeUndefined();
    expect(mallocTunedEnv(['-R', 'pull'], env, 'linux')).toBeUndefined(); // -R's value, no command
    expect(mallocTunedEnv([], env, 'linux')).toBeUndefined();
    expect(mallocTunedEnv(['pull', 'repo'], env, 'darwin')).toBeUndefined();
    expect(mallocTunedEnv(['pull', 'repo'], env, 'win32')).toBeUndefined();
    expect(mallocTunedEnv(['pull'], { ...env, [MMAP_THRESHOLD_ENV]: '65536' }, 'linux')).toBeUndefined();
    const tunables = { ...env, GLIBC_TUNABLES: 'glibc.malloc.mmap_threshold=262144' };
    expect(mallocTunedEnv(['pull'], tunables, 'linux')).toBeUndefined();
  });
});

// process.execve: Node >= 22.15 on Linux
const canExec =
  process.platform === 'linux' && typeof (process as { execve?: unknown }).execve === 'function';

describe.skipIf(!canExec)('reexecWithMallocTuning (a real process)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-malloc-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const script = join(dir, 'run.mjs');
  writeFileSync(
    script,
    [
      `const { reexecWithMallocTuning } = await import(${JSON.stringify(pathToFileURL(join(ROOT, 'src/main/malloc-tuning.ts')).href)});`,
      `console.log('start', process.pid, process.env.${MMAP_THRESHOLD_ENV} ?? '-', process.argv.slice(2).join(' '));`,
      `reexecWithMallocTuning(process.argv.slice(2));`,
      `console.log('run', process.pid);`,
    ].join('\n'),
  );
  const run = (args: string[], extraEnv: NodeJS.ProcessEnv = {}) => {
    const env = { ...process.env, ...extraEnv };
    if (!(MMAP_THRESHOLD_ENV in extraEnv)) delete env[MMAP_THRESHOLD_ENV];
    const r = spawnSync(process.execPath, ['--import', 'tsx', script, ...args], {
      cwd: ROOT,
      env,
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(0);
    return r.stdout.trim().split('\n');
  };

  it('replaces a pull with itself under the threshold: same pid, arguments and node options', () => {
    const [first, second, last, ...more] = run(['pull', 'repo', 'src']);
    const pid = first!.split(' ')[1];
    expect(first).toBe(`start ${pid} - pull repo src`);
    expect(second).toBe(`start ${pid} ${MMAP_THRESHOLD} pull repo src`);
    expect(last).toBe(`run ${pid}`);
    expect(more).toEqual([]);
  });

  it('runs other commands, and a threshold set by the user, as they are', () => {
    const status = run(['status']);
    expect(status).toHaveLength(2);
    expect(status[0]).toMatch(/^start \d+ - status$/);
    const chosen = run(['pull', 'repo'], { [MMAP_THRESHOLD_ENV]: '65536' });
    expect(chosen).toHaveLength(2);
    expect(chosen[0]).toMatch(/^start \d+ 65536 pull repo$/);
  });
});
