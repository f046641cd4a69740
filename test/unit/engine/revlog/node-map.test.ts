import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { NodeMap } from '../../../../src/main/engine/revlog/node-map';

const sha1 = (i: number): Buffer => createHash('sha1').update(`rev ${i}`).digest();

describe('NodeMap', () => {
  it('finds every node it was given through growth, and misses others', () => {
    const map = new NodeMap();
    const nodes = Array.from({ length: 5000 }, (_, i) => sha1(i));
    nodes.forEach((n, i) => map.set(n, i));
    expect(map.size).toBe(5000);
    nodes.forEach((n, i) => expect(map.get(n)).toBe(i));
    for (let i = 5000; i < 6000; i++) {
      expect(map.get(sha1(i))).toBeUndefined();
      expect(map.has(sha1(i))).toBe(false);
    }
  });

  it('tells apart nodes that share all but their last byte (same hash)', () => {
    // the hash reads the first 8 bytes only: these all land on one probe chain
    const map = new NodeMap();
    const base = sha1(1);
    const variant = (b: number): Buffer => {
      const n = Buffer.from(base);
      n[19] = b;
      return n;
    };
    for (let b = 0; b < 200; b++) map.set(variant(b), 1000 + b);
    for (let b = 0; b < 200; b++) expect(map.get(variant(b))).toBe(1000 + b);
    for (let b = 200; b < 256; b++) expect(map.get(variant(b))).toBeUndefined();
    expect(map.size).toBe(200);
  });

  it('replaces the value of a node set twice and reads nodes at an offset in a larger buffer', () => {
    const map = new NodeMap(4);
    const packed = Buffer.concat([Buffer.alloc(7), sha1(1), sha1(2)]);
    map.set(packed, 1, 7);
    map.set(packed, 2, 27);
    map.set(sha1(1), 10);
    expect(map.size).toBe(2);
    expect(map.get(sha1(1))).toBe(10);
    expect(map.get(packed, 27)).toBe(2);
    // keys are copied: reusing the caller's buffer does not change them
    packed.fill(0);
    expect(map.get(sha1(2))).toBe(2);
    expect(map.get(packed, 7)).toBeUndefined();
  });

  it('misses a short node and refuses to store one', () => {
    const map = new NodeMap();
    map.set(sha1(3), 3);
    expect(map.get(sha1(3).subarray(0, 19))).toBeUndefined();
    expect(() => map.set(sha1(4).subarray(0, 12), 4)).toThrow(RangeError);
  });
});
