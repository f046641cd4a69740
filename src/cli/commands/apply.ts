// sluice apply BUNDLE DEST: any bundle hg writes, into a new repository or (changegroups) an existing one.
import {
  CLOSER_HELP,
  CLOSER_OPTIONS,
  OUTPUT_HELP,
  OUTPUT_OPTIONS,
  closerOptions,
  parseCommandArgs,
  type CliCommand,
} from '../command';
import { PULL_HEAP, tuneHeapForMemory } from '../heap-tuning';
import { runJobForCli } from '../job-output';
import { bundleKindOf } from '../../main/engine/operations/apply/apply-changegroup-bundle';

export const command: CliCommand = {
  name: 'apply',
  summary: 'apply a bundle (stream or changegroup) into a new or an existing repository',
  usage:
    'sluice apply BUNDLE DEST [--background-close on|off|auto] [--close-threads N] [--update] [-u REV] [--json] [--debug] [--verify]',
  help: `Applies any bundle 'hg bundle' writes. A stream clone bundle (packed1, '<comp>-v2;stream=v2',
'hg debugcreatestreamclonebundle', 'sluice bundle') makes a new repository at DEST, which must not
exist or be an empty directory; so does a changegroup bundle (none/gzip/bzip2-v1,
none/gzip/bzip2/zstd-v2). A new repository is written to a temporary directory beside DEST and
renamed into place at the end. A changegroup bundle applied to an existing repository at DEST adds
its changesets like 'hg unbundle': under hg's locks, in one journaled transaction that 'hg rollback'
undoes. On an error or Ctrl-C nothing is left behind and an existing repository stays as it was.

${CLOSER_HELP}
  --min-file-count N              fewer files than this close synchronously (default 2048)
  --max-queue N                   files waiting to be closed before the writer waits (default 384)
  --update                        check out a working copy (before DEST appears)
  -u, --updaterev REV             check out REV (implies --update; default: '@', else the tip of
                                  'default', else tip)
  --verify                        verify the repository afterwards
${OUTPUT_HELP}`,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs(
      argv,
      {
        ...OUTPUT_OPTIONS,
        ...CLOSER_OPTIONS,
        'min-file-count': { type: 'string' },
        'max-queue': { type: 'string' },
        verify: { type: 'boolean' },
        update: { type: 'boolean' },
        updaterev: { type: 'string', short: 'u' },
      },
      { min: 2, max: 2 },
    );
    const closer = closerOptions(values);
    // a changegroup bundle is applied like a pull's reply (heap-tuning.ts); a stream bundle keeps
    // V8's defaults. An unreadable one is the job's to report.
    const kind = await bundleKindOf(positionals[0]!).catch(() => 'unknown');
    if (kind === 'bundle1' || kind === 'bundle2') tuneHeapForMemory(PULL_HEAP);
    return runJobForCli(
      {
        kind: 'apply',
        bundlePath: positionals[0]!,
        dest: positionals[1]!,
        closer,
        ...(values.verify ? { verify: true } : {}),
        ...(values.update || values.updaterev !== undefined ? { update: true } : {}),
        ...(values.updaterev !== undefined ? { updateRev: values.updaterev } : {}),
      },
      values,
      io,
    );
  },
};
