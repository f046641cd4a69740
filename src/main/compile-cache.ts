// V8's code cache for Sluice's modules (the CLI's, the app's and its workers') (node:module enableCompileCache, Node >= 22.1): a later
// start reads the compiled bytecode of the modules an earlier one compiled. That bytecode is code
// the process runs, so the cache lives only in a folder this user alone can write: the user's
// Sluice cache folder, created 0700, refused (and the CLI runs without a cache) when it or any
// folder above it could be changed by another user. Any failure means no cache, silently.

import { lstatSync, mkdirSync, realpathSync } from 'node:fs';
import * as nodeModule from 'node:module';
import { dirname, join } from 'node:path';
import { userCacheDir } from './engine/context/user-cache-dir';

/** node:module's compile cache API (Node >= 22.1; the types installed may predate it). */
interface CompileCacheApi {
  enableCompileCache?: (dir: string) => { status: number; directory?: string };
  getCompileCacheDir?: () => string | undefined;
  constants?: { compileCacheStatus?: { ENABLED: number; ALREADY_ENABLED: number } };
}

/** The cache's folder: `compile-cache` in the user's Sluice cache folder. */
export function compileCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(userCacheDir(env), 'compile-cache');
}

/**
 * Turns the compile cache on for this process (SLUICE_NO_COMPILE_CACHE=1 or Node's own
 * NODE_DISABLE_COMPILE_CACHE=1 keep it off); returns its folder, or undefined when it stays off.
 */
export function enableUserCompileCache(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (isSet(env.SLUICE_NO_COMPILE_CACHE) || isSet(env.NODE_DISABLE_COMPILE_CACHE)) return undefined;
  const api = nodeModule as unknown as CompileCacheApi;
  const statuses = api.constants?.compileCacheStatus;
  if (typeof api.enableCompileCache !== 'function' || !statuses) return undefined; // Node < 22.1
  try {
    const dir = makePrivateDir(compileCacheDir(env));
    if (dir === undefined) return undefined;
    const r = api.enableCompileCache(dir);
    const on = r.status === statuses.ENABLED || r.status === statuses.ALREADY_ENABLED;
    return on ? r.directory : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The environment for a worker this thread starts: a worker has a module loader of its own that
 * enableCompileCache does not reach, but it reads NODE_COMPILE_CACHE from the environment it is
 * given. Set to the folder above this thread's per-Node-version cache folder, so both share one
 * cache; undefined (the worker gets process.env, unchanged) when this thread has no cache.
 */
export function workerEnvWithCompileCache(
  env: NodeJS.ProcessEnv = process.env,
): NodeJS.ProcessEnv | undefined {
  const dir = (nodeModule as unknown as CompileCacheApi).getCompileCacheDir?.();
  return dir ? { ...env, NODE_COMPILE_CACHE: dirname(dir) } : undefined;
}

function isSet(v: string | undefined): boolean {
  return v !== undefined && v !== '' && v !== '0';
}

/**
 * Creates dir (0700, with any missing parent) and returns its real path when only `uid` can change
 * what is in it, else undefined: the folder owned by uid with no group or other permission, and
 * every folder above it owned by uid or root, writable by nobody else unless sticky (as /tmp is:
 * there nobody else can rename or replace a folder uid owns). The real path is what the cache gets,
 * so a link swapped after the check leads nowhere new. On Windows the per-user ACLs of
 * %LOCALAPPDATA% do that job and there are no uids to check.
 */
export function makePrivateDir(
  dir: string,
  uid: number | undefined = process.getuid?.(),
): string | undefined {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const real = realpathSync(dir);
  if (uid === undefined) return real;
  const own = lstatSync(real);
  if (!own.isDirectory() || own.uid !== uid || (own.mode & 0o077) !== 0) return undefined;
  for (let d = dirname(real); ; d = dirname(d)) {
    const st = lstatSync(d);
    const othersWrite = (st.mode & 0o022) !== 0 && (st.mode & 0o1000) === 0;
    if ((st.uid !== uid && st.uid !== 0) || othersWrite) return undefined;
    if (dirname(d) === d) return real;
  }
}
