// sluice verify [REPO]: hg verify's checks and output (operations/verify/verify.ts). Text mode prints what hg
// prints, on the same streams (status on stdout, problems on stderr); --json prints the job's
// events as NDJSON. Exit 0 when no integrity error was found (warnings allowed, as hg), 1 otherwise.
import { resolve } from 'node:path';
import { isSluiceError, toSluiceError } from '../../main/engine/errors';
import { JobContext, type JobEventInput } from '../../main/engine/context/job-context';
import { verifyRepository } from '../../main/engine/operations/verify/verify';
import {
  EXIT_ERROR,
  EXIT_INTERRUPTED,
  EXIT_OK,
  OUTPUT_OPTIONS,
  parseCommandArgs,
  positiveInt,
  type CliCommand,
} from '../command';
import { tuneHeapForMemory } from '../heap-tuning';
import { ProgressBar } from '../progress-bar';

export const command: CliCommand = {
  name: 'verify',
  summary: 'verify the integrity of a repository (like hg verify)',
  usage: 'sluice verify [REPO] [--full] [--workers N] [--json] [-q]',
  help: `Checks the changelog, the manifest and every filelog of REPO (default: the current directory)
and their cross-links like 'hg verify': revision data and node ids, linkrevs, parents, files named
by changesets against manifests and filelogs, copy sources, the fncache. Prints the same lines as
hg ("checked N changesets with M changes to K files", then any problems) and exits 1 when an
integrity error was found.

  --full          also rebuild every manifest revision (hg verify --full)
  --concurrency N filelogs verified at once when reads go through the thread pool (default 8)
  --workers N     threads reading filelogs beside the main one (default: none on 2 cores or
                  fewer, else one per core beside it, at most 3, for stores with 8 MiB of
                  filelogs or more; 0: none)
  --json          print every event as one JSON object per line (NDJSON) on stdout
  -q, --quiet     print only problems
  -h, --help      show this help`,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs(
      argv,
      {
        ...OUTPUT_OPTIONS,
        full: { type: 'boolean' },
        concurrency: { type: 'string' },
        workers: { type: 'string' },
      },
      { min: 0, max: 1 },
    );
    tuneHeapForMemory({ turbofan: false });
    const repo = resolve(positionals[0] ?? '.');
    const json = Boolean(values.json);
    const quiet = Boolean(values.quiet);
    const bar = !json && !quiet && io.stderr.isTTY ? new ProgressBar(io.stderr) : undefined;
    const ctx = new JobContext({
      signal: io.signal,
      fileEvents: false,
      sink: (e) => {
        if (json) io.stdout.write(JSON.stringify(e) + '\n');
        else if (e.type === 'progress') bar?.render(e);
      },
    });
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    try {
      ctx.phase('verify'); // as runJob does for a verify job
      const report = await verifyRepository(repo, ctx, {
        emitStart: true,
        throwOnErrors: false,
        full: Boolean(values.full),
        concurrency: positiveInt('concurrency', values.concurrency, 256),
        workers: values.workers === '0' ? 0 : positiveInt('workers', values.workers, 64),
        onLine: (line) => {
          if (json) return;
          if (line.stream === 'out' && quiet) return;
          bar?.clear();
          (line.stream === 'out' ? io.stdout : io.stderr).write(line.text + '\n');
        },
      });
      bar?.clear();
      const frame = jobFrame(t0, cpu0, report.bytes, report.revlogFiles);
      if (report.errors) {
        const first = report.firstDamagedChangeset;
        ctx.emit({
          type: 'error',
          code: 'VERIFY_FAILED',
          message:
            `${report.errors} integrity errors encountered` +
            (first !== undefined ? ` (first damaged changeset appears to be ${first})` : ''),
        });
        return EXIT_ERROR;
      }
      ctx.emit({ ...frame, result: repo });
      return EXIT_OK;
    } catch (e) {
      bar?.clear();
      const err = toSluiceError(e);
      ctx.emit({ type: 'error', code: err.code, message: err.message });
      if (isSluiceError(err) && err.code === 'CANCELLED') {
        if (!json) io.stderr.write('interrupted!\n');
        return EXIT_INTERRUPTED;
      }
      if (!json) io.stderr.write(`abort: ${err.message}\n`);
      return EXIT_ERROR;
    }
  },
};

/** The done event's frame, as runJob builds it. */
function jobFrame(
  t0: number,
  cpu0: NodeJS.CpuUsage,
  bytes: number,
  files: number,
): Extract<JobEventInput, { type: 'done' }> {
  const cpu = process.cpuUsage(cpu0);
  return {
    type: 'done',
    wallMs: Math.round(performance.now() - t0),
    userCpuMs: Math.round(cpu.user / 1000),
    systemCpuMs: Math.round(cpu.system / 1000),
    bytes,
    files,
    peakRssBytes: process.resourceUsage().maxRSS * 1024,
  };
}
