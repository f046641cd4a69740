// The client side of hg's ssh protocol v1 (sshpeer.py): run ssh with `<remotecmd> -R <path>
// serve --stdio` on the other end, the hello + between handshake (login-banner lines before the
// reply are skipped, as hg does), commands as `name\n` + `key <len>\n<value>` arguments (the
// argument names are the command table's, wireprotov1server's), framed replies `<len>\n<bytes>`
// for plain commands and batch, raw streams for getbundle and stream_out, and the remote's
// stderr shown as `remote: ...` lines (the first SHOWN_STDERR).
//
// Credentials stay with ssh (keys, agent, its own prompts): Sluice never sees a password. Without
// a terminal (the app) ssh runs in a session of its own with BatchMode=yes, so it fails at once
// instead of waiting for a prompt nobody can answer. What ssh says when it fails (host key,
// refused login, no such remote command) becomes a typed error in plain words.

import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { SluiceError, cancelled } from '../errors';
import { Capabilities } from '../protocol/capabilities';
import { commandArgs } from '../protocol/command-args';
import { PipeReader } from '../protocol/pipe-reader';
import { WirePeer, type PeerResponse } from './peer';
import { byteCompare, latin1 } from '../protocol/wire-encoding';
import { isOpenSsh, parseSshUrl, sshCommandLine } from './ssh-command';

const SMALL_RESPONSE_LIMIT = 64 << 20;
/** sshpeer._performhandshake: lines of banner noise accepted before the handshake reply */
const MAX_NOISE = 500;
const LINE_LIMIT = 64 * 1024;
const STREAM_PIECE = 1 << 20;
/**
 * the handshake's bound (hg has none): ssh's login (a passphrase typed at a terminal included) and
 * the remote hg starting and answering hello. Generous for a slow login (a server's reverse DNS
 * lookup, a jump host, a cold Python on a loaded machine); a silent or prompting remote (a
 * password asked on stdout, a command that never starts hg) ends in TIMEOUT instead of waiting
 * forever.
 */
export const DEFAULT_HANDSHAKE_TIMEOUT = 60_000;
/** after stdin is closed (or SIGTERM sent), how long the other side is given to exit */
const EXIT_GRACE = 1000;
const DEFAULT_IDLE_TIMEOUT = 60_000;
/** stderr lines kept to explain a failure */
const KEPT_STDERR = 40;
/**
 * stderr lines shown as `remote: ...` (hg shows them all; a remote flooding stderr would make
 * millions of log events, each an IPC message in the app): the rest are counted, not shown
 */
const SHOWN_STDERR = 1000;

/** How the other side ended. `ours`: by a signal Sluice sent (cancel, a timeout, close), not on its own. */
export interface ChannelExit {
  code: number | null;
  signal: string | null;
  ours?: boolean;
}

/**
 * What the peer talks to: the server's stdin, stdout and stderr and its life. ssh's child process
 * (connect), or serveStdio on a local repository in this process (local-peer.ts, hg's localpeer).
 */
export interface PeerChannel {
  stdin: Writable;
  stdout: Readable;
  stderr: Readable;
  /** the process ended (its pipes may stay open a while longer: a child of it holding them) */
  exited: Promise<ChannelExit>;
  /** ends the other side now (cancel, or it did not exit after stdin closed); SIGTERM by default */
  kill(signal?: 'SIGTERM' | 'SIGKILL'): void;
  /** why the other side stopped, when it knows better than its stderr */
  failure?(): SluiceError | undefined;
}

/**
 * ssh's child as a channel (detached: its own session and process group, so a kill ends the
 * whole group, what the ssh command started included; otherwise the child's own pid only).
 */
