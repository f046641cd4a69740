// The library rows' store sizes, measured apart from the rest of a row and only while no job runs.
// A size is a stat of every store file, as much CPU as a stream apply of the same repository, and
// it was measured right when a job had added its repository, competing with the next job on the
// same cores. Here a row shows its tip at once and its size when the host is idle; a walk under
// way pauses between batches while a job runs. One walk at a time; requests for the same
// repository coalesce.

import * as engine from './engine-api';
import { storeSize } from './repo-summary';

export interface StoreSizerOptions {
  /** true while a job runs or waits: sizes wait */
  busy: () => boolean;
  onSize: (root: string, size: { bytes: number; files: number }) => void;
  /** how often a waiting size looks at `busy` again */
  retryMs?: number;
}

export class StoreSizer {
  private readonly pending = new Set<string>();
  private draining = false;
  private disposed = false;
  private readonly retryMs: number;

  constructor(private readonly options: StoreSizerOptions) {
    this.retryMs = options.retryMs ?? 250;
  }

  /** Measures `root`'s store when the host is idle (again, if a measure is under way). */
  request(root: string): void {
    if (this.disposed) return;
    this.pending.add(root);
    void this.drain();
  }

  forget(root: string): void {
    this.pending.delete(root);
  }

  dispose(): void {
    this.disposed = true;
    this.pending.clear();
  }

  private async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    try {
      for (;;) {
        await this.idle();
        const root = this.pending.values().next().value;
        if (root === undefined || this.disposed) return;
        this.pending.delete(root);
        try {
          const { storeDir } = await engine.locateRepository(root);
          const size = await storeSize(storeDir, 16, () => this.idle());
          if (!this.disposed) this.options.onSize(root, size);
        } catch {
          // gone or unreadable meanwhile: its row says so from the watcher's next read
        }
      }
    } finally {
      this.draining = false;
    }
  }

  private async idle(): Promise<void> {
    while (!this.disposed && this.options.busy())
      await new Promise((r) => setTimeout(r, this.retryMs).unref?.());
  }
}
