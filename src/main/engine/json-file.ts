// A small JSON file written atomically (the host's history, repository library and saved
// credentials; the sidecars of partial downloads): writes go to a temporary file renamed over the
// old one (writeFileAtomic, the one atomic writer of the host and of these sidecars), one at a
// time, so a crash mid-write leaves the previous content, never half a file; a file that does not
// parse is set aside (NAME.corrupt-<time>) rather than silently overwritten.

import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * Writes `data` to `file` through a temporary file beside it renamed over it: a reader or a crash
 * sees the old content or the new, never part of it. The directory is created if missing.
 */
export async function writeFileAtomic(file: string, data: string | Uint8Array, mode?: number): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, data, mode === undefined ? undefined : { mode });
  await rename(tmp, file);
}

export class JsonFile<T> {
  private writing: Promise<void> = Promise.resolve();
  private queued: { text: string } | null = null;

  /** `parse` checks the shape and throws when it is not what this file holds. */
  constructor(
    readonly file: string,
    private readonly parse: (value: unknown) => T,
    private readonly label: string,
  ) {}

  /** undefined when the file does not exist, or did not parse (then it was set aside). */
  async read(): Promise<T | undefined> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT')
        console.warn(`${this.label}: cannot read ${this.file}:`, e);
      return undefined;
    }
    try {
      return this.parse(JSON.parse(text));
    } catch (e) {
      const aside = `${this.file}.corrupt-${Date.now()}`;
      console.warn(
        `${this.label}: ${this.file} is not readable (${(e as Error).message}); moved to ${aside}`,
      );
      await rename(this.file, aside).catch(() => {});
      return undefined;
    }
  }

  /**
   * Queues a write of `value` as it is now. Writes queued while one runs collapse into one (the
   * last value wins), so a burst of changes costs two writes, not one per change.
   */
  write(value: T, mode?: number): Promise<void> {
    const text = JSON.stringify(value);
    if (this.queued) {
      this.queued.text = text;
      return this.writing;
    }
    const slot = { text };
    this.queued = slot;
    const write = async () => {
      this.queued = null;
      await writeFileAtomic(this.file, slot.text, mode);
    };
    this.writing = this.writing.then(write, write);
    return this.writing;
  }

  /** Resolves when every write queued so far is on disk. */
  flushed(): Promise<void> {
    return this.writing;
  }
}
