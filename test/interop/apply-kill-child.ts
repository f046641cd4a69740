// Child process for apply-kill.test.ts: applies a slow in-memory stream into argv[2] and never
// finishes on its own within the test's patience; the test kills it with SIGKILL mid-apply.
import { applyStream } from '../../src/main/engine/streamclone/consume';
import { memoryStream, syntheticEntries } from '../support/memory-stream';
import { JobContext } from '../../src/main/engine/context/job-context';

const dest = process.argv[2]!;
const reader = memoryStream(syntheticEntries(2000, 64), {
  delayMs: 5,
  onEntry: (i) => {
    if (i === 20) process.stdout.write('writing\n');
  },
});
await applyStream(reader, dest, {}, new JobContext());
process.stdout.write('finished\n');
