// sluice bundles refresh|list|clear REPO: the automatic clone bundles of a served repository, as
// hg 6.5's clonebundles extension (admin::clone-bundles-refresh / -clear), configured in the
// repository's `[clone-bundles]`.
import { isSluiceError } from '../../main/engine/errors';
import {
  clearCloneBundles,
  listCloneBundles,
  refreshCloneBundles,
  type ListedBundle,
  type RefreshResult,
} from '../../main/engine/operations/clone-bundles/refresh';
import { EXIT_ERROR, EXIT_OK, UsageError, parseCommandArgs, type CliCommand, type CliIO } from '../command';

function report(io: CliIO, result: RefreshResult, quiet: boolean): number {
  if (!quiet) {
    for (const b of result.generated) io.stdout.write(`published ${b.url} (${b.spec}, ${b.revs} revs)\n`);
    for (const b of result.deleted) io.stdout.write(`deleted ${b.basename}\n`);
  }
  for (const f of result.failedDeletes) io.stderr.write(`warning: could not delete ${f}\n`);
  return EXIT_OK;
}

function listLine({ bundle: b, advertised }: ListedBundle): string {
  const what = `${b.spec} ${b.revs} revs ${b.tipNode.slice(0, 12)}`;
  if (b.status === 'pending') return `generating ${what} by ${b.host} pid ${b.pid}\n`;
  return `${advertised ? 'advertised' : 'outdated  '} ${what} ${b.url}\n`;
}

export const command: CliCommand = {
  name: 'bundles',
  summary: 'generate, list or delete the automatic clone bundles of a repository',
  usage: 'sluice bundles refresh|list|clear REPO [--json] [-q]',
  help: `Automatic clone bundles, configured in REPO's .hg/hgrc as for hg 6.5's clonebundles extension:

  [clone-bundles]
  auto-generate.formats = zstd-v2, none-v2;stream=v2   # also gzip-v2, none-v2, none-packed1
  auto-generate.on-change = yes        # sluice serve refreshes when the repository changes
  trigger.below-bundled-ratio = 0.95   # regenerate below this share of the revisions bundled
  trigger.revs = 1000                  # or past this many revisions not bundled
  upload-command = cp "$HGCB_BUNDLE_PATH" /srv/www/"$HGCB_BASENAME"
  delete-command = rm -f /srv/www/"$HGCB_BASENAME"
  upload-url = s3://BUCKET/PREFIX      # instead of the commands: the built-in S3 uploader
  url-template = https://cdn.example.com/{basename}

  refresh   delete the bundles outdated since the last refresh, then generate the missing
            ones, upload them and publish them in .hg/clonebundles.manifest (state shared
            with hg 6.5+ in .hg/clonebundles.auto-gen)
  list      the bundles in the state: advertised, outdated (deleted by the next refresh), generating
  clear     delete every generated bundle (out of the manifest, then from the storage)

  --json        print the bundles as JSON
  -q, --quiet   print nothing but errors`,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs(
      argv,
      {
        json: { type: 'boolean' },
        quiet: { type: 'boolean', short: 'q' },
        help: { type: 'boolean', short: 'h' },
      },
      { min: 2, max: 2 },
    );
    const [action, repo] = positionals as [string, string];
    if (!['refresh', 'list', 'clear'].includes(action))
      throw new UsageError(`unknown action '${action}' (refresh, list or clear)`);
    try {
      if (action === 'list') {
        const listed = await listCloneBundles(repo);
        if (values.json) io.stdout.write(JSON.stringify(listed) + '\n');
        else for (const entry of listed) io.stdout.write(listLine(entry));
        return EXIT_OK;
      }
      const run = action === 'refresh' ? refreshCloneBundles : clearCloneBundles;
      const result = await run(repo, {
        signal: io.signal,
        ...(values.quiet || values.json ? {} : { onNote: (line: string) => io.stderr.write(line + '\n') }),
      });
      if (values.json) {
        io.stdout.write(JSON.stringify(result) + '\n');
        return EXIT_OK;
      }
      return report(io, result, !!values.quiet);
    } catch (e) {
      io.stderr.write(`abort: ${isSluiceError(e) ? e.message : (e as Error).message}\n`);
      return EXIT_ERROR;
    }
  },
};