function childChannel(child: ChildProcess, detached: boolean): PeerChannel {
  let signalled = false;
  return {
    stdin: child.stdin!,
    stdout: child.stdout!,
    stderr: child.stderr!,
    // 'exit', not 'close': a process the remote command left behind may hold stderr open long
    // after the command itself ended (its exit status is what explains a failure)
    exited: new Promise((resolve) => {
      const done = (code: number | null, signal: string | null): void =>
        resolve({ code, signal, ours: signal !== null && signalled });
      child.once('exit', done);
      child.once('close', done);
    }),
    kill(signal = 'SIGTERM') {
      if (child.pid === undefined) return;
      const running = child.exitCode === null && child.signalCode === null;
      // the group outlives its leader while a member is alive, and its id is not reused until
      // then: what is left in it is still this connection's
      if (!running && !detached) return;
      if (running) signalled = true;
      try {
        if (detached) process.kill(-child.pid, signal);
        else child.kill(signal);
      } catch {
        /* already gone */
      }
    },
  };
}

export interface SshPeerOptions {
  /** a shell command line, as hg's [ui] ssh (default `ssh`) */
  sshCommand?: string;
  /** the command run on the remote (default `hg`) */
  remoteCommand?: string;
  /**
   * ssh may prompt on the terminal (a passphrase, an unknown host key), as under hg. Otherwise ssh
   * gets no terminal and BatchMode=yes, so it fails at once instead of prompting.
   */
  interactive?: boolean;
  signal?: AbortSignal;
  /**
   * the handshake (ssh's login, prompts answered at a terminal included, and the remote's hello)
   * must be done within this (default DEFAULT_HANDSHAKE_TIMEOUT, 60 s; 0: no bound, as hg)
   */
  connectTimeoutMs?: number;
  /** no byte from the remote for this long while one is awaited: TIMEOUT (default 60 s) */
  idleTimeoutMs?: number;
  log?: (level: 'debug' | 'info' | 'warn', message: string) => void;
  env?: NodeJS.ProcessEnv;
}

/** What ssh or the remote shell said, in words a user understands. */
export function explainSshFailure(
  lines: readonly string[],
  /** null: still running (its output closed) */
  exit: ChannelExit | null,
  what: { host: string; remoteCommand: string; sshCommand: string },
): SluiceError {
  const text = lines.join('\n');
  const tail = lines.slice(-6).join('\n');
  const details = { exitCode: exit?.code ?? null, stderr: tail };
  if (
    /Host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED|host key for .* has changed/i.test(
      text,
    )
  ) {
    return new SluiceError(
      'SSH_HOST_KEY',
      `the host key of ${what.host} could not be verified (it is unknown or it changed): ssh refused to connect. ` +
        `Check the key, then accept it once by running ssh ${what.host} in a terminal (or add it to known_hosts).`,
      details,
    );
  }
  if (/Permission denied \(|Too many authentication failures|no more authentication methods/i.test(text)) {
    return new SluiceError(
      'AUTH',
      `ssh could not log in to ${what.host} (${lastMatching(lines, /Permission denied|authentication/i)}). ` +
        'Sluice never asks for ssh passwords: use a key (load it into ssh-agent) or set the ssh command (--ssh, [ui] ssh).',
      details,
    );
  }
  const remoteProg = firstWord(what.remoteCommand);
  const sshProg = firstWord(what.sshCommand);
  const notFound = lines.find((l) => /command not found|: not found|No such file or directory/i.test(l));
  if (notFound && notFound.includes(remoteProg) && (exit?.code === 127 || /not found/i.test(notFound))) {
    return new SluiceError(
      'SSH_REMOTE_COMMAND',
      `'${remoteProg}' was not found on ${what.host} (${notFound.trim()}). Install Mercurial there, or give the remote command's full path with --remotecmd (or [ui] remotecmd).`,
      details,
    );
  }
  if (notFound && notFound.includes(sshProg)) {
    return new SluiceError(
      'SSH_FAILED',
      `the ssh command '${sshProg}' was not found on this computer: install OpenSSH or set the ssh command (--ssh, SLUICE_SSH, [ui] ssh)`,
      details,
    );
  }
  const net = lastMatching(
    lines,
    /Could not resolve hostname|Connection refused|Connection timed out|No route to host|Network is unreachable|Connection closed by|Connection reset|kex_exchange_identification|Operation timed out/i,
  );
  if (net) return new SluiceError('NETWORK', `ssh could not connect to ${what.host}: ${net}`, details);
  const repo = lastMatching(lines, /abort: .*(not found|no repository)/i);
  if (repo) return new SluiceError('NOT_A_REPO', `remote: ${repo}`, details);
  return new SluiceError(
    'PROTOCOL',
    `no suitable response from remote hg on ${what.host} (${exitWords(exit)})${tail ? `:\n${tail}` : ''}`,
    details,
  );
}

/**
 * How ssh ended: its own exit status or signal (for ssh, the remote command's status, or 255 when
 * ssh itself failed), or that it was still running: a signal Sluice sent is not the remote's doing.
 */
function exitWords(exit: ChannelExit | null): string {
  if (exit === null) return 'ssh closed its output but was still running';
  if (exit.ours) return 'ssh was still running: Sluice ended it';
  if (exit.signal) return `ssh killed by ${exit.signal}`;
  return exit.code !== null ? `ssh exit status ${exit.code}` : 'ssh gave no exit status';
}

/** `p`'s value, or null when it takes longer than `ms`. */
function within<T>(p: Promise<T>, ms: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<null>((r) => (timer = setTimeout(() => r(null), ms))),
  ]);
}

