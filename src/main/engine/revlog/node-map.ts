// 20-byte node -> rev, without a string per lookup: a changegroup apply looks up each incoming
// revision's node, parents, delta base and link node, and a latin1 Map key per lookup was a
// string allocated and hashed every time (GC and CPU on a history of many small revisions).
import { NODE_SIZE } from './constants';

/** per-process seed: bucket positions an input cannot aim at (nodes of an index are unchecked) */
const SEED = (Math.random() * 0x100000000) | 0;
const MIN_SLOTS = 8;

function u32(b: Uint8Array, at: number): number {
  return ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;
}

/** Mixes 8 bytes of the node (SHA-1 output: already uniform, unless crafted) with the seed. */
function hashNode(node: Uint8Array, at: number): number {
  let h = Math.imul(u32(node, at) ^ SEED, 0x9e3779b1);
  h = Math.imul(h ^ (h >>> 15) ^ u32(node, at + 4), 0x85ebca6b);
  return h ^ (h >>> 13);
}

/**
 * An open-addressing hash table (linear probing, at most half full) over 20-byte nodes: keys are
 * copied into one growing byte array, so a caller may pass views it reuses.
 */
export class NodeMap {
  private keys: Uint8Array;
  private values: Int32Array;
  private hashes: Int32Array;
  /** entry index + 1 per slot; 0 = empty */
  private slots: Int32Array;
  private count = 0;

  /** @param expected entries to make room for up front (a power of two at least that large) */
  constructor(expected = 0) {
    let cap = MIN_SLOTS;
    while (cap < expected) cap *= 2;
    this.keys = new Uint8Array(cap * NODE_SIZE);
    this.values = new Int32Array(cap);
    this.hashes = new Int32Array(cap);
    this.slots = new Int32Array(cap * 2);
  }

  get size(): number {
    return this.count;
  }

  /** The value of the 20 bytes of `node` at `at`; undefined when absent. */
  get(node: Uint8Array, at = 0): number | undefined {
    const e = this.find(node, at, hashNode(node, at));
    return e < 0 ? undefined : this.values[e];
  }

  has(node: Uint8Array, at = 0): boolean {
    return this.find(node, at, hashNode(node, at)) >= 0;
  }

  /** Sets (or replaces) the value of the 20 bytes of `node` at `at`. */
  set(node: Uint8Array, value: number, at = 0): void {
    if (node.length - at < NODE_SIZE) throw new RangeError('a node is 20 bytes');
    const h = hashNode(node, at);
    const found = this.find(node, at, h);
    if (found >= 0) {
      this.values[found] = value;
      return;
    }
    if (this.count === this.values.length) this.grow();
    const e = this.count++;
    this.keys.set(node.subarray(at, at + NODE_SIZE), e * NODE_SIZE);
    this.values[e] = value;
    this.hashes[e] = h;
    this.place(e, h);
  }

  /** Entry index of the node, or -1. */
  private find(node: Uint8Array, at: number, h: number): number {
    const slots = this.slots;
    const mask = slots.length - 1;
    const keys = this.keys;
    for (let s = h & mask; ; s = (s + 1) & mask) {
      const e = slots[s]! - 1;
      if (e < 0) return -1;
      if (this.hashes[e] !== h) continue;
      const k = e * NODE_SIZE;
      let i = 0;
      while (i < NODE_SIZE && keys[k + i] === node[at + i]) i++;
      if (i === NODE_SIZE) return e;
    }
  }

  private place(e: number, h: number): void {
    const slots = this.slots;
    const mask = slots.length - 1;
    let s = h & mask;
    while (slots[s] !== 0) s = (s + 1) & mask;
    slots[s] = e + 1;
  }

  /** Doubles the entry arrays and the slots (so the table stays at most half full). */
  private grow(): void {
    const cap = this.values.length * 2;
    const keys = new Uint8Array(cap * NODE_SIZE);
    keys.set(this.keys);
    const values = new Int32Array(cap);
    values.set(this.values);
    const hashes = new Int32Array(cap);
    hashes.set(this.hashes);
    this.keys = keys;
    this.values = values;
    this.hashes = hashes;
    this.slots = new Int32Array(cap * 2);
    for (let e = 0; e < this.count; e++) this.place(e, hashes[e]!);
  }
}
