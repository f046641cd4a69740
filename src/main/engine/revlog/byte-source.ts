// Where a Revlog's chunks come from: a file read through a window (hg's randomaccessfile), or bytes
// already in memory (a small file read whole, a revlog received over the wire).
import { SluiceError } from '../errors';
import { openForRead, type OpenedFile, type RevlogIoMode } from './file-io';
import { revlogError } from './revlog-error';

/** Random access to a file's bytes with a read window (or straight from memory). */
export interface ByteSource {
  size(): Promise<number | undefined>;
  read(pos: number, len: number): Promise<Uint8Array>;
  /** read() without a promise when [pos, pos + len) is in memory already; undefined otherwise. */
  readNow(pos: number, len: number): Uint8Array | undefined;
  /** Makes the following reads inside [pos, pos + len) memory hits (one large read). */
  prefetch(pos: number, len: number): Promise<void>;
  /** Drops the read window (the next read reads the file again). */
  release(): void;
  close(): Promise<void>;
}

export class MemorySource implements ByteSource {
  /** data null: the file does not exist */
  constructor(
    private readonly data: Uint8Array | null,
    private readonly label: string,
  ) {}
  async size(): Promise<number | undefined> {
    return this.data?.length;
  }
  async read(pos: number, len: number): Promise<Uint8Array> {
    const data = this.data;
    if (!data) {
      if (len === 0) return new Uint8Array(0);
      throw revlogError(this.label, 'missing-data-file', `revlog data file ${this.label} is missing`);
    }
    if (pos + len > data.length) throw partialRead(this.label, pos, len, Math.max(0, data.length - pos));
    return data.subarray(pos, pos + len);
  }
  readNow(pos: number, len: number): Uint8Array | undefined {
    const data = this.data;
    return data && pos + len <= data.length ? data.subarray(pos, pos + len) : undefined;
  }
  async prefetch(): Promise<void> {}
  release(): void {}
  async close(): Promise<void> {}
}

export class FileSource implements ByteSource {
  private file: OpenedFile | null | undefined;
  private opening: Promise<OpenedFile | null> | undefined;
  private fileSize: number | undefined;
  private winPos = 0;
  private win: Uint8Array = new Uint8Array(0);

  constructor(
    private readonly path: string,
    private readonly label: string,
    private readonly windowSize: number,
    private readonly io: RevlogIoMode,
    private readonly sizeHint: number | undefined,
    /** a file up to this size is read whole on the first miss */
    private readonly wholeLimit: number,
  ) {}

  private handle(): Promise<OpenedFile | null> {
    this.opening ??= (async () => {
      const f = await openForRead(this.path, this.io, this.sizeHint);
      this.file = f;
      if (f) this.fileSize = await f.size();
      return f;
    })();
    return this.opening;
  }

  async size(): Promise<number | undefined> {
    await this.handle();
    return this.fileSize;
  }

  readNow(pos: number, len: number): Uint8Array | undefined {
    if (pos >= this.winPos && pos + len <= this.winPos + this.win.length) {
      return this.win.subarray(pos - this.winPos, pos - this.winPos + len);
    }
    return undefined;
  }

  async read(pos: number, len: number): Promise<Uint8Array> {
    if (pos >= this.winPos && pos + len <= this.winPos + this.win.length) {
      return this.win.subarray(pos - this.winPos, pos - this.winPos + len);
    }
    await this.fill(pos, len);
    return this.win.subarray(pos - this.winPos, pos - this.winPos + len);
  }

  async prefetch(pos: number, len: number): Promise<void> {
    if (len <= 0 || (pos >= this.winPos && pos + len <= this.winPos + this.win.length)) return;
    const size = await this.size();
    if (size === undefined || pos + len > size) return; // read() reports it
    await this.fill(pos, len);
  }

  /** Replaces the window with one read covering [pos, pos + len) (the whole file when small). */
  private async fill(pos: number, len: number): Promise<void> {
    const f = await this.handle();
    if (!f) {
      if (len === 0) {
        this.win = new Uint8Array(0);
        this.winPos = pos;
        return;
      }
      throw revlogError(this.label, 'missing-data-file', `revlog data file ${this.label} is missing`, {
        path: this.path,
        // what hg's open() raises, word for word
        reason: `[Errno 2] No such file or directory: ${pythonBytesRepr(this.path)}`,
      });
    }
    const size = this.fileSize!;
    if (pos + len > size) throw partialRead(this.label, pos, len, Math.max(0, size - pos));
    const from = size <= this.wholeLimit ? 0 : pos;
    const want = size <= this.wholeLimit ? size : Math.min(Math.max(len, this.windowSize), size - pos);
    // a fresh buffer per window: views handed out of the previous one stay valid
    const buf = Buffer.allocUnsafe(want);
    let got = 0;
    while (got < want) {
      const n = await f.read(buf, got, want - got, from + got);
      if (n === 0) break;
      got += n;
    }
    if (from + got < pos + len) throw partialRead(this.label, pos, len, Math.max(0, from + got - pos));
    this.win = buf.subarray(0, got);
    this.winPos = from;
  }

  release(): void {
    this.win = new Uint8Array(0);
    this.winPos = 0;
  }

  async close(): Promise<void> {
    const f = this.file;
    this.file = undefined;
    this.opening = undefined;
    this.release();
    if (f) await f.close();
  }
}

/** Python's repr() of a bytes value (as in hg's IOError messages): a path's UTF-8, or latin1 bytes. */
export function pythonBytesRepr(path: string, encoding: 'utf8' | 'latin1' = 'utf8'): string {
  const bytes = Buffer.from(path, encoding);
  const quote = bytes.includes(0x27) && !bytes.includes(0x22) ? '"' : "'";
  let out = '';
  for (const b of bytes) {
    if (b === 0x5c) out += '\\\\';
    else if (b === quote.charCodeAt(0)) out += '\\' + quote;
    else if (b === 0x09) out += '\\t';
    else if (b === 0x0a) out += '\\n';
    else if (b === 0x0d) out += '\\r';
    else if (b < 0x20 || b >= 0x7f) out += '\\x' + b.toString(16).padStart(2, '0');
    else out += String.fromCharCode(b);
  }
  return `b${quote}${out}${quote}`;
}

function partialRead(label: string, pos: number, len: number, got: number): SluiceError {
  return revlogError(
    label,
    'partial-read',
    `partial read of revlog ${label}; expected ${len} bytes from offset ${pos}, got ${got}`,
    {
      offset: pos,
      expected: len,
      got,
    },
  );
}
