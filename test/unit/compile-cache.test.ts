// The compile cache: a folder only this user can change or none at all; through the real bootstrap
// (built as bin/sluice.cjs loads it) a cache that is written once and then reused; and in the app,
// the same cache for the workers its host starts.

import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import * as nodeModule from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileCacheDir, enableUserCompileCache, makePrivateDir } from '../../src/main/compile-cache';
import { ROOT } from '../support/env';

const POSIX = process.platform !== 'win32';
const HAS_COMPILE_CACHE =
  typeof (nodeModule as { enableCompileCache?: unknown }).enableCompileCache === 'function';

let tmp: string;
beforeAll(() => {
  // a private parent: the ancestors of every folder below are then as safe as the system's own
  tmp = mkdtempSync(join(tmpdir(), 'sluice-cc-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe.skipIf(!POSIX)('makePrivateDir (POSIX modes and owners; Windows relies on ACLs)', () => {
  it('creates a missing folder 0700 and accepts it', () => {
    const dir = join(tmp, 'fresh', 'Sluice', 'compile-cache');
    expect(makePrivateDir(dir)).toBe(dir);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
  });

  it('refuses a folder others may read or write', () => {
    for (const mode of [0o770, 0o707, 0o750]) {
      const dir = join(tmp, `mode-${mode.toString(8)}`);
      mkdirSync(dir);
      chmodSync(dir, mode);
      expect(makePrivateDir(dir)).toBeUndefined();
    }
  });

  it('refuses a folder another user owns', () => {
    const dir = join(tmp, 'owned');
    makePrivateDir(dir);
    expect(makePrivateDir(dir, statSync(dir).uid + 1)).toBeUndefined();
  });

  it('refuses a folder under one others may write, unless that one is sticky', () => {
    const open = join(tmp, 'open');
    mkdirSync(open);
    chmodSync(open, 0o777);
    expect(makePrivateDir(join(open, 'cache'))).toBeUndefined();
    chmodSync(open, 0o1777);
    expect(makePrivateDir(join(open, 'cache'))).toBe(join(open, 'cache'));
  });

  it('returns the real path behind a link, so the cache never follows the link later', () => {
    const real = join(tmp, 'real');
    makePrivateDir(real);
    symlinkSync(real, join(tmp, 'link'));
    expect(makePrivateDir(join(tmp, 'link'))).toBe(real);
  });
});

describe('enableUserCompileCache', () => {
  it('SLUICE_NO_COMPILE_CACHE=1 and NODE_DISABLE_COMPILE_CACHE=1 keep it off without creating anything', () => {
    for (const off of ['SLUICE_NO_COMPILE_CACHE', 'NODE_DISABLE_COMPILE_CACHE']) {
      const env = { SLUICE_CACHE_DIR: join(tmp, `off-${off}`), [off]: '1' };
      expect(enableUserCompileCache(env)).toBeUndefined();
      expect(existsSync(env.SLUICE_CACHE_DIR)).toBe(false);
    }
  });

  it('is in the user cache folder SLUICE_CACHE_DIR moves', () => {
    expect(compileCacheDir({ SLUICE_CACHE_DIR: '/c' })).toBe(join('/c', 'compile-cache'));
  });
});

describe.skipIf(!HAS_COMPILE_CACHE)('the CLI bootstrap with the compile cache (Node >= 22.1)', () => {
  let boot: string;
  let entry: string;
  beforeAll(async () => {
    // the bootstrap as scripts/build-cli.mjs builds it for bin/sluice.cjs, and a module it starts
    const out = join(tmp, 'out');
    await build({
      entryPoints: { bootstrap: join(ROOT, 'src/main/bootstrap.ts') },
      outdir: out,
      outExtension: { '.js': '.cjs' },
      bundle: true,
      platform: 'node',
      format: 'cjs',
      target: 'node22',
      logLevel: 'warning',
    });
    boot = join(out, 'bootstrap.cjs');
    entry = join(out, 'entry.mjs');
    writeFileSync(entry, 'export const answer = () => 42;\nprocess.stdout.write(`entry ran ${answer()}`);\n');
  });

  // Node turns its cache off when NODE_DISABLE_COMPILE_CACHE is there at all, even empty
  const cacheEnv = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !/^(SLUICE_NO|NODE_DISABLE)_COMPILE_CACHE$/.test(k)),
  );
  /** Starts a process through startCli with SLUICE_CACHE_DIR=cacheDir; returns its stdout. */
  const start = (cacheDir: string): string =>
    execFileSync(
      process.execPath,
      ['-e', `require(${JSON.stringify(boot)}).startCli(${JSON.stringify(pathToFileURL(entry).href)}, [])`],
      {
        env: { ...cacheEnv, SLUICE_CACHE_DIR: cacheDir },
        encoding: 'utf8',
      },
    );
  /** The cache files (inode and mtime) under the cache folder's per-Node-version folder. */
  const cacheFiles = (cacheDir: string): string[] => {
    const dir = join(cacheDir, 'compile-cache');
    return readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((d) => d.isFile())
      .map((d) => {
        const st = statSync(join(d.parentPath, d.name));
        return `${d.name} ${st.ino} ${st.mtimeMs}`;
      });
  };

  it('writes the cache on the first start and reuses it, unchanged, on the next', () => {
    const cacheDir = join(tmp, 'e2e-cache');
    expect(start(cacheDir)).toBe('entry ran 42');
    const first = cacheFiles(cacheDir);
    expect(first.length).toBeGreaterThan(0);
    expect(start(cacheDir)).toBe('entry ran 42');
    // a cache that was not read would be written again (a new file renamed into place)
    expect(cacheFiles(cacheDir)).toEqual(first);
  });

  it('the app: a worker the host starts (EngineWorkerHost) compiles its modules into the same cache', async () => {
    // the worker's module, recognizable in the cache by a string only it holds (V8 keeps a
    // module's literals in its code cache)
    const marker = 'sluice-engine-worker-cache-marker';
    const worker = join(tmp, 'app-worker.mjs');
    writeFileSync(worker, `const marker = '${marker}';\nexport const length = marker.length;\n`);
    const appSource = join(tmp, 'app-entry.ts');
    writeFileSync(
      appSource,
      [
        `import { EngineWorkerHost } from ${JSON.stringify(join(ROOT, 'src/main/host/engine-worker-host.ts'))};`,
        `const host = new EngineWorkerHost({ batchIntervalMs: 50 }, { script: ${JSON.stringify(worker)} });`,
        `host.on('exit', (code) => process.stdout.write('worker exited ' + code));`,
      ].join('\n'),
    );
    const appEntry = join(tmp, 'out', 'app-entry.mjs');
    await build({
      entryPoints: [appSource],
      outfile: appEntry,
      bundle: true,
      platform: 'node',
      format: 'esm',
      logLevel: 'warning',
    });
    const startApp = (cacheDir: string, extra: Record<string, string> = {}): string =>
      execFileSync(
        process.execPath,
        ['-e', `require(${JSON.stringify(boot)}).startApp(${JSON.stringify(pathToFileURL(appEntry).href)})`],
        { env: { ...cacheEnv, SLUICE_CACHE_DIR: cacheDir, ...extra }, encoding: 'utf8' },
      );
    const holdsMarker = (cacheDir: string): boolean =>
      existsSync(join(cacheDir, 'compile-cache')) &&
      readdirSync(join(cacheDir, 'compile-cache'), { recursive: true, withFileTypes: true }).some(
        (d) => d.isFile() && readFileSync(join(d.parentPath, d.name)).includes(marker),
      );

    const on = join(tmp, 'app-cache');
    expect(startApp(on)).toBe('worker exited 0');
    expect(holdsMarker(on)).toBe(true);
    // with the cache off for the app, its workers have none either
    const off = join(tmp, 'app-cache-off');
    expect(startApp(off, { SLUICE_NO_COMPILE_CACHE: '1' })).toBe('worker exited 0');
    expect(holdsMarker(off)).toBe(false);
  });

  it.skipIf(!POSIX)('an unsafe folder: no cache is written and the CLI still runs', () => {
    const cacheDir = join(tmp, 'e2e-unsafe');
    mkdirSync(join(cacheDir, 'compile-cache'), { recursive: true });
    chmodSync(join(cacheDir, 'compile-cache'), 0o777);
    expect(start(cacheDir)).toBe('entry ran 42');
    expect(cacheFiles(cacheDir)).toEqual([]);
  });
});
