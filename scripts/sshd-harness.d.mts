// Types of sshd-harness.mjs (the harness is plain JavaScript for the bench; see there).

export interface Sshd {
  host: string;
  port: number;
  user: string;
  /** the temp dir holding config, keys and the remote home */
  dir: string;
  /** the remote HOME: ssh://host/rel paths are relative to it */
  home: string;
  pid: number | undefined;
  url(path: string): string;
  /** an ssh command line (for --ssh) with the client key and the right known_hosts */
  sshCommand: string;
  sshCommandWith(knownHostsFile: string): string;
  /** a known_hosts file with another key for this host */
  wrongKnownHosts: string;
  setBanner(text: string): void;
  log(): string;
  stop(): Promise<void>;
}

export function startSshd(opts?: { timeoutMs?: number }): Promise<Sshd>;
