// Shared by the checkout interop tests (checkout.test.ts, checkout-streamed.test.ts): `sluice
// update` run as a job would, and the comparison of its checkout with the one hg made.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { debugstateEntries, workingCopyTree } from './working-copy-support';
import { hg } from './changegroup-support';
import { updateWorkingCopy, type UpdateOptions } from '../../src/main/engine/operations/update/update';
import { SluiceError } from '../../src/main/engine/errors';
import { JobContext } from '../../src/main/engine/context/job-context';
import { hgSync } from '../support/env';
import type { SluiceEvent } from '../../src/shared/events';

function debugstate(repo: string): string[] {
  return debugstateEntries(hg(['debugstate', '--no-dates'], repo));
}

export async function update(repo: string, opts: UpdateOptions = {}): Promise<SluiceEvent[]> {
  const events: SluiceEvent[] = [];
  await updateWorkingCopy(
    repo,
    { emitStart: true, ...opts },
    new JobContext({ sink: (e) => events.push(e) }),
  );
  return events;
}

export async function refusal(repo: string, opts: UpdateOptions = {}): Promise<SluiceError> {
  try {
    await update(repo, opts);
  } catch (e) {
    expect(e).toBeInstanceOf(SluiceError);
    return e as SluiceError;
  }
  throw new Error('update was not refused');
}

/** What hg sees in a checkout Sluice made, against `hg clone` of the same source. */
export function expectSameAsHg(ours: string, theirs: string): void {
  expect(workingCopyTree(ours, 'utf8')).toEqual(workingCopyTree(theirs, 'utf8'));
  // before any status: hg status rewrites entries it had to look up
  expect(debugstate(ours)).toEqual(debugstate(theirs));
  expect(hg(['status'], ours)).toBe('');
  expect(hg(['id', '-i'], ours)).toBe(hg(['id', '-i'], theirs));
  expect(hg(['branch'], ours)).toBe(hg(['branch'], theirs));
  expect(readFileSync(join(ours, '.hg', 'branch'), 'latin1')).toBe(
    readFileSync(join(theirs, '.hg', 'branch'), 'latin1'),
  );
  expect(hgSync(['verify', '-q'], ours).status).toBe(0);
}
