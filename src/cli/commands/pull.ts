// sluice pull REPO [SOURCE]: what SOURCE has that REPO lacks, with phases and bookmarks, as hg pull
// (operations/pull/pull.ts); --incoming only counts what a pull would bring.
import {
  OUTPUT_HELP,
  OUTPUT_OPTIONS,
  parseCommandArgs,
  positiveInt,
  UsageError,
  type CliCommand,
} from '../command';
import { PULL_HEAP, tuneHeapForMemory } from '../heap-tuning';
import { runJobForCli } from '../job-output';
import { promptCredentials } from './clone';
import { withoutCredentials } from '../../shared/urls';
import { isLocalSource } from '../../main/engine/operations/local-peer';

export const command: CliCommand = {
  name: 'pull',
  summary:
    'pull changes from a repository (http(s), ssh, or a local path) into a local repository (like hg pull)',
  usage:
    'sluice pull REPO [SOURCE] [-u|--update] [--incoming] [--ca-file PEM] [--insecure] [--ssh CMD] [--remotecmd CMD] [--json] [--debug]',
  help: `Finds what SOURCE has that REPO lacks (hg's discovery: heads, then samples of known) and adds
it in one transaction: changesets, manifests and files, then phases (they only advance) and
bookmarks (new ones added, ones the remote moved forward advanced, diverged ones kept as
NAME@default). SOURCE defaults to REPO's paths.default. SOURCE may be a local repository (a
path, relative to the current directory, or a file:// URL; a relative paths.default is relative
to REPO). An error or Ctrl-C leaves REPO as it was.

  -u, --update                    update a clean working copy to the new head afterwards
  --incoming                      only report how many changesets a pull would bring
  --ca-file PEM                   an extra CA certificate for https
  --insecure                      do not verify the server's certificate (this once; a warning says so)
  --ssh CMD, --remotecmd CMD      for ssh:// sources, as hg's -e and --remotecmd
  --connect-timeout SECONDS       http(s): connecting (default 30); ssh: ssh's login and the
                                  remote hg's first answer, prompts answered at a terminal
                                  included (default 60): past it, no Mercurial server answered
  --idle-timeout SECONDS          default 60
${OUTPUT_HELP}`,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs(
      argv,
      {
        ...OUTPUT_OPTIONS,
        update: { type: 'boolean', short: 'u' },
        incoming: { type: 'boolean' },
        'ca-file': { type: 'string' },
        insecure: { type: 'boolean' },
        ssh: { type: 'string' },
        remotecmd: { type: 'string' },
        'connect-timeout': { type: 'string' },
        'idle-timeout': { type: 'string' },
      },
      { min: 1, max: 2 },
    );
    const source = positionals[1];
    if (source !== undefined && !/^(https?|ssh):\/\//i.test(source) && !isLocalSource(source))
      throw new UsageError(
        `SOURCE must be a local path, or start with file://, http://, https:// or ssh:// (got '${withoutCredentials(source)}')`,
      );
    const connect = positiveInt('connect-timeout', values['connect-timeout'], 3600);
    const idle = positiveInt('idle-timeout', values['idle-timeout'], 86400);
    tuneHeapForMemory(PULL_HEAP);
    return runJobForCli(
      {
        kind: 'pull',
        repo: positionals[0]!,
        ...(source ? { source } : {}),
        ...(values.update ? { update: true } : {}),
        ...(values.incoming ? { incoming: true } : {}),
        ...(values['ca-file'] ? { caFile: values['ca-file'] } : {}),
        ...(values.insecure ? { insecure: true } : {}),
        ...(connect ? { connectTimeoutMs: connect * 1000 } : {}),
        ...(idle ? { idleTimeoutMs: idle * 1000 } : {}),
      },
      values,
      io,
      {
        askCredentials: ({ realm, url }) => promptCredentials(realm, url, io),
        connect: {
          ...(values.ssh ? { sshCommand: values.ssh } : {}),
          ...(values.remotecmd ? { remoteCommand: values.remotecmd } : {}),
          interactive: Boolean(process.stdin.isTTY && io.stderr.isTTY),
        },
      },
    );
  },
};
