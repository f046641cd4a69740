// Child process for changegroup-kill.test.ts: applies argv[3] (a bundle file) to the repository
// argv[2] from a slow source, says "writing" once the transaction has written data, and waits to
// be killed with SIGKILL.
import { readFileSync } from 'node:fs';
import { applyBundleBytesToRepo } from '../../src/main/engine/changegroup';
import { JobContext } from '../../src/main/engine/context/job-context';

const [repo, bundle] = process.argv.slice(2) as [string, string];
const bytes = readFileSync(bundle);
async function* slow(): AsyncGenerator<Uint8Array> {
  const piece = 2048;
  for (let i = 0; i < bytes.length; i += piece) {
    if (i >= bytes.length / 2) {
      process.stdout.write('writing\n');
      await new Promise((r) => setTimeout(r, 60_000));
    }
    yield bytes.subarray(i, i + piece);
  }
}
await applyBundleBytesToRepo(repo, slow(), new JobContext());
process.stdout.write('finished\n');