/** A remote's words for a message: bounded, control characters escaped. */
function quoted(s: string): string {
  const t = s.trim();
  return JSON.stringify(t.length > 120 ? `${t.slice(0, 120)}…` : t);
}

function lastMatching(lines: readonly string[], re: RegExp): string {
  for (let i = lines.length - 1; i >= 0; i--) if (re.test(lines[i]!)) return lines[i]!.trim();
  return '';
}

function firstWord(cmd: string): string {
  const m = /^\s*(?:"([^"]*)"|'([^']*)'|(\S+))/.exec(cmd);
  return (m?.[1] ?? m?.[2] ?? m?.[3] ?? cmd).replace(/\\/g, '/').split('/').pop() ?? cmd;
}

/** `n` bytes of the pipe as a stream. */
async function* exactly(
  reader: PipeReader,
  n: number,
  live: () => boolean,
  end: () => Promise<SluiceError>,
): AsyncGenerator<Uint8Array> {
  while (n > 0) {
    const b = await reader.readSome(Math.min(n, STREAM_PIECE), live);
    if (!b) {
      if (!live()) return;
      throw await end();
    }
    n -= b.length;
    yield b;
  }
}

/**
 * A stream_out reply, delimited as streamclone.consumev1 reads it: the status line, and when it
 * is 0, the counts line and that many `name\0size\n` + size bytes entries. Malformed lines end
 * the reply there; the stream reader reports them.
 */
async function* streamOutReply(
  reader: PipeReader,
  live: () => boolean,
  end: () => Promise<SluiceError>,
): AsyncGenerator<Uint8Array> {
  const line = async (): Promise<Buffer> => {
    const l = await reader.readLine(LINE_LIMIT);
    if (!l.length) throw await end();
    return l;
  };
  const status = await line();
  yield status;
  if (latin1(status).trim() !== '0') return;
  const counts = await line();
  yield counts;
  const m = /^([0-9]+) ([0-9]+)\n$/.exec(latin1(counts));
  if (!m) return;
  for (let files = Number(m[1]); files > 0 && live(); files--) {
    const head = await line();
    yield head;
    const size = /\0([0-9]{1,15})\n$/.exec(latin1(head));
    if (!size) return;
    yield* exactly(reader, Number(size[1]), live, end);
  }
}

