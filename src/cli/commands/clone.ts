// sluice clone URL DEST: a stream clone over hg's wire protocol, http(s) or ssh (WIRE: operations/clone/clone.ts).
import { createInterface } from 'node:readline';
import type { Credentials } from '../../main/engine/client/http-client';
import {
  CLOSER_HELP,
  CLOSER_OPTIONS,
  OUTPUT_HELP,
  OUTPUT_OPTIONS,
  UsageError,
  closerOptions,
  choice,
  parseCommandArgs,
  positiveInt,
  type CliCommand,
  type CliIO,
} from '../command';
import { PULL_HEAP, tuneHeapForMemory } from '../heap-tuning';
import { runJobForCli } from '../job-output';
import { withoutCredentials } from '../../shared/urls';
import { isLocalSource } from '../../main/engine/operations/local-peer';

/** hg's ui.getpass-like prompt on the terminal: user name echoed, password not. */
export async function promptCredentials(realm: string, url: string, io: CliIO): Promise<Credentials | null> {
  if (!process.stdin.isTTY || !io.stderr.isTTY) return null;
  io.stderr.write(`http authorization required for ${url}\nrealm: ${realm}\n`);
  const ask = (q: string, hidden: boolean): Promise<string> =>
    new Promise((resolve) => {
      const rl = createInterface({ input: process.stdin, output: io.stderr, terminal: true });
      if (hidden) {
        const write = (rl as unknown as { _writeToOutput: (s: string) => void })._writeToOutput;
        (rl as unknown as { _writeToOutput: (s: string) => void })._writeToOutput = (s: string) => {
          if (s.startsWith(q)) write.call(rl, q);
        };
      }
      rl.question(q, (answer) => {
        rl.close();
        if (hidden) io.stderr.write('\n');
        resolve(answer);
      });
    });
  const user = await ask('user: ', false);
  if (!user) return null;
  const password = await ask('password: ', true);
  return { user, password };
}

