import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SluiceError } from '../../../../src/main/engine/errors';
import {
  FREE_SPACE_LOOK_EVERY,
  FREE_SPACE_RESERVE,
  FreeSpaceGuard,
  checkFreeSpace,
  spaceBudget,
} from '../../../../src/main/engine/repo/free-space';

const work = mkdtempSync(join(tmpdir(), 'sluice-free-space-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function thrown(fn: () => void): SluiceError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(SluiceError);
    return e as SluiceError;
  }
  throw new Error('did not throw');
}

describe('FreeSpaceGuard', () => {
  it('allows what was free at the start less the reserve, then throws IO ENOSPC before the write', () => {
    const free = 1 << 30;
    const g = new FreeSpaceGuard(join(work, 'new', 'file'), 'the test', { probe: () => free });
    const budget = free - FREE_SPACE_RESERVE;
    for (let n = 0; n < budget; n += 1 << 20) g.take(Math.min(1 << 20, budget - n));
    expect(g.bytes).toBe(budget);
    const err = thrown(() => g.take(1));
    expect(err.code).toBe('IO');
    expect(err.details).toMatchObject({
      errno: 'ENOSPC',
      written: budget + 1,
      free,
      reserve: FREE_SPACE_RESERVE,
    });
    expect(err.message).toBe(
      `not enough space in ${work}: the test stopped after ${budget + 1} bytes: ${free} were free when it started, and Sluice leaves ${FREE_SPACE_RESERVE} free`,
    );
  });

  it('keeps at most half of what was free: a small write onto a nearly full disk still fits', () => {
    const g = new FreeSpaceGuard(join(work, 'f'), 'the test', { probe: () => 10 << 20 });
    g.take(5 << 20);
    expect(() => g.take(1)).toThrow(/leaves 5242880 free/);
  });

  it('looks again as it writes: the disk filling from elsewhere stops it at the reserve', () => {
    let free = 1 << 30;
    let looks = 0;
    const g = new FreeSpaceGuard(join(work, 'f'), 'the test', {
      probe: () => {
        looks++;
        return free;
      },
    });
    g.take(1);
    free = FREE_SPACE_RESERVE + 1; // another program wrote most of the disk
    g.take(FREE_SPACE_LOOK_EVERY - 1); // no look yet
    expect(looks).toBe(1);
    free = FREE_SPACE_RESERVE - 1;
    const err = thrown(() => g.take(1));
    expect(looks).toBe(2);
    expect(err.details).toMatchObject({ errno: 'ENOSPC', free: FREE_SPACE_RESERVE - 1 });
    expect(err.message).toMatch(/below the \d+ Sluice leaves free/);
  });

  it('where the free space cannot be read, nothing is checked', () => {
    const g = new FreeSpaceGuard(join(work, 'f'), 'the test', { probe: () => undefined });
    g.take(2 ** 50);
    expect(g.bytes).toBe(2 ** 50);
  });

  it('the real probe: the folder that exists above a path not made yet, and its real free space', () => {
    const g = new FreeSpaceGuard(join(work, 'a', 'b', 'c'), 'the test');
    expect(() => g.take(1)).not.toThrow();
    expect(() => g.take(2 ** 52)).toThrow(new RegExp(`not enough space in ${work}: the test stopped`));
  });
});

describe("checkFreeSpace: a declared size, the guard's rule", () => {
  it('refuses a size that fits the free space but not the free space less the reserve (the guard would stop it part-way)', () => {
    const free = 1 << 30;
    const policy = { probe: () => free };
    const budget = free - FREE_SPACE_RESERVE;
    expect(() => checkFreeSpace(join(work, 'x'), budget, 'the test announces', policy)).not.toThrow();
    const err = thrown(() => checkFreeSpace(join(work, 'x'), budget + 1, 'the test announces', policy));
    expect(err.code).toBe('IO');
    expect(err.details).toEqual({ errno: 'ENOSPC', needed: budget + 1, free, reserve: FREE_SPACE_RESERVE });
    expect(err.message).toBe(
      `not enough space in ${work}: the test announces ${budget + 1} bytes, ${free} are free and Sluice leaves ${FREE_SPACE_RESERVE} free`,
    );
  });

  it.each([10 << 20, 1 << 30, 3 * 2 ** 40 + 7, 1])(
    'what it lets through, the guard lets through whole, and one byte more neither (free %i)',
    (free) => {
      const policy = { probe: () => free };
      const { budget } = spaceBudget(free);
      checkFreeSpace(join(work, 'y'), budget, 'the test announces', policy);
      const g = new FreeSpaceGuard(join(work, 'y'), 'the test', policy);
      g.take(budget);
      expect(() => g.take(1)).toThrow(/stopped after/);
      expect(() => checkFreeSpace(join(work, 'y'), budget + 1, 'the test announces', policy)).toThrow(
        /announces/,
      );
    },
  );

  it('keeps at most half of what is free, as the guard does; an unknown free space checks nothing', () => {
    expect(spaceBudget(10 << 20)).toEqual({ budget: 5 << 20, reserve: 5 << 20 });
    expect(spaceBudget(1 << 30)).toEqual({
      budget: (1 << 30) - FREE_SPACE_RESERVE,
      reserve: FREE_SPACE_RESERVE,
    });
    expect(() =>
      checkFreeSpace(join(work, 'z'), 2 ** 52, 'the test announces', { probe: () => undefined }),
    ).not.toThrow();
    // the real probe, on the folder that exists above a path not made yet
    expect(() => checkFreeSpace(join(work, 'a', 'b'), 2 ** 52, 'the test announces')).toThrow(
      new RegExp(`not enough space in ${work}: the test announces`),
    );
  });
});
