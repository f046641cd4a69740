// Stream clone v1 over the wire: the `stream_out` body (streamclone.py generatev1wireproto,
// consumed by maybeperformlegacystreamclone + consumev1). Also the entry layout packed1 reuses.
//
//   status line   `0\n` ok | `1\n` forbidden | `2\n` lock failed | other: unknown error
//   counts line   `<files> <bytes>\n`
//   entries       `<encodedir(name)>\0<size>\n` + size raw bytes, EOF after the last one

import { SluiceError } from '../errors';
import { ByteSource } from './byte-source';
import {
  MAX_DECIMAL_DIGITS,
  MAX_ENTRY_SIZE,
  MAX_FILES,
  MAX_NAME_LENGTH,
  MAX_TOTAL_BYTES,
  limitError,
} from './limits';
import { decodeDir, encodeDir } from '../store/encoding';
import {
  CountedStreamReader,
  checkAnnouncedCounts,
  latin1,
  latin1Bytes,
  malformed,
  parseDecimal,
  type StreamEntry,
  type StreamHeader,
} from './stream-reader';

/** `name\0size`: the longest line a v1 entry header may take (without the newline). */
const MAX_V1_ENTRY_LINE = MAX_NAME_LENGTH + 1 + MAX_DECIMAL_DIGITS;

/** Reads one v1 entry header (consumev1): the name is decodedir'd, like hg does before writing. */
export async function readV1EntryHeader(src: ByteSource): Promise<StreamEntry> {
  return parseV1EntryLine(await src.readLine(MAX_V1_ENTRY_LINE));
}

/** `encodedir(name)\0size` (the line without its newline) as an entry. */
function parseV1EntryLine(line: Uint8Array): StreamEntry {
  const nul = line.indexOf(0);
  if (nul < 0) {
    throw malformed(
      `unexpected response from remote server: entry header without NUL: ${JSON.stringify(latin1(line.subarray(0, 80)))}`,
    );
  }
  if (nul > MAX_NAME_LENGTH) throw limitError('entry name length', nul, MAX_NAME_LENGTH);
  const wireName = latin1(line.subarray(0, nul));
  const size = parseDecimal(latin1(line.subarray(nul + 1)), 'entry size', MAX_ENTRY_SIZE);
  return { vfs: 's', name: decodeDir(wireName), size };
}

/** Entries of a v1 stream: the checks on what follows are shared by stream_out and packed1. */
export class V1EntryReader extends CountedStreamReader {
  constructor(header: StreamHeader, src: ByteSource) {
    super(header, src);
  }

  protected async readEntry(): Promise<StreamEntry> {
    if (await this.src.atEof()) throw this.missingEntries();
    return readV1EntryHeader(this.src);
  }

  /** readEntry without awaiting, when the whole header line is in the current chunk. */
  protected tryReadEntry(): StreamEntry | undefined {
    const line = this.src.tryReadLine(MAX_V1_ENTRY_LINE);
    return line === null ? undefined : parseV1EntryLine(line);
  }

  protected async checkEnd(): Promise<void> {
    if (!(await this.src.atEof())) throw this.trailingData();
  }
}

/**
 * Reads a `stream_out` response body up to the first entry. Status 1 / 2 / other are the errors
 * hg's client reports (`operation forbidden by server`, `locking the remote repository failed`,
 * `the server sent an unknown error code`).
 */
export async function readStreamOut(src: ByteSource): Promise<V1EntryReader> {
  const statusLine = latin1(await src.readLine(64));
  // hg: int(l) — tolerant of surrounding whitespace, nothing else.
  const status = /^\s*[+-]?[0-9]+\s*$/.test(statusLine) ? Number(statusLine) : NaN;
  if (Number.isNaN(status)) {
    throw new SluiceError(
      'PROTOCOL',
      `unexpected response from remote server: ${JSON.stringify(statusLine)}`,
    );
  }
  if (status === 1) throw new SluiceError('NO_STREAM', 'operation forbidden by server', { status });
  if (status === 2) throw new SluiceError('REMOTE_ABORT', 'locking the remote repository failed', { status });
  if (status !== 0) throw new SluiceError('PROTOCOL', 'the server sent an unknown error code', { status });

  const countsLine = latin1(await src.readLine(2 * MAX_DECIMAL_DIGITS + 1));
  const m = /^([0-9]+) ([0-9]+)$/.exec(countsLine);
  if (!m) throw malformed(`unexpected response from remote server: ${JSON.stringify(countsLine)}`);
  const files = parseDecimal(m[1]!, 'file count', MAX_FILES);
  const bytes = parseDecimal(m[2]!, 'byte count', MAX_TOTAL_BYTES);
  checkAnnouncedCounts(files, bytes);
  return new V1EntryReader({ format: 'stream-v1', files, bytes, requirements: [], compression: 'UN' }, src);
}

/** `encodedir(name)\0size\n` (generatev1: names partially encoded for backwards compatibility). */
export function v1EntryHeader(name: string, size: number): Buffer {
  return latin1Bytes(`${encodeDir(name)}\0${size}\n`);
}

/** The two header lines of a successful stream_out body. */
export function streamOutPreamble(files: number, bytes: number): Buffer {
  return latin1Bytes(`0\n${files} ${bytes}\n`);
}
