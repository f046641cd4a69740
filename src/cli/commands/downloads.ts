// sluice downloads list|clear: the partial downloads kept so that a clone bundle cut short resumes
// when the same command runs again (the folder the app shares; SLUICE_CACHE_DIR moves it).
import { formatHgBytes } from '../../shared/events';
import { defaultDownloadsPolicy } from '../../main/engine/downloads/downloads-dir';
import { PartialStore } from '../../main/engine/downloads/partial-store';
import { EXIT_ERROR, EXIT_OK, UsageError, parseCommandArgs, type CliCommand } from '../command';
import { writeAbort } from '../job-output';
import { terminalSafe } from '../terminal-safe';

export const command: CliCommand = {
  name: 'downloads',
  summary: 'list or remove the partial downloads kept for resuming',
  usage: 'sluice downloads list [--json] | sluice downloads clear [KEY]',
  help: `A clone bundle download that stops (network, kill, sleep) keeps its bytes, and the same
command run again continues from there. They are kept in one folder (SLUICE_CACHE_DIR/downloads,
else the user cache folder), within SLUICE_DOWNLOADS_MAX_MB (default 4096; the oldest go first),
and removed once the clone they were for is done.

  list          one line per partial: key, bytes so far / total, URL, destination
  clear [KEY]   remove every partial (or the one with KEY) that no running download holds
  --json        list: the entries as one JSON array
  -h, --help    show this help`,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs(
      argv,
      { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
      { min: 1, max: 2 },
    );
    const [action, key] = positionals;
    const policy = defaultDownloadsPolicy();
    const store = new PartialStore(policy);
    try {
      if (action === 'list' && key === undefined) {
        const all = await store.list();
        if (values.json) io.stdout.write(JSON.stringify(all) + '\n');
        else if (!all.length) io.stdout.write(`no partial downloads in ${policy.dir}\n`);
        for (const p of values.json ? [] : all) {
          const of = p.total === null ? '?' : formatHgBytes(p.total);
          const busy = p.inUse ? ' (downloading)' : '';
          io.stdout.write(
            terminalSafe(`${p.key}  ${formatHgBytes(p.bytes)} of ${of}${busy}  ${p.url} -> ${p.dest}`) + '\n',
          );
        }
        return EXIT_OK;
      }
      if (action === 'clear') {
        if (key === undefined) {
          io.stdout.write(`removed ${await store.clear()} partial downloads\n`);
          return EXIT_OK;
        }
        if (await store.remove(key)) return EXIT_OK;
        io.stderr.write(`abort: partial download ${key} is in use by a running download\n`);
        return EXIT_ERROR;
      }
      throw new UsageError(`unknown action '${action}' (list or clear)`);
    } catch (e) {
      if (e instanceof UsageError) throw e;
      return writeAbort(io, e);
    }
  },
};
