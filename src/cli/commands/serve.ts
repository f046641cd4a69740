// sluice serve REPO: a read-only stream-clone server of one repository over http (WIRE:
// operations/serve/http-server.ts), or `sluice -R REPO serve --stdio`, the remote end of an ssh:// URL
// (operations/serve/stdio-server.ts).
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { resolve as resolvePath } from 'node:path';
import {
  checkPublicUrl,
  startServer,
  type CloneBundleFile,
} from '../../main/engine/operations/serve/http-server';
import { serveStdio } from '../../main/engine/operations/serve/stdio-server';
import { writeAbort } from '../job-output';
import { EXIT_OK, UsageError, choice, parseCommandArgs, positiveInt, type CliCommand } from '../command';

export const command: CliCommand = {
  name: 'serve',
  summary: 'serve a repository read-only to hg and sluice: stream clones, clones and pulls',
  usage:
    'sluice serve REPO [--address 127.0.0.1] [--port N] [--v1-only] [--publishing yes|no] [--chunk-size N] [--idle-timeout S] [--clone-bundle FILE]... [--public-url URL]\n       sluice -R REPO serve --stdio [--idle-timeout S]',
  help: `Serves REPO over http with hg's wire protocol, read-only: stream clones ('hg clone --stream
URL', v2 by default, v1 with --v1-only, like hg serve --config server.bundle2.stream=false), and
regular clones and pulls ('hg clone --pull', 'hg pull', 'sluice pull': discovery and changegroups
with phases and bookmarks). Pushes get a clear error. Prints the URL, then one line per request on
stderr; Ctrl-C stops it.

With --stdio, serves one ssh session on stdin/stdout instead, as 'hg -R REPO serve --stdio' does:
this is the command an ssh:// clone runs on the server, so 'hg clone --remotecmd sluice
ssh://host/repo' (or [ui] remotecmd = sluice) clones from Sluice. [web] access settings do not
apply over ssh (the ssh login is the access control, as in hg); the others do.

  -R, --repository REPO           the repository (instead of the REPO argument); a leading ~/ is
                                  the home directory, as hg expands it
  --stdio                         serve hg's ssh protocol on stdin/stdout
  --address ADDR                  listen address (default 127.0.0.1)
  --port N                        port (default 8000; 0 = any free port)
  --v1-only                       offer only the legacy stream_out (server.bundle2.stream=false)
  --no-stream                     offer no stream clone at all (server.uncompressed=false)
  --no-stream-preferred           do not advertise stream-preferred (plain 'hg clone' then fails)
  --publishing yes|no             override the repository's phases.publish
  --chunk-size N                  bundle2 payload chunk size (default 32768; 4096 = hg before 4.5)
  --idle-timeout SECONDS          a connection with nothing read or written for this long is
                                  closed, and each request must arrive whole within it (default
                                  300); with --stdio also the session's idle time between
                                  commands (default 3600)
  --http-post-args                advertise httppostargs (arguments in POST bodies)
  --clone-bundle FILE             serve FILE (packed1 or stream v2 bundle) as a clone bundle;
                                  repeatable, advertised in manifest order
  --clone-bundles-manifest FILE   advertise this clonebundles manifest (default: the repository's
                                  .hg/clonebundles.manifest when it exists)
  --public-url URL                the URL clients reach this server at (a DNS name, a reverse
                                  proxy): the --clone-bundle files are advertised under it.
                                  Default: the address each connection came in on; never the
                                  client's Host header (a client or a cache could be handed
                                  bundle URLs on a host it chose)
  -q, --quiet                     no per-request lines
  -h, --help                      show this help`,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs(
      argv,
      {
        address: { type: 'string' },
        port: { type: 'string' },
        'v1-only': { type: 'boolean' },
        'no-stream': { type: 'boolean' },
        'no-stream-preferred': { type: 'boolean' },
        publishing: { type: 'string' },
        'chunk-size': { type: 'string' },
        'idle-timeout': { type: 'string' },
        'http-post-args': { type: 'boolean' },
        'clone-bundle': { type: 'string', multiple: true },
        'clone-bundles-manifest': { type: 'string' },
        'public-url': { type: 'string' },
        quiet: { type: 'boolean', short: 'q' },
        help: { type: 'boolean', short: 'h' },
        repository: { type: 'string', short: 'R' },
        stdio: { type: 'boolean' },
      },
      { min: 0, max: 1 },
    );
    if ((values.repository === undefined) === (positionals[0] === undefined))
      throw new UsageError(
        positionals[0] === undefined ? 'missing arguments' : 'give the repository once (REPO or -R REPO)',
      );
    // util.expandpath: hg -R '~/repo' (ssh://host/~/repo) means the home directory
    const repoPath = (values.repository ?? positionals[0]!).replace(
      /^~(?=\/|$)/,
      process.env.HOME ?? homedir(),
    );
    let port = 8000;
    if (values.port !== undefined) {
      if (!/^[0-9]+$/.test(values.port) || Number(values.port) > 65535)
        throw new UsageError(`--port must be 0-65535 (got '${values.port}')`);
      port = Number(values.port);
    }
    const publishing = choice('publishing', values.publishing, ['yes', 'no'] as const);
    const chunkSize = positiveInt('chunk-size', values['chunk-size'], 1 << 30);
    const idle = positiveInt('idle-timeout', values['idle-timeout'], 86400);
    const idleTimeoutMs = idle ? { idleTimeoutMs: idle * 1000 } : {};
    const sessionIdle = idle ? { sessionIdleTimeoutMs: idle * 1000 } : {};
    if (values.stdio) {
      if (
        values.address ||
        values.port ||
        values['clone-bundle'] ||
        values['http-post-args'] ||
        values['public-url']
      )
        throw new UsageError(
          '--stdio serves on stdin/stdout: no address, port, --clone-bundle, --public-url or --http-post-args',
        );
      try {
        await serveStdio({
          repo: repoPath,
          input: process.stdin,
          output: io.stdout,
          errors: io.stderr,
          signal: io.signal,
          ...(values['v1-only'] ? { bundle2Stream: false } : {}),
          ...(values['no-stream'] ? { uncompressed: false } : {}),
          ...(values['no-stream-preferred'] ? { preferUncompressed: false } : { preferUncompressed: true }),
          ...(publishing ? { publishing: publishing === 'yes' } : {}),
          ...(chunkSize ? { chunkSize } : {}),
          ...idleTimeoutMs,
          ...sessionIdle,
        });
      } catch (e) {
        process.stdin.destroy(); // an open stdin (a silent client) would keep the process alive
        return writeAbort(io, e);
      }
      process.stdin.destroy(); // stopped by a signal, the client may still hold stdin open
      return EXIT_OK;
    }
    let manifest: string | undefined;
    if (values['clone-bundles-manifest']) {
      try {
        manifest = readFileSync(values['clone-bundles-manifest'], 'latin1');
      } catch (e) {
        throw new UsageError(`cannot read ${values['clone-bundles-manifest']}: ${(e as Error).message}`);
      }
    }
    const files: CloneBundleFile[] = (values['clone-bundle'] ?? []).map((path) => ({ path }));
    let publicUrl: string | undefined;
    if (values['public-url'] !== undefined) {
      try {
        publicUrl = checkPublicUrl(values['public-url']);
      } catch (e) {
        throw new UsageError(`--public-url: ${(e as Error).message}`);
      }
    }
    let server;
    try {
      server = await startServer({
        repo: repoPath,
        address: values.address ?? '127.0.0.1',
        port,
        ...(values['v1-only'] ? { streamV2: false } : {}),
        ...(values['no-stream'] ? { uncompressed: false } : {}),
        ...(values['no-stream-preferred'] ? { preferUncompressed: false } : {}),
        ...(publishing ? { publishing: publishing === 'yes' } : {}),
        ...(chunkSize ? { chunkSize } : {}),
        ...idleTimeoutMs,
        ...(values['http-post-args'] ? { httpPostArgs: true } : {}),
        ...(manifest !== undefined || files.length
          ? { cloneBundles: { ...(manifest !== undefined ? { manifest } : {}), files } }
          : {}),
        ...(publicUrl ? { publicUrl } : {}),
        // auto-generate.on-change: this same CLI, run again as a child (generation never blocks serving)
        bundleRefreshCommand: [
          process.execPath,
          ...process.execArgv,
          process.argv[1]!,
          'bundles',
          'refresh',
          '-q',
          resolvePath(repoPath),
        ],
        ...(values.quiet ? {} : { log: (line: string) => io.stderr.write(line + '\n') }),
      });
    } catch (e) {
      return writeAbort(io, e);
    }
    io.stdout.write(`listening at ${server.url} (bound to ${server.address}:${server.port})\n`);
    await new Promise<void>((resolve) => {
      if (io.signal.aborted) resolve();
      else io.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    await server.close();
    return EXIT_OK;
  },
};
