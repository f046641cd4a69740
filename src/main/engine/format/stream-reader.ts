// The common reading interface of the three stream-clone formats (packed1, stream v1 body,
// stream2 part) and the bookkeeping they share: every entry is counted against the announced
// file and byte totals, every name is checked by assertSafeEntryName before it is returned.

import type { StreamFormat } from '../../../shared/events';
import { SluiceError } from '../errors';
import type { ByteSource, ChunkWriter } from './byte-source';
import { MAX_DECIMAL_DIGITS, MAX_ENTRY_SIZE, MAX_FILES, MAX_TOTAL_BYTES, limitError } from './limits';
import { assertSafeEntryName } from '../store/paths';

export type CompressionKey = 'UN' | 'GZ' | 'BZ' | 'ZS';

export interface StreamHeader {
  format: StreamFormat;
  /** entries announced (v2: store + cache files) */
  files: number;
  /** sum of the entries' data sizes (entry headers excluded), as announced */
  bytes: number;
  /** streamed requirements (stream v1 bodies carry none: they come from the `streamreqs` capability) */
  requirements: string[];
  compression: CompressionKey;
}

export interface StreamEntry {
  vfs: 's' | 'c';
  /** raw store path (v1 names already decodeDir'd) or cache name, as a latin1 byte string */
  name: string;
  size: number;
}

export interface StreamReader {
  readonly header: StreamHeader;
  /**
   * The next entry, or null after the last one once the counts and sizes were checked against
   * the header (and the container was checked to end where it should). Data of the previous
   * entry that was not copied is skipped.
   */
  nextEntry(): Promise<StreamEntry | null>;
  /** Streams exactly entry.size bytes of the current entry to `write`, in pieces. */
  copyData(write: ChunkWriter): Promise<void>;
  /**
   * Synchronous fast path of nextEntry(): the next entry when its header is already buffered and
   * well-formed, with exactly the checks nextEntry() makes; undefined when nextEntry() must be
   * awaited instead (input to wait for, the end of the stream, anything nextEntry() would report
   * as an error). Optional: readers without it are only awaited.
   */
  tryNextEntry?(): StreamEntry | undefined;
  /**
   * Synchronous fast path of copyData(): when all of the current entry's data is buffered, hands
   * it to `write` as one view and returns true; otherwise does nothing and returns false.
   */
  tryCopyData?(write: (chunk: Uint8Array) => void): boolean;
  /** Releases the input (file handle, HTTP body). Safe to call at any time, more than once. */
  close(): Promise<void>;
}

/**
 * Shared state machine: counts, size checks, skipping uncopied data. Subclasses read one entry
 * header (`readEntry`, called only while fewer than header.files entries were returned) and check
 * what follows the last entry (`checkEnd`).
 */
export abstract class CountedStreamReader implements StreamReader {
  private returned = 0;
  private bytesSeen = 0;
  private pendingData = 0;
  private finished = false;

  protected constructor(
    readonly header: StreamHeader,
    protected readonly src: ByteSource,
  ) {}

  protected abstract readEntry(): Promise<StreamEntry>;
  /** A well-formed entry header that is fully buffered, else undefined with nothing consumed. */
  protected abstract tryReadEntry(): StreamEntry | undefined;
  protected abstract checkEnd(): Promise<void>;

  tryNextEntry(): StreamEntry | undefined {
    if (this.pendingData > 0 || this.finished || this.returned === this.header.files) return undefined;
    const entry = this.tryReadEntry();
    if (entry !== undefined) this.accept(entry);
    return entry;
  }

  tryCopyData(write: (chunk: Uint8Array) => void): boolean {
    const n = this.pendingData;
    if (n === 0) return true; // like copyData: an empty entry calls write never
    const data = this.src.tryReadExact(n);
    if (data === null) return false;
    this.pendingData = 0;
    write(data);
    return true;
  }

  async nextEntry(): Promise<StreamEntry | null> {
    if (this.pendingData > 0) {
      const n = this.pendingData;
      this.pendingData = 0;
      await this.src.skip(n);
    }
    if (this.finished) return null;
    const { files, bytes } = this.header;
    if (this.returned === files) {
      if (this.bytesSeen !== bytes) {
        throw sizeMismatch(`stream announced ${bytes} bytes but its ${files} files hold ${this.bytesSeen}`);
      }
      await this.checkEnd();
      this.finished = true;
      return null;
    }
    const entry = await this.readEntry();
    this.accept(entry);
    return entry;
  }

  /** The checks every entry passes before it is returned, on both paths. */
  private accept(entry: StreamEntry): void {
    const bytes = this.header.bytes;
    assertSafeEntryName(entry.vfs, entry.name);
    if (entry.size > MAX_ENTRY_SIZE) throw limitError('entry size', entry.size, MAX_ENTRY_SIZE);
    if (this.bytesSeen + entry.size > bytes) {
      throw sizeMismatch(
        `entry ${JSON.stringify(entry.name)} (${entry.size} bytes) goes beyond the ${bytes} bytes the stream announced`,
      );
    }
    this.returned++;
    this.bytesSeen += entry.size;
    this.pendingData = entry.size;
  }

  async copyData(write: ChunkWriter): Promise<void> {
    const n = this.pendingData;
    this.pendingData = 0;
    await this.src.copy(n, write);
  }

  async close(): Promise<void> {
    await this.src.close();
  }

  /** For subclasses: an entry header was expected but the input ended on an entry boundary. */
  protected missingEntries(): SluiceError {
    return sizeMismatch(`stream ended after ${this.returned} of the ${this.header.files} files it announced`);
  }

  /** For subclasses: data follows the last announced entry. */
  protected trailingData(): SluiceError {
    return sizeMismatch(`data follows the last of the ${this.header.files} files the stream announced`);
  }
}

export function sizeMismatch(message: string): SluiceError {
  return new SluiceError('SIZE_MISMATCH', message);
}

export function malformed(message: string, details?: Record<string, unknown>): SluiceError {
  return new SluiceError('MALFORMED', message, details);
}

/** Bytes as a latin1 string (one char per byte): how the engine holds hg's byte names. */
export function latin1(bytes: Uint8Array): string {
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return buf.toString('latin1');
}

/** A latin1 byte string back to bytes. */
export function latin1Bytes(s: string): Buffer {
  return Buffer.from(s, 'latin1');
}

/** Strict non-negative decimal as hg writes it (`%d`); LIMIT above `max`. */
export function parseDecimal(text: string, what: string, max: number): number {
  if (!/^[0-9]+$/.test(text))
    throw malformed(`${what} is not a decimal number: ${JSON.stringify(text.slice(0, 40))}`);
  if (text.length > MAX_DECIMAL_DIGITS) throw limitError(what, text.slice(0, 20) + '…', max);
  const value = Number(text);
  if (value > max) throw limitError(what, value, max);
  return value;
}

export function checkAnnouncedCounts(files: number, bytes: number): void {
  if (files > MAX_FILES) throw limitError('file count', files, MAX_FILES);
  if (bytes > MAX_TOTAL_BYTES) throw limitError('byte count', bytes, MAX_TOTAL_BYTES);
}

/**
 * A comma-joined requirements field (packed1 header, stream2 `requirements` param after
 * unquoting). Empty → none. Each name must be printable ASCII (they end up in messages and
 * requires files).
 */
export function parseRequirements(field: string): string[] {
  if (field === '') return [];
  const reqs = field.split(',');
  for (const r of reqs) {
    if (!/^[\x21-\x7e]+$/.test(r)) throw malformed(`invalid requirement name ${JSON.stringify(r)}`);
  }
  return [...new Set(reqs)];
}
