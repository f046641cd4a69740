// Not a test of the suite (vitest.config.ts does not collect it): test/unit/support/env.test.ts runs it in
// a child vitest with a PATH lacking hg, to show what a missing tool does locally and under CI.
import { describe, expect, it } from 'vitest';
import { hgSync, missing, skipNote } from './env';

describe.skipIf(missing('hg'))(`needs hg${skipNote('hg')}`, () => {
  it('hg runs', () => {
    expect(hgSync(['--version', '-q']).status).toBe(0);
  });
});
