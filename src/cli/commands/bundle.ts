// sluice bundle REPO OUT: a stream clone bundle of a local repository.
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
  name: 'bundle',
  summary: 'write a stream clone bundle (packed1 or v2) of a local repository',
  usage: 'sluice bundle REPO OUT [--type packed1|v2] [--compression none|gzip|zstd] [--chunk-size BYTES]',
  help: `Writes a stream clone bundle of the repository at REPO to OUT, byte-identical to hg's
('hg debugcreatestreamclonebundle' for packed1, 'hg bundle -a -t "<comp>-v2;stream=v2"' for v2).

  --type packed1|v2               bundle format (default v2)
  --compression none|gzip|zstd    v2 only (default none; clone bundles only stream 'none')
  --chunk-size BYTES              bundle2 payload chunk size (default 32768; 4096 = hg before 4.5)
${OUTPUT_HELP}`,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs(
      argv,
      {
        ...OUTPUT_OPTIONS,
        type: { type: 'string' },
        compression: { type: 'string' },
        'chunk-size': { type: 'string' },
      },
      { min: 2, max: 2 },
    );
    const type = choice('type', values.type, ['packed1', 'v2'] as const);
    const compression = choice('compression', values.compression, ['none', 'gzip', 'zstd'] as const);
    const chunkSize = positiveInt('chunk-size', values['chunk-size'], 0x7fffffff);
    return runJobForCli(
      {
        kind: 'bundle',
        repo: positionals[0]!,
        out: positionals[1]!,
        ...(type ? { type } : {}),
        ...(compression ? { compression } : {}),
        ...(chunkSize ? { chunkSize } : {}),
      },
      values,
      io,
    );
  },
};
