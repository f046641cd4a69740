// What runs for an ssh:// URL, as hg 6.3.2 builds it (sshpeer.instance / _makeconnection,
// posix.sshargs, procutil.shellquote, urlutil.url): `<ui.ssh> [-p PORT] [USER@]HOST
// '<remotecmd> -R <path> serve --stdio'`, run through the shell, so an ssh command from hgrc such
// as `ssh -C -i ~/.ssh/key` means what it means to hg.
//
// URL paths keep hg's meaning: ssh://host/rel is `rel` relative to the remote home directory,
// ssh://host//abs/path is the absolute `/abs/path`, ssh://host/ is the home directory itself.

import { SluiceError } from '../errors';
import { readRepoConfig, readUserConfig } from '../store/hgrc';

export interface SshUrl {
  user?: string;
  host: string;
  port?: string;
  /** the path given to `hg -R` on the remote ('.' for the home directory) */
  path: string;
}

export function isSshUrl(url: string): boolean {
  return /^ssh:\/\//i.test(url);
}

function unquote(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s; // hg's unquote leaves a malformed escape as it is
  }
}

/** urlutil.url for `ssh://[user@]host[:port]/path` plus sshpeer.instance's checks. */
export function parseSshUrl(url: string): SshUrl {
  const m = /^ssh:\/\/([^/]*)(\/.*)?$/is.exec(url);
  if (!m || m[2] === undefined)
    throw new SluiceError('USAGE', `couldn't parse location ${url} (ssh://[user@]host[:port]/path)`);
  if (unquote(url).toLowerCase().startsWith('ssh://-'))
    throw new SluiceError('USAGE', `potentially unsafe url: ${url}`);
  let authority = m[1]!;
  let user: string | undefined;
  const at = authority.lastIndexOf('@');
  if (at >= 0) {
    user = authority.slice(0, at);
    authority = authority.slice(at + 1);
    if (user.includes(':'))
      throw new SluiceError('USAGE', 'password in URL not supported (ssh asks for it, or use a key)');
    user = unquote(user);
  }
  let host: string;
  let port: string | undefined;
  const v6 = /^\[([^\]]*)\](?::(.*))?$/.exec(authority);
  if (v6) {
    host = v6[1]!;
    port = v6[2];
  } else {
    const colon = authority.lastIndexOf(':');
    host = colon >= 0 ? authority.slice(0, colon) : authority;
    port = colon >= 0 ? authority.slice(colon + 1) : undefined;
  }
  host = unquote(host);
  if (!host) throw new SluiceError('USAGE', `couldn't parse location ${url} (no host)`);
  if (port !== undefined && port !== '' && !/^[0-9]{1,5}$/.test(port))
    throw new SluiceError('USAGE', `invalid port in ${url}`);
  const target = user ? `${user}@${host}` : host;
  if (target.startsWith('-'))
    throw new SluiceError('USAGE', `illegal ssh hostname or username starting with -: ${target}`);
  const path = unquote(m[2].slice(1));
  return { ...(user ? { user } : {}), host, ...(port ? { port } : {}), path: path || '.' };
}

/** procutil.shellquote (POSIX): bare when only safe characters, else single quotes. */
export function shellQuote(s: string): string {
  if (process.platform === 'win32') return `"${s.replace(/"/g, '\\"')}"`;
  if (s && !/[^a-zA-Z0-9._/+-]/.test(s)) return s;
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** sshpeer._serverquote: for the remote shell, which hg assumes is sh. */
export function serverQuote(s: string): string {
  if (!s || /^[a-zA-Z0-9@%_+=:,./-]*$/.test(s)) return s;
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** The shell command line hg runs (sshpeer._makeconnection). */
export function sshCommandLine(
  sshCmd: string,
  url: SshUrl,
  remoteCmd: string,
  extraArgs: string[] = [],
): string {
  const target = shellQuote(url.user ? `${url.user}@${url.host}` : url.host);
  const port = url.port ? `-p ${shellQuote(url.port)} ` : '';
  const extra = extraArgs.map((a) => `${a} `).join('');
  const remote = shellQuote(`${serverQuote(remoteCmd)} -R ${serverQuote(url.path)} serve --stdio`);
  return `${sshCmd} ${extra}${port}${target} ${remote}`;
}

/** Whether the ssh command is OpenSSH's client (takes `-o Option=value`), not plink or a wrapper script. */
export function isOpenSsh(sshCmd: string): boolean {
  const first = /^\s*(?:"([^"]*)"|'([^']*)'|(\S+))/.exec(sshCmd);
  const prog = (first?.[1] ?? first?.[2] ?? first?.[3] ?? '').replace(/\\/g, '/').split('/').pop() ?? '';
  return /^ssh(\.exe)?$/i.test(prog);
}

export interface SshSettings {
  /** a shell command line (hg's ui.ssh), default `ssh` */
  sshCommand?: string;
  /** the remote hg (or sluice) command, default `hg` */
  remoteCommand?: string;
}

/**
 * The ssh and remote commands: explicit options, then SLUICE_SSH (ssh only), then the local
 * repository's [ui] (a pull), then the user's; `ssh` and `hg` by default.
 */
export async function resolveSshSettings(
  explicit: SshSettings,
  opts: { repo?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<Required<SshSettings>> {
  const env = opts.env ?? process.env;
  const user = readUserConfig(env);
  // a shell command: only from a repository hgrc the user owns (hg ignores untrusted files)
  const repo = opts.repo ? await readRepoConfig(opts.repo, { trustedOnly: true }).catch(() => null) : null;
  const pick = (key: string): string | undefined => repo?.get('ui', key) ?? user.get('ui', key);
  return {
    sshCommand: explicit.sshCommand || env.SLUICE_SSH || pick('ssh') || 'ssh',
    remoteCommand: explicit.remoteCommand || pick('remotecmd') || 'hg',
  };
}
