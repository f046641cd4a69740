// kill -9 of a process mid-apply: DEST stays as it was, the temporary stays behind (nothing can
// remove it), and the next apply beside it removes it because its owner is dead.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { applyStream } from '../../src/main/engine/streamclone/consume';
import { memoryStream, syntheticEntries } from '../support/memory-stream';
import { JobContext } from '../../src/main/engine/context/job-context';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CHILD = fileURLToPath(new URL('./apply-kill-child.ts', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'sluice-apply-kill-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Starts the child and resolves once it is writing files into its temporary. */
function startChild(dest: string): Promise<import('node:child_process').ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, dest], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('writing\n')) resolve(child);
    });
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    child.on('exit', (code) => reject(new Error(`child exited (${code}) before writing: ${out} ${err}`)));
  });
}

describe('kill -9 mid-apply', () => {
  it.each([
    ['absent', false],
    ['an empty directory', true],
  ])('DEST %s stays as it was; the next run removes the dead temporary', async (_what, emptyDir) => {
    const dest = join(work, emptyDir ? 'empty' : 'absent');
    if (emptyDir) mkdirSync(dest);
    const child = await startChild(dest);
    const exited = new Promise((r) => child.on('exit', r));
    child.kill('SIGKILL');
    await exited;

    const temps = readdirSync(work).filter((n) => n.includes('.sluice-tmp-'));
    expect(temps).toHaveLength(1);
    expect(temps[0]).toMatch(
      new RegExp(`^\\.${emptyDir ? 'empty' : 'absent'}\\.sluice-tmp-${child.pid}-[0-9a-f]+$`),
    );
    expect(readdirSync(join(work, temps[0]!, '.hg', 'store', 'data')).length).toBeGreaterThan(0);
    if (emptyDir) expect(readdirSync(dest)).toEqual([]);
    else expect(existsSync(dest)).toBe(false);

    // the next apply into the same DEST works and sweeps the dead temporary away
    await applyStream(memoryStream(syntheticEntries(3)), dest, {}, new JobContext());
    expect(readdirSync(work).filter((n) => n.includes('.sluice-tmp-'))).toEqual([]);
    expect(readdirSync(dest)).toEqual(['.hg']);
  });
});
