// sluice apply BUNDLE DEST: a packed1 or stream v2 bundle into a new repository.
import type { CloserOptions } from '../../shared/jobs';
import {
  OUTPUT_HELP,
  OUTPUT_OPTIONS,
  choice,
  parseCommandArgs,
  positiveInt,
  type CliCommand,
} from '../command';
import { runJobForCli } from '../job-output';

export const command: CliCommand = {
  name: 'apply',
  summary: 'apply a stream clone bundle (packed1 or v2) into a new repository',
  usage:
    'sluice apply BUNDLE DEST [--background-close on|off|auto] [--close-threads N] [--json] [--debug] [--verify]',
  help: `Writes the repository held by BUNDLE (made by 'hg debugcreatestreamclonebundle', 'hg bundle -t
"<comp>-v2;stream=v2"' or 'sluice bundle') to DEST, which must not exist or be an empty directory.
The repository is written to a temporary directory beside DEST and renamed into place at the end;
on an error or Ctrl-C nothing is left behind.

  --background-close on|off|auto  close written files on background threads (worker.backgroundclose;
                                  auto = on for Windows, off elsewhere)
  --close-threads N               closing threads (worker.backgroundclosethreadcount)
  --min-file-count N              fewer files than this close synchronously (default 2048)
  --max-queue N                   files waiting to be closed before the writer waits (default 384)
  --verify                        verify the repository afterwards
${OUTPUT_HELP}`,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs(
      argv,
      {
        ...OUTPUT_OPTIONS,
        'background-close': { type: 'string' },
        'close-threads': { type: 'string' },
        'min-file-count': { type: 'string' },
        'max-queue': { type: 'string' },
        verify: { type: 'boolean' },
      },
      { min: 2, max: 2 },
    );
    const closer: Partial<CloserOptions> = {};
    const mode = choice('background-close', values['background-close'], ['on', 'off', 'auto'] as const);
    if (mode) closer.backgroundClose = mode;
    const threads = positiveInt('close-threads', values['close-threads'], 1000);
    if (threads) closer.closeThreads = threads;
    const minFiles = positiveInt('min-file-count', values['min-file-count']);
    if (minFiles) closer.minFileCount = minFiles;
    const maxQueue = positiveInt('max-queue', values['max-queue'], 100_000);
    if (maxQueue) closer.maxQueue = maxQueue;
    return runJobForCli(
      {
        kind: 'apply',
        bundlePath: positionals[0]!,
        dest: positionals[1]!,
        closer,
        ...(values.verify ? { verify: true } : {}),
      },
      values,
      io,
    );
  },
};