export class SshPeer extends WirePeer {
  private commands = 0;
  /** bumped by every command: a stream body of an earlier reply stops reading */
  private generation = 0;
  private closed = false;
  private exited: Promise<ChannelExit>;
  private stderrLines: string[] = [];
  private stderrSeen = 0;
  /** stderr's unfinished last line */
  private stderrPartial = '';
  /** stderr ended: nothing holds its pipe any more */
  private stderrDone: Promise<void>;
  /** the hello/between handshake succeeded: a later end is a reply cut short */
  private handshaken = false;
  private readonly reader: PipeReader;
  private onAbort: (() => void) | null = null;
  caps: Capabilities = new Capabilities('');

  private constructor(
    readonly url: string,
    /** the host, or the local repository's path, for messages */
    private readonly host: string,
    private readonly channel: PeerChannel,
    private readonly settings: { sshCommand: string; remoteCommand: string },
    private readonly opts: SshPeerOptions,
  ) {
    super();
    this.exited = channel.exited;
    this.reader = new PipeReader(channel.stdout, {
      describeStall: (ms) =>
        settings.sshCommand
          ? `the server stopped sending data for ${ms} ms (ssh to ${host})`
          : `the local repository ${host} stopped sending data for ${ms} ms`,
      onEnd: () => this.endError(),
    });
    channel.stderr.setEncoding('latin1');
    channel.stderr.on('data', (s: string) => {
      this.stderrPartial += s;
      let nl: number;
      while ((nl = this.stderrPartial.indexOf('\n')) >= 0) {
        this.stderrLine(this.stderrPartial.slice(0, nl));
        this.stderrPartial = this.stderrPartial.slice(nl + 1);
      }
      if (this.stderrPartial.length > LINE_LIMIT) {
        this.stderrLine(this.stderrPartial);
        this.stderrPartial = '';
      }
    });
    this.stderrDone = new Promise((resolve) => {
      channel.stderr.once('close', () => resolve());
      channel.stderr.once('end', () => {
        if (this.stderrPartial) this.stderrLine(this.stderrPartial);
        this.stderrPartial = '';
        resolve();
      });
    });
    // a write after the remote went away: the read side reports why
    channel.stdin.on('error', () => {});
  }

  private stderrLine(raw: string): void {
    const line = raw.replace(/\r$/, '').slice(0, 4096);
    this.stderrLines.push(line);
    this.stderrSeen++;
    if (this.stderrLines.length > KEPT_STDERR) this.stderrLines.shift();
    if (this.stderrSeen <= SHOWN_STDERR) this.opts.log?.('info', `remote: ${line}`);
    else if (this.stderrSeen === SHOWN_STDERR + 1)
      this.opts.log?.('info', `remote: (more output from the remote not shown)`);
  }

  get requests(): number {
    return this.commands;
  }

  /**
   * Why the remote stopped answering (its output ended): its own exit status and what ssh or the
   * shell printed last, or that it closed its output and kept running.
   */
  private async endError(): Promise<SluiceError> {
    if (this.opts.signal?.aborted) return cancelled();
    const known = this.channel.failure?.();
    if (known) return known;
    // an exit normally follows the end of its output at once; its last stderr lines may still
    // be on their way
    const exit = await within(this.exited, 2000);
    if (exit) await within(this.stderrDone, 500);
    const e = explainSshFailure(this.stderrLines, exit, { host: this.host, ...this.settings });
    // after the handshake, an end nothing else explains is a reply cut short, not a remote that
    // is not hg (hg: "stream ended unexpectedly")
    if (e.code !== 'PROTOCOL' || !this.handshaken) return e;
    const tail = String(e.details?.stderr ?? '');
    return new SluiceError(
      'TRUNCATED',
      `the connection to ${this.host} ended in the middle of a reply (${exitWords(exit)})${tail ? `:\n${tail}` : ''}`,
      e.details,
    );
  }

