/**
 * LRU of full texts keyed by rev, bounded in bytes; shared by the reader (chain bases that later
 * revisions delta against) and the writer (delta bases of revisions being added). A text larger
 * than `budget / maxShare` is never kept, so one huge file cannot flush everything else.
 */
export class TextCache {
  private readonly map = new Map<number, Uint8Array>();
  private bytes = 0;
  constructor(
    private readonly budget: number,
    private readonly maxShare: number,
    /** told about each text the budget pushes out (the writer recycles its large buffers) */
    private readonly onEvict?: (text: Uint8Array) => void,
  ) {}
  get(rev: number): Uint8Array | undefined {
    const t = this.map.get(rev);
    if (t !== undefined) {
      this.map.delete(rev);
      this.map.set(rev, t);
    }
    return t;
  }
  /** Whether a text of `size` bytes would be kept (false for every size when the budget is 0). */
  keeps(size: number): boolean {
    return size <= this.budget / this.maxShare && this.budget > 0;
  }
  /** Keeps text for rev; false when it is too large to keep (it was not taken). */
  set(rev: number, text: Uint8Array): boolean {
    if (this.map.has(rev)) return true;
    if (!this.keeps(text.length)) return false;
    this.map.set(rev, text);
    this.bytes += text.length;
    for (const [r, t] of this.map) {
      if (this.bytes <= this.budget) break;
      this.map.delete(r);
      this.bytes -= t.length;
      this.onEvict?.(t);
    }
    return true;
  }
  /** without touching the LRU order */
  peek(rev: number): Uint8Array | undefined {
    return this.map.get(rev);
  }
  clear(): void {
    this.map.clear();
    this.bytes = 0;
  }
}
