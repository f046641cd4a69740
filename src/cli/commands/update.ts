// sluice update REPO [REV]: check out REV into REPO's working copy (operations/update/update.ts).
import {
  CLOSER_HELP,
  CLOSER_OPTIONS,
  OUTPUT_HELP,
  OUTPUT_OPTIONS,
  closerOptions,
  parseCommandArgs,
  type CliCommand,
} from '../command';
import { tuneHeapForMemory } from '../heap-tuning';
import { runJobForCli } from '../job-output';

export const command: CliCommand = {
  name: 'update',
  summary: "check out a revision into a repository's working copy (like hg update)",
  usage:
    'sluice update REPO [REV] [-r REV] [--hidden] [--background-close on|off|auto] [--close-threads N] [--json] [--debug]',
  help: `Writes the files of REV into REPO's working copy and records them in .hg/dirstate, as
'hg update REV' does: from an empty working copy (after 'hg clone -U' or 'sluice clone -U'), or
between revisions when the working copy has no uncommitted changes (refused otherwise). REV is a
revision number, a node id or a unique prefix of one, a bookmark, a tag or a branch name; without
it, from an empty working copy: the '@' bookmark, else the tip of 'default', else tip. Paths that
would leave the working copy, enter .hg or go through a symlink are refused before anything is
written; an error or Ctrl-C removes the files written so far and leaves the dirstate as it was.

  -r, --rev REV                   the revision (same as the REV argument)
  --hidden                        REV may name a hidden (obsolete) changeset, as with hg --hidden
${CLOSER_HELP}
${OUTPUT_HELP}`,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs(
      argv,
      {
        ...OUTPUT_OPTIONS,
        rev: { type: 'string', short: 'r' },
        hidden: { type: 'boolean' },
        ...CLOSER_OPTIONS,
      },
      { min: 1, max: 2 },
    );
    const rev = values.rev ?? positionals[1];
    // no TurboFan either (Node >= 22, as verify): its compile jobs on V8's threads were ~10% of a
    // checkout's CPU, paid again by each writer thread. CPU medians of 4-5 interleaved runs
    // (loaded machine): history 2.12 -> 1.89 s and 2.01 -> 1.86 s, medium 2.95 -> 2.55 s and
    // 2.92 -> 2.63 s, peak RSS -7 to -9 MB
    // and V8's default heap growth (heap-tuning.ts: fewer full GCs on the serial path)
    tuneHeapForMemory({ turbofan: false, optimizeForSize: false });
    return runJobForCli(
      {
        kind: 'update',
        repo: positionals[0]!,
        ...(rev !== undefined ? { rev } : {}),
        ...(values.hidden ? { hidden: true } : {}),
        closer: closerOptions(values),
      },
      values,
      io,
    );
  },
};
