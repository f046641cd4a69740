// `sluice -R REPO serve --stdio`: the ssh transport of the server, what hg runs on the far side
// of an ssh:// URL (wireprotoserver._runsshserver, sshv1protocolhandler). Commands arrive on
// stdin as `name\n` and `key <len>\n<value>` arguments (the names the command table declares;
// `*` introduces `<count>` more pairs); replies go to stdout as `<len>\n<bytes>`, or raw for
// streams; out-of-band errors go to stderr (the client shows them as `remote: ...`) with an
// empty line on stdout. An empty line or the end of stdin ends the session.
//
// The commands are the HTTP server's (commands.ts), on the same repository view. hgweb's access
// settings ([web] allow-pull, deny_read, allow_read) are for HTTP: over ssh the login is the
// access control, as in hg. The [server] and [phases] settings apply as over HTTP, and so do the
// bounds on what a client may make the server hold (server-limits.ts): what one command may ask
// for, its arguments' size, and the idle timeout (a session that says nothing, a command trickled
// a byte at a time, a reply nobody reads or read too slowly end with TIMEOUT; hg's ssh server
// waits forever).

import type { Readable, Writable } from 'node:stream';
import { SluiceError, cancelled, toSluiceError } from '../../errors';
import { commandArgs } from '../../protocol/command-args';
import { BadRequest, dispatchCommand, wireCommand, type CommandEnv } from './commands';
import { PipeReader } from '../../protocol/pipe-reader';
import { ServedRepo, type SettingsOverrides } from './repo-state';
import { ServedCloneBundles } from './served-clone-bundles';
import {
  REQUEST_ARGS_COUNT_MAX,
  REQUEST_ARGS_MAX,
  REQUEST_LINE_MAX,
  SERVER_IDLE_TIMEOUT_MS,
  SSH_SESSION_IDLE_MS,
} from './server-limits';
import { ReaderFloor } from '../../protocol/throughput-floor';
import { latin1 } from '../../protocol/wire-encoding';

/** sshv1protocolhandler.addcapabilities */
const SSH_CAPS = ['protocaps', 'batch'];

export interface StdioServerOptions extends SettingsOverrides {
  repo: string;
  input: Readable;
  output: Writable;
  /** out-of-band errors and aborts */
  errors: Writable;
  signal?: AbortSignal;
  /** bundle2 payload chunk size (default 32768) */
  chunkSize?: number;
  /**
   * a command must arrive whole (line and arguments) within this long of its first byte, and a
   * reply must be read (something within it, and at the pace of throughput-floor.ts's
   * ReaderFloor), else the session ends with TIMEOUT (default
   * SERVER_IDLE_TIMEOUT_MS; 0: never, for the in-process local peer whose client is Sluice)
   */
  idleTimeoutMs?: number;
  /** no command started for this long ends the session with TIMEOUT (default SSH_SESSION_IDLE_MS; 0: never) */
  sessionIdleTimeoutMs?: number;
}

/**
 * Writes to `out` with backpressure; a client that reads nothing for `idleMs`, or reads too slowly
 * (throughput-floor.ts: ReaderFloor), is a TIMEOUT; 0: wait forever.
 */
function writerTo(out: Writable, idleMs: number): (data: Uint8Array | string) => Promise<void> {
  const floor = new ReaderFloor(out, idleMs);
  let written = 0;
  return async (data) => {
    written += typeof data === 'string' ? Buffer.byteLength(data) : data.length;
    if (out.write(data)) return;
    await floor.drained(written);
    if (out.destroyed) throw new SluiceError('CANCELLED', 'the client went away');
  };
}

/** sshv1protocolhandler.getargs: one `key <len>` line per declared name, values by name. */
async function readArgs(reader: PipeReader, spec: string): Promise<Map<string, string>> {
  const keys = spec.split(' ').filter(Boolean);
  const args = new Map<string, string>();
  let total = 0; // `* 1000` pairs of 16 MiB each would otherwise be 16 GB held for one command
  const header = async (): Promise<[string, number]> => {
    const line = latin1(await reader.readLine(REQUEST_LINE_MAX));
    const m = /^(\S+) ([0-9]{1,12})\n$/.exec(line);
    if (!m) throw new BadRequest(`malformed argument line ${JSON.stringify(line.slice(0, 80))}`);
    const n = Number(m[2]);
    if (n > REQUEST_ARGS_MAX) throw new BadRequest(`argument ${m[1]} larger than ${REQUEST_ARGS_MAX} bytes`);
    return [m[1]!, n];
  };
  const value = async (n: number): Promise<string> => {
    total += n;
    if (total > REQUEST_ARGS_MAX)
      throw new BadRequest(`arguments larger than ${REQUEST_ARGS_MAX} bytes in all`);
    return latin1(await reader.readExact(n));
  };
  for (let i = 0; i < keys.length; i++) {
    const [name, n] = await header();
    if (!keys.includes(name)) throw new BadRequest(`unexpected parameter ${JSON.stringify(name)}`);
    if (name === '*') {
      if (n > REQUEST_ARGS_COUNT_MAX)
        throw new BadRequest(`too many arguments (${n}; at most ${REQUEST_ARGS_COUNT_MAX})`);
      for (let k = 0; k < n; k++) {
        const [key, len] = await header();
        args.set(key, await value(len));
      }
    } else {
      args.set(name, await value(n));
    }
  }
  return args;
}

