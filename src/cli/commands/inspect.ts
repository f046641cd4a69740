// sluice inspect BUNDLE: what a stream clone bundle holds, from its header.
import { formatHgBytes } from '../../shared/events';
import { inspectBundle } from '../../main/engine/operations/apply/inspect';
import { EXIT_ERROR, EXIT_OK, parseCommandArgs, type CliCommand } from '../command';

export const command: CliCommand = {
  name: 'inspect',
  summary: 'show what a bundle holds (stream clone or changegroup), from its header',
  usage: 'sluice inspect BUNDLE [--json]',
  help: `Reads the header of BUNDLE (packed1, stream v2, or a changegroup bundle from 'hg bundle')
without applying it.

  --json        print the BundleInfo as one JSON object
  -h, --help    show this help`,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs(
      argv,
      { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
      { min: 1, max: 1 },
    );
    try {
      const info = await inspectBundle(positionals[0]!);
      if (values.json) {
        io.stdout.write(JSON.stringify(info) + '\n');
      } else if (info.type === 'changegroup') {
        const comp = { UN: 'none', GZ: 'gzip', BZ: 'bzip2', ZS: 'zstd' }[info.compression];
        io.stdout.write(
          [
            `type: changegroup (${comp}-${info.container === 'bundle1' ? 'v1' : 'v2'}${info.changegroupVersion && info.changegroupVersion !== '02' && info.container === 'bundle2' ? `;cg.version=${info.changegroupVersion}` : ''})`,
            `compression: ${info.compression}`,
            `changesets: ${info.changesets ?? 'unknown'}`,
            `size on disk: ${info.sizeOnDisk} (${formatHgBytes(info.sizeOnDisk)})`,
          ].join('\n') + '\n',
        );
      } else {
        const spec =
          info.type === 'packed1'
            ? 'none-packed1'
            : `${{ UN: 'none', GZ: 'gzip', BZ: 'bzip2', ZS: 'zstd' }[info.compression]}-v2;stream=v2`;
        io.stdout.write(
          [
            `type: ${info.type} (${spec})`,
            `compression: ${info.compression}`,
            `files: ${info.files}`,
            `bytes: ${info.bytes} (${formatHgBytes(info.bytes)})`,
            `requirements: ${info.requirements.join(', ') || '(none)'}`,
            ...(info.unsupported.length
              ? [`unsupported: ${info.unsupported.join(', ')} (Sluice will refuse to apply it)`]
              : []),
            `size on disk: ${info.sizeOnDisk} (${formatHgBytes(info.sizeOnDisk)})`,
          ].join('\n') + '\n',
        );
      }
      return EXIT_OK;
    } catch (e) {
      io.stderr.write(`abort: ${(e as Error).message}\n`);
      return EXIT_ERROR;
    }
  },
};