  /**
   * The handshake's TIMEOUT: no hg answered. What the remote printed last (a `Password:` prompt
   * with no newline, a banner) says why better than the clock.
   */
  private noAnswer(ms: number, banner: readonly string[]): SluiceError {
    const said = [
      latin1(this.reader.peek(256)),
      banner.length > 2 ? banner[banner.length - 1]! : '',
      this.stderrPartial,
      this.stderrLines[this.stderrLines.length - 1] ?? '',
    ].filter((x) => x.trim());
    const time = ms < 1000 ? `${ms} ms` : `${Math.round(ms / 1000)} s`;
    return new SluiceError(
      'TIMEOUT',
      `no Mercurial server answered on ${this.host} within ${time}` +
        (said.length ? ` (the remote's last output: ${said.map(quoted).join(', ')})` : '') +
        ': ssh or the remote is waiting for something (a password or passphrase, a host key question, a command that does not start hg) or the host does not answer. ' +
        'Sluice ended ssh; for a slow host, raise the connect timeout.',
      { timeoutMs: ms },
    );
  }

  /** sshpeer.instance + makepeer: spawn ssh, then the handshake. */
  static async connect(url: string, opts: SshPeerOptions = {}): Promise<SshPeer> {
    const target = parseSshUrl(url);
    if (opts.signal?.aborted) throw cancelled();
    const sshCommand = opts.sshCommand || 'ssh';
    const remoteCommand = opts.remoteCommand || 'hg';
    const interactive = opts.interactive === true;
    const extra = !interactive && isOpenSsh(sshCommand) ? ['-o', 'BatchMode=yes'] : [];
    const line = sshCommandLine(sshCommand, target, remoteCommand, extra);
    opts.log?.('debug', `running ${line}`);
    const win = process.platform === 'win32';
    // `exec`: the pid is ssh's own, so cancel reaches it; without a terminal, a session of its own
    // (no controlling tty: ssh cannot stall on a prompt) whose whole group cancel ends
    const detached = !win && !interactive;
    const child = win
      ? spawn(line, {
          shell: true,
          stdio: ['pipe', 'pipe', 'pipe'],
          env: opts.env ?? process.env,
          windowsHide: true,
        })
      : spawn('/bin/sh', ['-c', `exec ${line}`], {
          stdio: ['pipe', 'pipe', 'pipe'],
          env: opts.env ?? process.env,
          detached,
        });
    const peer = new SshPeer(
      url,
      target.host,
      childChannel(child, detached),
      { sshCommand, remoteCommand },
      opts,
    );
    child.once('error', (e) =>
      peer.reader.fail(
        new SluiceError('SSH_FAILED', `cannot run the ssh command '${sshCommand}': ${e.message}`),
      ),
    );
    return peer.start();
  }

  /**
   * The protocol over a channel that is already open (a local repository served in process):
   * `label` names it in messages.
   */
  static overChannel(
    url: string,
    label: string,
    channel: PeerChannel,
    opts: SshPeerOptions = {},
  ): Promise<SshPeer> {
    if (opts.signal?.aborted) {
      channel.kill();
      throw cancelled();
    }
    return new SshPeer(url, label, channel, { sshCommand: '', remoteCommand: '' }, opts).start();
  }

  private async start(): Promise<SshPeer> {
    const opts = this.opts;
    if (opts.signal) {
      const onAbort = (): void => {
        this.reader.fail(cancelled());
        this.kill();
      };
      this.onAbort = onAbort;
      opts.signal.addEventListener('abort', onAbort, { once: true });
    }
    try {
      // with a terminal too: ssh's prompts are answered within it, or the user is gone
      await this.handshake(opts.connectTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT);
      this.handshaken = true;
    } catch (e) {
      await this.close();
      throw e;
    }
    this.reader.idleTimeoutMs = opts.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT;
    return this;
  }