/** Serves one ssh session until the client ends it. An abort ends it with `abort: ...` on stderr. */
export async function serveStdio(opts: StdioServerOptions): Promise<void> {
  const { input, output, errors } = opts;
  const repo = new ServedRepo(opts.repo, {
    ...(opts.uncompressed !== undefined ? { uncompressed: opts.uncompressed } : {}),
    ...(opts.bundle2Stream !== undefined ? { bundle2Stream: opts.bundle2Stream } : {}),
    ...(opts.preferUncompressed !== undefined ? { preferUncompressed: opts.preferUncompressed } : {}),
    ...(opts.publishing !== undefined ? { publishing: opts.publishing } : {}),
  });
  await repo.snapshot(); // hg: `abort: repository X not found` before any reply
  // clone bundle files served by `sluice serve` need its HTTP routes; over ssh only a manifest
  const env: CommandEnv = {
    chunkSize: opts.chunkSize ?? 32768,
    cloneBundles: await ServedCloneBundles.create(opts.repo),
  };
  const reader = new PipeReader(input, {
    onEnd: () => new SluiceError('TRUNCATED', 'the client closed the session mid-request'),
  });
  const gone = new AbortController();
  // a session waiting for the client's next command ends too, not when the client next writes
  const stop = (): void => {
    gone.abort();
    reader.fail(cancelled());
  };
  if (opts.signal?.aborted) stop();
  opts.signal?.addEventListener('abort', stop, { once: true });
  output.once('close', stop);
  const idleMs = opts.idleTimeoutMs ?? SERVER_IDLE_TIMEOUT_MS;
  const write = writerTo(output, idleMs);
  const writeError = writerTo(errors, idleMs);
  const sessionMs = opts.sessionIdleTimeoutMs ?? SSH_SESSION_IDLE_MS;
  /** `read` within `ms` (0: no bound), else the reader fails with TIMEOUT worded by `why` */
  const within = async <T>(ms: number, why: string, read: () => Promise<T>): Promise<T> => {
    if (ms <= 0) return read();
    const timer = setTimeout(() => reader.fail(new SluiceError('TIMEOUT', `${why} in ${ms} ms`)), ms);
    try {
      return await read();
    } finally {
      clearTimeout(timer);
    }
  };
  try {
    for (;;) {
      // a silent session ends after sessionMs; a started command (a trickle) must end within idleMs
      await within(sessionMs, 'no command from the client', () => reader.ready());
      const req = await within(idleMs, 'no complete command from the client', async () => {
        const line = latin1(await reader.readLine(REQUEST_LINE_MAX));
        const name = line.endsWith('\n') ? line.slice(0, -1) : line;
        if (!name) return null; // an empty line or the end of stdin: shutdown
        const cmd = wireCommand(name);
        // commandavailable() false: an empty reply, the arguments (if any) are not read
        return { name, cmd, args: cmd ? await readArgs(reader, commandArgs(name)!) : null };
      });
      if (!req) return;
      const { name, cmd, args } = req;
      if (!cmd || !args) {
        await write('0\n');
        continue;
      }
      const rsp = await dispatchCommand(env, name, {
        snap: await repo.snapshot(),
        args,
        signal: gone.signal,
        transportCaps: SSH_CAPS,
      });
      switch (rsp!.type) {
        case 'bytes':
          await write(Buffer.concat([Buffer.from(`${rsp!.data.length}\n`, 'latin1'), rsp!.data]));
          break;
        case 'error':
          // _sshv1respondooberror
          await writeError(`${rsp!.message.replace(/\n$/, '')}\n-\n`);
          await write('\n');
          break;
        case 'stream':
        case 'stream-legacy':
          for await (const chunk of rsp!.body) {
            if (gone.signal.aborted) return;
            await write(chunk);
          }
          break;
      }
    }
  } catch (e) {
    if (gone.signal.aborted) return;
    const err = e instanceof BadRequest ? new SluiceError('PROTOCOL', e.message) : toSluiceError(e);
    throw err;
  } finally {
    opts.signal?.removeEventListener('abort', stop);
    output.off('close', stop);
  }
}