export const command: CliCommand = {
  name: 'clone',
  summary:
    'clone a repository served over http(s) or ssh by hg, sluice serve or any hg server, or a local one',
  usage:
    'sluice clone URL DEST [--stream auto|v1|v2] [--ssh CMD] [--remotecmd CMD] [--ca-file PEM] [--insecure] [--no-clone-bundles] [--obsmarkers] [--pull] [-U | -u REV] [--json] [--debug] [--verify]',
  help: `Clones URL into DEST (which must not exist or be an empty directory) and checks out its working
copy, as 'hg clone' does. A stream clone by default (the repository files copied as they are on
the server, then bookmarks and phases, as 'hg clone --stream'); the pull protocol with --pull or
when the server offers no stream clone. DEST is written beside itself and renamed into place at
the end, checkout included; on an error or Ctrl-C nothing is left behind. Credentials may be
given in the URL (https://user:password@host/repo) or typed at the prompt; they are never written
to .hg/hgrc.
http_proxy / https_proxy / no_proxy are honoured (CONNECT for https).

ssh://[user@]host[:port]/path URLs run ssh as hg does ('CMD [-p PORT] [user@]host "REMOTECMD -R
path serve --stdio"'): ssh://host/repo is 'repo' in the remote home directory, ssh://host//srv/repo
the absolute /srv/repo. Keys, agent and passphrase prompts stay with ssh; when the terminal is not
interactive ssh runs with BatchMode=yes. The remote's messages are shown as 'remote: ...' lines.
A local repository (a path, relative to the current directory, or a file:// URL) is cloned
through the same protocol, served in process; its absolute path becomes DEST's paths.default.

  --stream auto|v1|v2             v2 = bundle2 stream (getbundle), v1 = legacy stream_out;
                                  auto (default) takes what the server offers best
  --ca-file PEM                   an extra CA certificate for https (added to the system ones)
  --insecure                      do not verify the server's certificate (this once; a warning says so)
  --no-clone-bundles              ignore clone bundles the server advertises
  --pull                          clone with the pull protocol (discovery and a changegroup, as
                                  hg clone --pull); a server that offers no stream clone is
                                  pulled from anyway. Changegroup clone bundles (gzip-v2,
                                  zstd-v2, bzip2-v2) are applied first, then what they lack pulled
  --obsmarkers                    take the server's obsolescence markers (as hg with evolution
                                  on does; stream v2 only). Without it a server that has markers
                                  refuses a v2 stream, as it refuses hg by default
  --ssh CMD                       the ssh command line (default: SLUICE_SSH, [ui] ssh of the
                                  user's hgrc, then 'ssh'), e.g. 'ssh -i ~/.ssh/deploy_key'
  --remotecmd CMD                 the hg (or sluice) command on the remote (default: [ui]
                                  remotecmd, then 'hg')
  -U, --noupdate                  do not check out a working copy (hg clone -U)
  -u, --updaterev REV             check out REV (default: the '@' bookmark, else the tip of
                                  'default', else tip); the checkout is done before DEST appears
  --connect-timeout SECONDS       http(s): connecting (default 30); ssh: ssh's login and the
                                  remote hg's first answer, prompts answered at a terminal
                                  included (default 60): past it, no Mercurial server answered
  --idle-timeout SECONDS          no data for this long aborts the clone (default 60)
${CLOSER_HELP}
  --verify                        verify the repository afterwards
${OUTPUT_HELP}`,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs(
      argv,
      {
        ...OUTPUT_OPTIONS,
        stream: { type: 'string' },
        'ca-file': { type: 'string' },
        insecure: { type: 'boolean' },
        ssh: { type: 'string' },
        remotecmd: { type: 'string' },
        'no-clone-bundles': { type: 'boolean' },
        obsmarkers: { type: 'boolean' },
        noupdate: { type: 'boolean', short: 'U' },
        updaterev: { type: 'string', short: 'u' },
        pull: { type: 'boolean' },
        'connect-timeout': { type: 'string' },
        'idle-timeout': { type: 'string' },
        ...CLOSER_OPTIONS,
        verify: { type: 'boolean' },
      },
      { min: 2, max: 2 },
    );
    const stream = choice('stream', values.stream, ['auto', 'v1', 'v2'] as const) ?? 'auto';
    const url = positionals[0]!;
    if (!/^(https?|ssh):\/\//i.test(url) && !isLocalSource(url))
      throw new UsageError(
        `URL must be a local path, or start with file://, http://, https:// or ssh:// (got '${withoutCredentials(url)}')`,
      );
    const closer = closerOptions(values);
    const connect = positiveInt('connect-timeout', values['connect-timeout'], 3600);
    const idle = positiveInt('idle-timeout', values['idle-timeout'], 86400);
    // a pull clone applies a changegroup: tuned like `sluice pull` (see there)
    if (values.pull) tuneHeapForMemory(PULL_HEAP);
    return runJobForCli(
      {
        kind: 'clone',
        url,
        dest: positionals[1]!,
        stream,
        closer,
        ...(values['ca-file'] ? { caFile: values['ca-file'] } : {}),
        ...(values.insecure ? { insecure: true } : {}),
        ...(values['no-clone-bundles'] ? { cloneBundles: false } : {}),
        ...(values.obsmarkers ? { obsmarkers: true } : {}),
        update: !values.noupdate,
        ...(values.updaterev !== undefined ? { updateRev: values.updaterev } : {}),
        ...(values.pull ? { pull: true } : {}),
        ...(values.verify ? { verify: true } : {}),
        ...(connect ? { connectTimeoutMs: connect * 1000 } : {}),
        ...(idle ? { idleTimeoutMs: idle * 1000 } : {}),
      },
      values,
      io,
      {
        askCredentials: ({ realm, url: u }) => promptCredentials(realm, u, io),
        connect: {
          ...(values.ssh ? { sshCommand: values.ssh } : {}),
          ...(values.remotecmd ? { remoteCommand: values.remotecmd } : {}),
          // ssh may ask for a passphrase or a new host key on the terminal, as under hg
          interactive: Boolean(process.stdin.isTTY && io.stderr.isTTY),
        },
      },
    );
  },
};
