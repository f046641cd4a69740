import { setImmediate as turn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../../../src/main/engine/errors';
import { readAhead } from '../../../../src/main/engine/client/read-ahead';

/** A source of `count` chunks of `size` bytes (chunk i filled with i), recording how far it was read. */
function source(count: number, size: number, failAt = -1) {
  const state = { pulled: 0, closed: false };
  async function* gen(): AsyncGenerator<Uint8Array> {
    try {
      for (let i = 0; i < count; i++) {
        await turn();
        if (i === failAt) throw new SluiceError('TRUNCATED', 'the connection closed');
        state.pulled++;
        yield new Uint8Array(size).fill(i);
      }
    } finally {
      state.closed = true;
    }
  }
  return { it: gen(), state };
}

async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await turn();
}

describe('readAhead', () => {
  it('reads ahead of a consumer that has not started, up to the bound, and resumes as it consumes', async () => {
    const { it: src, state } = source(100, 1000);
    const ahead = readAhead(src, 10_000);
    await turns(50);
    // the bound is reached with the chunk that crosses it, then the pump waits
    expect(state.pulled).toBe(10);
    const it = ahead[Symbol.asyncIterator]();
    const first = await it.next();
    expect(first.value).toEqual(new Uint8Array(1000).fill(0));
    await turns(5);
    expect(state.pulled).toBe(11);
    const seen: number[] = [first.value![0]!];
    for (let r = await it.next(); !r.done; r = await it.next()) seen.push(r.value[0]!);
    expect(seen).toEqual([...Array(100).keys()]);
    expect(state.closed).toBe(true);
  });

  it("delivers the source's error after the chunks read before it", async () => {
    const { it: src } = source(10, 10, 3);
    const got: number[] = [];
    const run = async (): Promise<void> => {
      for await (const c of readAhead(src, 1 << 20)) got.push(c[0]!);
    };
    await expect(run()).rejects.toMatchObject({ code: 'TRUNCATED' });
    expect(got).toEqual([0, 1, 2]);
  });

  it('ending the iteration early stops reading and closes the source', async () => {
    const { it: src, state } = source(1000, 100);
    for await (const c of readAhead(src, 1000)) {
      if (c[0] === 2) break;
    }
    await turns(30);
    expect(state.closed).toBe(true);
    expect(state.pulled).toBeLessThan(20);
  });
});
