import { describe, expect, it } from 'vitest';
import { TextBufferPool, TextCache } from '../../../../src/main/engine/revlog/text-cache';

describe('TextCache', () => {
  it('keeps texts up to its budget, evicting the least recently used (told to onEvict); forEach sees what it keeps', () => {
    const evicted: number[] = [];
    const c = new TextCache(100, 2, (t) => evicted.push(t.length));
    expect(c.set(1, new Uint8Array(40))).toBe(true);
    expect(c.set(2, new Uint8Array(30))).toBe(true);
    expect(c.set(3, new Uint8Array(51))).toBe(false); // past budget / maxShare: never kept
    c.get(1); // 1 is now the most recent
    expect(c.set(4, new Uint8Array(40))).toBe(true);
    expect(evicted).toEqual([30]);
    const kept: number[] = [];
    c.forEach((t) => kept.push(t.length));
    expect(kept.sort()).toEqual([40, 40]);
  });
});

describe('TextBufferPool', () => {
  it('hands a buffer given back to the next take of its size class, never to two takers, ignoring foreign buffers', () => {
    const pool = new TextBufferPool(1 << 20);
    const a = pool.take(10_000);
    expect(a.length).toBe(10_000);
    expect(a.buffer.byteLength).toBe(TextBufferPool.capacity(10_000));
    expect(TextBufferPool.capacity(10_000)).toBeGreaterThanOrEqual(10_000);
    expect(TextBufferPool.capacity(10_000)).toBeLessThanOrEqual(10_000 * 1.25);
    pool.give(a);
    pool.give(a); // a second hand-back of the same buffer is ignored
    pool.give(new Uint8Array(10_000)); // not the pool's
    expect(pool.freeBytes).toBe(a.buffer.byteLength);
    const b = pool.take(9_900);
    expect(b.buffer).toBe(a.buffer);
    const c = pool.take(9_900);
    expect(c.buffer).not.toBe(a.buffer);
    expect(pool.freeBytes).toBe(0);
  });

  it('a buffer twice the size or more is not spent on a small text; past the budget the oldest free buffers go', () => {
    const pool = new TextBufferPool(150_000);
    const big = pool.take(40_000);
    pool.give(big);
    expect(pool.take(8_000).buffer).not.toBe(big.buffer);
    const more = [pool.take(60_000), pool.take(60_000)]; // a class above big's: new buffers
    expect(more.map((m) => m.buffer)).not.toContain(big.buffer);
    for (const m of more) pool.give(m); // big (the oldest) + 2 x 64 KiB > 150k: big goes
    expect(pool.freeBytes).toBe(2 * TextBufferPool.capacity(60_000));
    // a text of big's class takes a free buffer under twice its size
    expect(more.map((m) => m.buffer)).toContain(pool.take(39_000).buffer);
  });
});