  /** sshpeer._performhandshake (protocol v1 only: Sluice sends no `upgrade`). */
  private async handshake(timeoutMs: number): Promise<void> {
    const pairs = `${'0'.repeat(40)}-${'0'.repeat(40)}`;
    this.write(`hello\nbetween\npairs ${pairs.length}\n${pairs}`);
    this.opts.log?.('debug', 'sending hello command');
    this.opts.log?.('debug', 'sending between command');
    const lines: string[] = ['', 'dummy'];
    const timer =
      timeoutMs > 0
        ? setTimeout(() => {
            this.reader.fail(this.noAnswer(timeoutMs, lines));
            this.kill();
          }, timeoutMs)
        : undefined;
    try {
      let noise = MAX_NOISE;
      for (;;) {
        if (noise-- <= 0) throw await this.badResponse();
        const l = latin1(await this.reader.readLine(LINE_LIMIT));
        if (!l) {
          clearTimeout(timer); // its output ended: what it does next explains it, not the clock
          throw await this.endError();
        }
        if (lines[lines.length - 1] === '1\n' && l === '\n') break;
        lines.push(l);
        if (lines.length > 3) this.opts.log?.('debug', `remote: ${l.replace(/\n$/, '')}`);
      }
    } finally {
      clearTimeout(timer);
    }
    for (let i = lines.length - 1; i >= 0; i--) {
      const l = lines[i]!;
      if (l.startsWith('capabilities:')) {
        this.caps = new Capabilities(l.slice(0, -1).slice('capabilities:'.length).trim());
        break;
      }
    }
    if (!this.caps.names().length) throw await this.badResponse();
  }

  private async badResponse(): Promise<SluiceError> {
    const e = explainSshFailure(
      this.stderrLines,
      { code: null, signal: null },
      { host: this.host, ...this.settings },
    );
    return e.code === 'PROTOCOL'
      ? new SluiceError('PROTOCOL', `no suitable response from remote hg on ${this.host}`, e.details)
      : e;
  }

  private write(s: string | Buffer): void {
    if (this.closed || this.channel.stdin.destroyed) return;
    this.channel.stdin.write(typeof s === 'string' ? Buffer.from(s, 'latin1') : s);
  }

  /** sshv1peer._sendrequest: the command line, then its arguments as the command table declares them. */
  private send(cmd: string, args: Record<string, string>): void {
    if (this.closed) throw new SluiceError('PROTOCOL', 'the ssh connection is closed');
    if (this.reader.failed) throw this.reader.failed;
    const spec = commandArgs(cmd);
    if (spec === undefined) throw new SluiceError('PROTOCOL', `Sluice does not know the arguments of ${cmd}`);
    this.generation++;
    this.commands++;
    this.reader.newReply();
    this.opts.log?.('debug', `sending ${cmd} command`);
    const rest = new Map(Object.entries(args));
    const wire: [string, string | Map<string, string>][] = [];
    for (const k of spec.split(' ').filter(Boolean)) {
      if (k === '*') {
        wire.push(['*', new Map(rest)]);
        rest.clear();
        break;
      }
      const v = rest.get(k);
      if (v === undefined) throw new SluiceError('PROTOCOL', `${cmd} needs the argument ${k}`);
      wire.push([k, v]);
      rest.delete(k);
    }
    if (rest.size)
      throw new SluiceError('PROTOCOL', `${cmd} takes no argument ${[...rest.keys()].join(', ')}`);
    const out: Buffer[] = [Buffer.from(`${cmd}\n`, 'latin1')];
    const arg = (k: string, v: string): void => {
      const b = Buffer.from(v, 'latin1');
      out.push(Buffer.from(`${k} ${b.length}\n`, 'latin1'), b);
    };
    for (const [k, v] of wire.sort((a, b) => byteCompare(a[0], b[0]))) {
      if (typeof v === 'string') arg(k, v);
      else {
        out.push(Buffer.from(`* ${v.size}\n`, 'latin1'));
        for (const [dk, dv] of v) arg(dk, dv);
      }
    }
    this.write(Buffer.concat(out));
  }

