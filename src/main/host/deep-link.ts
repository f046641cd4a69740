// What a `sluice://clone?url=…[&dest=…&rev=…]` link, the web host's `/open?…`, or a bundle file
// handed to the app at launch (argv, macOS open-file) asks for. A link comes from a web page, so
// it is hostile input: it only ever pre-fills a dialog (nothing runs without the user's click),
// and everything it carries is bounded and checked here, in one pure module, before main passes
// it to the renderer.

import { posix, win32 } from 'node:path';
import type { DeepLink, DeepLinkResult } from '../../shared/ipc';
import { CONTROL_OR_BIDI } from '../../shared/shown-text';

export type { DeepLink, DeepLinkResult };

export const DEEP_LINK_SCHEME = 'sluice';
const MAX_LINK = 4096;
const MAX_URL = 2048;
const MAX_PATH = 1024;
/** hg names are free text, but a link's rev is a name a page can show: a bounded plain charset */
const REV_RE = /^[A-Za-z0-9._@+\-/]{1,128}$/;
/** a link may name only network sources: file:// or a bare path would point the app at this machine */
const LINK_URL_SCHEMES = ['http:', 'https:', 'ssh:'];
const BUNDLE_EXTENSIONS = ['.hg', '.bundle'];

const refuse = (reason: string): DeepLinkResult => ({ ok: false, reason });

function absolutePath(p: string, platform: NodeJS.Platform): boolean {
  return platform === 'win32' ? win32.isAbsolute(p) && /^([A-Za-z]:\\|\\\\)/.test(p) : posix.isAbsolute(p);
}

/**
 * A link's dest on Windows is a drive path only: a UNC or device path (`\\host\share`, `\\?\`,
 * `\\.\`) would have the dialog's destination check reach that host over SMB before anyone clicks,
 * and Windows answers an SMB server with the user's NTLM credentials.
 */
function linkDestination(p: string, platform: NodeJS.Platform): boolean {
  return platform === 'win32' ? /^[A-Za-z]:\\/.test(p) : posix.isAbsolute(p);
}

/**
 * The same elsewhere: autofs mounts `/net/HOST/…` (macOS by default, Linux's -hosts map) and macOS
 * `/Network/…` as soon as a path under them is looked at, so the check would reach HOST over NFS.
 */
function underAutomount(p: string, platform: NodeJS.Platform): boolean {
  return platform !== 'win32' && /^\/(net|Network)(\/|$)/.test(posix.normalize(p));
}

function checkSourceUrl(raw: string): string | null {
  if (raw.length > MAX_URL) return `the url is longer than ${MAX_URL} characters`;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return 'the url is not a valid URL';
  }
  if (!LINK_URL_SCHEMES.includes(u.protocol)) return `a link may not name a ${u.protocol} source`;
  if (u.password) return 'a link may not carry a password';
  if (!u.hostname) return 'the url has no host';
  return null;
}

/**
 * The parameters of a clone link (`url`, `dest`, `rev`: each at most once, nothing else), from a
 * `sluice://clone?…` link's query or the web host's `/open?…`.
 */
export function parseCloneQuery(
  search: string,
  platform: NodeJS.Platform = process.platform,
): DeepLinkResult {
  if (search.length > MAX_LINK) return refuse(`the link is longer than ${MAX_LINK} characters`);
  let params: URLSearchParams;
  try {
    params = new URLSearchParams(search);
  } catch {
    return refuse('the link cannot be read');
  }
  const seen = new Map<string, string>();
  for (const [k, v] of params) {
    if (!['url', 'dest', 'rev'].includes(k))
      return refuse(`unknown parameter ${JSON.stringify(k.slice(0, 40))}`);
    if (seen.has(k)) return refuse(`${k} given twice`);
    if (CONTROL_OR_BIDI.test(v)) return refuse(`${k} holds control characters`);
    seen.set(k, v);
  }
  const url = seen.get('url');
  if (!url) return refuse('the link names no url');
  const urlProblem = checkSourceUrl(url);
  if (urlProblem) return refuse(urlProblem);
  const link: DeepLink = { kind: 'clone', url };
  const dest = seen.get('dest');
  if (dest !== undefined && dest !== '') {
    if (dest.length > MAX_PATH) return refuse(`dest is longer than ${MAX_PATH} characters`);
    if (!linkDestination(dest, platform))
      return refuse(
        platform === 'win32' ? 'dest must be a path on a drive (C:\\…)' : 'dest must be an absolute path',
      );
    if (dest.split(/[\\/]/).includes('..')) return refuse('dest may not contain ..');
    if (underAutomount(dest, platform))
      return refuse('dest may not be under /net or /Network (network hosts mounted on sight)');
    link.dest = dest;
  }
  const rev = seen.get('rev');
  if (rev !== undefined && rev !== '') {
    if (!REV_RE.test(rev)) return refuse('rev must be 1-128 letters, digits or . _ @ + - /');
    link.rev = rev;
  }
  return { ok: true, link };
}

/** A `sluice://clone?…` (or `sluice:clone?…`) link. */
export function parseDeepLink(raw: string, platform: NodeJS.Platform = process.platform): DeepLinkResult {
  if (raw.length > MAX_LINK) return refuse(`the link is longer than ${MAX_LINK} characters`);
  if (CONTROL_OR_BIDI.test(raw)) return refuse('the link holds control characters');
  const m = /^sluice:(?:\/\/)?([A-Za-z]+)\/?(?:\?(.*))?$/s.exec(raw);
  if (!m) return refuse('not a sluice:// link');
  if (m[1]!.toLowerCase() !== 'clone') return refuse(`unknown action ${JSON.stringify(m[1]!.slice(0, 40))}`);
  return parseCloneQuery(m[2] ?? '', platform);
}

/** A bundle file the app was asked to open (file association): an absolute path ending .hg or .bundle. */
export function parseBundleFile(path: string, platform: NodeJS.Platform = process.platform): DeepLinkResult {
  if (path.length > MAX_PATH || CONTROL_OR_BIDI.test(path)) return refuse('not a usable file path');
  if (!absolutePath(path, platform)) return refuse('not an absolute path');
  const lower = path.toLowerCase();
  if (!BUNDLE_EXTENSIONS.some((e) => lower.endsWith(e))) return refuse('not a bundle file (.hg, .bundle)');
  return { ok: true, link: { kind: 'apply', bundlePath: path } };
}

/**
 * What a launch's argv (first launch, or the second instance's forwarded to the first) asks for:
 * the first `sluice:` link, else the first bundle file; argv[0] (and Electron's own flags) are
 * skipped. A relative bundle path is taken from `cwd` (a second instance's own working directory,
 * which Electron forwards). Refusals are returned so main can show them; null when argv asks for
 * nothing.
 */
export function deepLinkFromArgv(
  argv: readonly string[],
  platform: NodeJS.Platform = process.platform,
  cwd?: string,
): DeepLinkResult | null {
  const args = argv.slice(1).filter((a) => !a.startsWith('-'));
  const link = args.find((a) => /^sluice:/i.test(a));
  if (link !== undefined) return parseDeepLink(link, platform);
  const file = args.find((a) => BUNDLE_EXTENSIONS.some((e) => a.toLowerCase().endsWith(e)));
  if (file === undefined) return null;
  const paths = platform === 'win32' ? win32 : posix;
  const resolved = cwd !== undefined && !absolutePath(file, platform) ? paths.resolve(cwd, file) : file;
  return parseBundleFile(resolved, platform);
}
