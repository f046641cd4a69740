// `sluice -R REPO serve --stdio`: the ssh transport of the server, what hg runs on the far side
// of an ssh:// URL (wireprotoserver._runsshserver, sshv1protocolhandler). Commands arrive on
// stdin as `name\n` and `key <len>\n<value>` arguments (the names the command table declares;
// `*` introduces `<count>` more pairs); replies go to stdout as `<len>\n<bytes>`, or raw for
// streams; out-of-band errors go to stderr (the client shows them as `remote: ...`) with an
// empty line on stdout. An empty line or the end of stdin ends the session.
//
// The commands are the HTTP server's (commands.ts), on the same repository view. hgweb's access
// settings ([web] allow-pull, deny_read, allow_read) are for HTTP: over ssh the login is the
// access control, as in hg. The [server] and [phases] settings apply as over HTTP.

import type { Readable, Writable } from 'node:stream';
import { SluiceError, toSluiceError } from '../errors';
import { BadRequest, dispatchCommand, wireCommand, type CommandEnv } from './commands';
import { PipeReader } from './pipe-reader';
import { ServedRepo, type SettingsOverrides } from './repo-state';
import { ServedCloneBundles } from './served-clone-bundles';
import { latin1 } from './wire-encoding';

/** the longest command or argument line read (names and decimal lengths) */
const LINE_LIMIT = 4096;
/** the largest argument value, and of all of one command's values together (hg has no limit; a
 *  getbundle with 100k heads is ~4 MB) */
const ARG_LIMIT = 64 << 20;
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
}

async function write(out: Writable, data: Uint8Array | string): Promise<void> {
  if (!out.write(data)) {
    await new Promise<void>((resolve, reject) => {
      const done = (): void => {
        out.off('drain', done);
        out.off('close', closed);
        resolve();
      };
      const closed = (): void => {
        out.off('drain', done);
        reject(new SluiceError('CANCELLED', 'the client went away'));
      };
      out.on('drain', done);
      out.on('close', closed);
    });
  }
}

/** sshv1protocolhandler.getargs: one `key <len>` line per declared name, values by name. */
async function readArgs(reader: PipeReader, spec: string): Promise<Map<string, string>> {
  const keys = spec.split(' ').filter(Boolean);
  const args = new Map<string, string>();
  let total = 0; // `* 1000` pairs of 64 MiB each would otherwise be 64 GB held for one command
  const header = async (): Promise<[string, number]> => {
    const line = latin1(await reader.readLine(LINE_LIMIT));
    const m = /^(\S+) ([0-9]{1,12})\n$/.exec(line);
    if (!m) throw new BadRequest(`malformed argument line ${JSON.stringify(line.slice(0, 80))}`);
    const n = Number(m[2]);
    if (n > ARG_LIMIT) throw new BadRequest(`argument ${m[1]} larger than ${ARG_LIMIT} bytes`);
    return [m[1]!, n];
  };
  const value = async (n: number): Promise<string> => {
    total += n;
    if (total > ARG_LIMIT) throw new BadRequest(`arguments larger than ${ARG_LIMIT} bytes in all`);
    return latin1(await reader.readExact(n));
  };
  for (let i = 0; i < keys.length; i++) {
    const [name, n] = await header();
    if (!keys.includes(name)) throw new BadRequest(`unexpected parameter ${JSON.stringify(name)}`);
    if (name === '*') {
      if (n > 1000) throw new BadRequest(`too many arguments (${n})`);
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
  const stop = (): void => gone.abort();
  opts.signal?.addEventListener('abort', stop, { once: true });
  output.once('close', stop);
  try {
    for (;;) {
      const line = latin1(await reader.readLine(LINE_LIMIT));
      const name = line.endsWith('\n') ? line.slice(0, -1) : line;
      if (!name) return; // an empty line or the end of stdin: shutdown
      const cmd = wireCommand(name);
      if (!cmd) {
        // commandavailable() false: an empty reply, the arguments (if any) are not read
        await write(output, '0\n');
        continue;
      }
      const args = await readArgs(reader, cmd.args);
      const rsp = await dispatchCommand(env, name, {
        snap: await repo.snapshot(),
        args,
        signal: gone.signal,
        transportCaps: SSH_CAPS,
      });
      switch (rsp!.type) {
        case 'bytes':
          await write(output, Buffer.concat([Buffer.from(`${rsp!.data.length}\n`, 'latin1'), rsp!.data]));
          break;
        case 'error':
          // _sshv1respondooberror
          await write(errors, `${rsp!.message.replace(/\n$/, '')}\n-\n`);
          await write(output, '\n');
          break;
        case 'stream':
        case 'stream-legacy':
          for await (const chunk of rsp!.body) {
            if (gone.signal.aborted) return;
            await write(output, chunk);
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