  /** sshv1peer._getamount: `<len>\n`; an empty line is an out-of-band error (text on stderr). */
  private async amount(): Promise<number> {
    const l = latin1(await this.reader.readLine(32));
    if (l === '\n') {
      const seen = this.stderrSeen;
      // the error text travels on stderr, a separate pipe: give it a moment to arrive
      for (let i = 0; i < 20 && this.stderrSeen === seen; i++) await new Promise((r) => setTimeout(r, 10));
      // _sshv1respondooberror: the message, then a `-` line
      const text = this.stderrLines
        .slice(-Math.min(this.stderrSeen - seen, KEPT_STDERR))
        .filter((x) => x !== '-')
        .join('\n');
      throw new SluiceError('REMOTE_ABORT', `remote error: ${text.trim() || 'check previous remote output'}`);
    }
    if (!l) throw await this.endError();
    if (!/^[0-9]{1,12}\n$/.test(l))
      throw new SluiceError('PROTOCOL', `unexpected response from remote: ${JSON.stringify(l.slice(0, 80))}`);
    const n = Number(l.slice(0, -1));
    if (n > SMALL_RESPONSE_LIMIT)
      throw new SluiceError('LIMIT', `response larger than ${SMALL_RESPONSE_LIMIT} bytes`);
    return n;
  }

  /** _call: a framed reply read whole. */
  override async call(cmd: string, args: Record<string, string> = {}): Promise<string> {
    this.send(cmd, args);
    return latin1(await this.reader.readExact(await this.amount()));
  }

  /**
   * _callstream: batch is framed; getbundle and stream_out are raw on stdout. A raw reply has no
   * end of its own on the pipe: stream_out's is found from its own counts (so its reader sees EOF
   * as over HTTP), a bundle2 reply ends where its reader stops.
   */
  async callStream(cmd: string, args: Record<string, string> = {}): Promise<PeerResponse> {
    this.send(cmd, args);
    const gen = this.generation;
    const reader = this.reader;
    const live = (): boolean => gen === this.generation && !this.closed;
    const end = (): Promise<SluiceError> => this.endError();
    let body: AsyncIterable<Uint8Array>;
    if (cmd === 'batch') {
      body = exactly(reader, await this.amount(), live, end);
    } else if (cmd === 'stream_out') {
      body = streamOutReply(reader, live, end);
    } else {
      body = (async function* () {
        for (;;) {
          const b = await reader.readSome(STREAM_PIECE, live);
          if (!b) {
            if (!live()) return;
            throw await end();
          }
          yield b;
        }
      })();
    }
    return {
      mediaType: 'ssh',
      engine: 'none',
      body,
      // the unread rest of a raw stream cannot be skipped: the connection is done
      discard: () => void this.close(),
    };
  }

  private kill(signal?: 'SIGTERM' | 'SIGKILL'): void {
    this.channel.kill(signal);
  }

  /**
   * sshpeer._cleanuppipes: close stdin (the server's read loop ends), wait a little, then SIGTERM,
   * then SIGKILL (an ssh command that ignores SIGTERM is not left running).
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.onAbort) this.opts.signal?.removeEventListener('abort', this.onAbort);
    this.channel.stdin.end();
    if (!(await within(this.exited, EXIT_GRACE))) {
      this.kill();
      if (!(await within(this.exited, EXIT_GRACE))) {
        this.kill('SIGKILL');
        await within(this.exited, EXIT_GRACE);
      }
    }
    // stderr still open after the exit: something the ssh command started holds it (in its
    // process group when detached: ended with it)
    if ((await within(this.stderrDone, 200)) === null) this.kill();
    this.channel.stdout.destroy();
    this.channel.stderr.destroy();
  }
}
