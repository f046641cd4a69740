// A local repository as a peer (hg's localpeer): a path or file:// URL. Rather than a second
// peer, the ssh protocol's client (SshPeer) talks to serveStdio on that repository through
// in-process pipes, so discovery, getbundle, phases and bookmarks are the code ssh pulls use.

import { isAbsolute, resolve } from 'node:path';
import { PassThrough } from 'node:stream';
import { SluiceError, toSluiceError } from '../errors';
import { locateRepository } from '../store/requirements';
import { serveStdio } from './serve/stdio-server';
import { SshPeer, type SshPeerOptions } from '../client/ssh-peer';

/** A source with a scheme other than file: (http://, ssh://, ...); a Windows drive is a path. */
function hasScheme(source: string): boolean {
  return /^[a-z][a-z0-9+.-]+:/i.test(source) && !/^[a-z]:[\\/]/i.test(source);
}

/** urlutil.url.islocal: a path, or a file: URL. */
export function isLocalSource(source: string): boolean {
  return /^file:/i.test(source) || !hasScheme(source);
}

/**
 * The absolute path of a local source: a file: URL's path (file:///srv/r, file://localhost/srv/r,
 * file:rel), or a path resolved against `base` (the current directory for an argument, the
 * repository root for its paths.default, as hg's ui.readconfig does for [paths]).
 */
export function localSourcePath(source: string, base: string): string {
  let p = source;
  if (/^file:/i.test(p)) {
    p = p.slice(5);
    if (p.startsWith('//')) {
      p = p.slice(2);
      if (/^localhost\//i.test(p)) p = p.slice('localhost'.length);
      else if (!p.startsWith('/'))
        throw new SluiceError(
          'USAGE',
          `file:// URLs name a local path (file:///path), not a host: ${source}`,
        );
    }
    try {
      p = decodeURIComponent(p);
    } catch {
      /* hg's unquote leaves a malformed escape as it is */
    }
  }
  if (!p) throw new SluiceError('USAGE', `empty local source '${source}'`);
  return isAbsolute(p) ? resolve(p) : resolve(base, p);
}

/** Opens the repository at `path` (absolute) as a peer; NOT_A_REPO names it when it is none. */
export async function openLocalPeer(path: string, opts: SshPeerOptions = {}): Promise<SshPeer> {
  try {
    await locateRepository(path);
  } catch (e) {
    const err = toSluiceError(e);
    if (err.code === 'NOT_A_REPO') throw new SluiceError('NOT_A_REPO', `repository ${path} not found`);
    throw err;
  }
  const toServer = new PassThrough();
  const fromServer = new PassThrough();
  const errors = new PassThrough();
  const stop = new AbortController();
  let failure: SluiceError | undefined;
  // no idle timeout: the client is this process, which may pause between commands (its own disk)
  const exited = serveStdio({
    repo: path,
    input: toServer,
    output: fromServer,
    errors,
    signal: stop.signal,
    idleTimeoutMs: 0,
    sessionIdleTimeoutMs: 0,
  }).then(
    () => ({ code: 0, signal: null }),
    (e: unknown) => {
      failure = toSluiceError(e);
      return { code: 255, signal: null };
    },
  );
  void exited.then(() => {
    fromServer.end();
    errors.end();
  });
  return SshPeer.overChannel(
    path,
    path,
    {
      stdin: toServer,
      stdout: fromServer,
      stderr: errors,
      exited,
      kill() {
        stop.abort();
        toServer.end();
      },
      failure: () => failure,
    },
    opts,
  );
}
