// Placeholder registration (owner: VERIFY, who replaces this file with the real command).
import { EXIT_ERROR, type CliCommand } from '../command';

export const command: CliCommand = {
  name: 'verify',
  summary: '(verify: not available yet)',
  usage: 'sluice verify ...',
  help: 'Not available yet in this build.',
  async run(_argv, io) {
    io.stderr.write('abort: sluice verify is not available yet\n');
    return EXIT_ERROR;
  },
};
