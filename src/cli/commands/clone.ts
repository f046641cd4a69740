// Placeholder registration (owner: WIRE, who replaces this file with the real command).
import { EXIT_ERROR, type CliCommand } from '../command';

export const command: CliCommand = {
  name: 'clone',
  summary: '(clone: not available yet)',
  usage: 'sluice clone ...',
  help: 'Not available yet in this build.',
  async run(_argv, io) {
    io.stderr.write('abort: sluice clone is not available yet\n');
    return EXIT_ERROR;
  },
};
