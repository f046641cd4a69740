// Helpers of the wire interop and fault tests: hg on a free port (killed by pid), fixture repos,
// a make-corpus repo, async hg runs (the in-process sluice server must keep its event loop), and
// the comparisons every clone goes through (verify, log/phases/bookmarks, store bytes, requires).

import { execFile, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { expect } from 'vitest';
import { freePort, waitForHttp } from '../../scripts/net-harness.mjs';
import { HG_ENV, tempDirMaker, toolPath, MAKE_CORPUS, type RunResult } from '../support/env';

export {
  FIXTURES,
  HG_ENV,
  MAKE_CORPUS,
  ROOT,
  extractFixture,
  hgSync,
  missing,
  removeDir,
  skipNote,
  type RunResult,
} from '../support/env';

/** The nginx binary (test/support/env.ts's probe; the tests that spawn it skip or fail without it). */
export const nginxPath = (): string => toolPath('nginx') ?? 'nginx';

export interface Nginx {
  url: string;
  stop(): void;
}

/** nginx serving the static files of `root` (Range, strong ETags) on 127.0.0.1; `prefix` holds its state. */
export async function startNginx(root: string, prefix: string): Promise<Nginx> {
  const port = await freePort();
  for (const d of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'])
    mkdirSync(join(prefix, d), { recursive: true });
  const conf = join(prefix, 'nginx.conf');
  writeFileSync(
    conf,
    `daemon off;
worker_processes 1;
${process.getuid?.() === 0 ? 'user root;' : ''}
pid ${prefix}/nginx.pid;
error_log ${prefix}/error.log;
events { worker_connections 64; }
http {
  access_log ${prefix}/access.log;
  client_body_temp_path ${prefix}/body;
  proxy_temp_path ${prefix}/proxy;
  fastcgi_temp_path ${prefix}/fastcgi;
  uwsgi_temp_path ${prefix}/uwsgi;
  scgi_temp_path ${prefix}/scgi;
  server { listen 127.0.0.1:${port}; root ${root}; }
}
`,
  );
  const child = spawn(nginxPath(), ['-c', conf, '-p', prefix, '-e', join(prefix, 'error.log')], {
    stdio: 'ignore',
  });
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/`);
  return {
    url,
    stop: () => {
      if (child.pid && child.exitCode === null) process.kill(child.pid, 'SIGTERM');
    },
  };
}

/** hg without blocking the event loop (an in-process server must answer it). */
export function hgAsync(args: string[], opts: { cwd?: string; timeoutMs?: number } = {}): Promise<RunResult> {
  return new Promise((resolvePromise) => {
    execFile(
      'hg',
      args,
      {
        cwd: opts.cwd,
        env: HG_ENV,
        maxBuffer: 256 << 20,
        timeout: opts.timeoutMs ?? 120_000,
        encoding: 'utf8',
      },
      (err, stdout, stderr) => {
        const status = err
          ? typeof (err as { code?: unknown }).code === 'number'
            ? (err as { code: number }).code
            : -1
          : 0;
        resolvePromise({ status, stdout, stderr });
      },
    );
  });
}

export const tempDir = tempDirMaker('wire');

/** make-corpus.sh --preset tiny (hg's test-clone-uncompressed.t repo, 1034 store files). */
export function makeTinyCorpus(dir: string, extra: string[] = []): string {
  const dest = join(dir, 'tiny');
  const r = spawnSync('bash', [MAKE_CORPUS, '--preset', 'tiny', ...extra, dest], {
    encoding: 'utf8',
    env: process.env,
  });
  if (r.status !== 0) throw new Error(`make-corpus failed: ${r.stderr}`);
  return dest;
}

export { freePort, waitForHttp };

/**
 * hg serve takes a port number, not 0: a port found free can be taken by another test's server
 * before hg binds it, so a bind refused as in use is tried again on another port.
 */
async function bindHgServe(repo: string, config: string[], pidFile: string): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const args = ['serve', '-R', repo, '-a', '127.0.0.1', '-p', String(port), '-d', '--pid-file', pidFile];
    for (const c of config) args.push('--config', c);
    const r = spawnSync('hg', args, { env: HG_ENV, encoding: 'utf8' });
    if (r.status === 0) return port;
    if (attempt >= 5 || !r.stderr.includes('Address already in use'))
      throw new Error(`hg serve failed: ${r.stderr}`);
  }
}

export interface HgServer {
  url: string;
  pid: number;
  stop(): void;
}

/** `hg serve -d` on 127.0.0.1 and a free port; stop() kills it by the pid it wrote. */
export async function startHgServe(repo: string, config: string[] = []): Promise<HgServer> {
  const pidFile = join(mkdtempSync(join(tmpdir(), 'sluice-hgserve-')), 'pid');
  const port = await bindHgServe(repo, config, pidFile);
  const pid = Number(readFileSync(pidFile, 'utf8').trim());
  const url = `http://127.0.0.1:${port}/`;
  await waitForHttp(`${url}?cmd=capabilities`);
  return {
    url,
    pid,
    stop() {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        /* already gone */
      }
      rmSync(dirname(pidFile), { recursive: true, force: true });
    },
  };
}

/** Every file under dir (relative paths, sorted), skipping what a clone legitimately differs in. */
export function storeDigest(repo: string, opts: { skip?: RegExp } = {}): Map<string, string> {
  const store = join(repo, '.hg', 'store');
  const skip = opts.skip ?? /^(fncache|phaseroots|undo.*|lock|requires)$/;
  const out = new Map<string, string>();
  const walk = (rel: string): void => {
    for (const e of readdirSync(join(store, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(r);
      else if (!(rel === '' && skip.test(e.name)))
        out.set(
          r,
          createHash('md5')
            .update(readFileSync(join(store, r)))
            .digest('hex'),
        );
    }
  };
  walk('');
  return out;
}

export function sortedLines(text: string): string[] {
  return text.split('\n').filter(Boolean).sort();
}

export function fncacheSet(repo: string): string[] {
  const p = join(repo, '.hg', 'store', 'fncache');
  return existsSync(p) ? sortedLines(readFileSync(p, 'latin1')) : [];
}

export function requiresOf(repo: string): string {
  const a = readFileSync(join(repo, '.hg', 'requires'), 'utf8');
  const s = join(repo, '.hg', 'store', 'requires');
  return a + '|' + (existsSync(s) ? readFileSync(s, 'utf8') : '');
}

/** What the comparisons look at: hg verify, log with phases and bookmarks, bookmarks list. */
export async function describeClone(
  repo: string,
): Promise<{ verify: RunResult; log: string; bookmarks: string; phases: string }> {
  // verify first, alone: the read commands write caches, and writing the tags cache
  // (hgtagsfnodes1) takes the store lock for a moment; a verify waiting on it prints
  // "waiting for lock on repository ..." (seen in CI), which is no verify failure.
  const verify = await hgAsync(['-R', repo, 'verify', '-q']);
  const [log, bookmarks, phases] = await Promise.all([
    hgAsync(['-R', repo, 'log', '-T', '{rev}:{node} {phase} {bookmarks}\n']),
    hgAsync(['-R', repo, 'bookmarks', '-T', '{bookmark} {node}\n']),
    hgAsync(['-R', repo, 'phase', '-r', 'all()']),
  ]);
  return { verify, log: log.stdout, bookmarks: bookmarks.stdout, phases: phases.stdout };
}

export type CloneView = Awaited<ReturnType<typeof describeClone>>;

/** What a plain clone of `repo` gives: hg clone --stream -U over hg serve into `dest`, described. */
export async function hgStreamReference(repo: string, dest: string): Promise<CloneView> {
  const plain = await startHgServe(repo);
  try {
    const r = await hgAsync(['clone', '-q', '--stream', '-U', plain.url, dest]);
    if (r.status !== 0) throw new Error(`hg clone --stream failed: ${r.stderr}`);
  } finally {
    plain.stop();
  }
  return describeClone(dest);
}

/** `dest` against a reference clone: hg verify passes, log, phases and bookmarks agree, same store bytes. */
export async function expectSameClone(dest: string, reference: string, refView: CloneView): Promise<void> {
  const view = await describeClone(dest);
  expect(view.verify.status, view.verify.stderr).toBe(0);
  expect(view.log).toBe(refView.log);
  expect(view.phases).toBe(refView.phases);
  expect(view.bookmarks).toBe(refView.bookmarks);
  expect(storeDigest(dest)).toEqual(storeDigest(reference));
}

export function dirExists(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}
