// The `stream2` bundle2 part (bundle2.py addpartbundlestream2 / handlestreamv2bundle;
// streamclone.py generatev2 / _emit2 / consumev2):
//
//   mandatory params bytecount, filecount, requirements (URL-quoted, sorted, comma-joined)
//   entries, filecount times: vfs byte (`s` store, `c` cache) | uvarint name length |
//   uvarint data length | name (raw store path, no encodedir) | data

import { SluiceError } from '../errors';
import type { ByteSource } from './byte-source';
import {
  MAX_ENTRY_SIZE,
  MAX_FILES,
  MAX_NAME_LENGTH,
  MAX_REQUIREMENTS_FIELD,
  MAX_TOTAL_BYTES,
  limitError,
} from './limits';
import { quote, unquote, type Bundle2Part, type Param } from './bundle2';
import {
  CountedStreamReader,
  checkAnnouncedCounts,
  latin1,
  latin1Bytes,
  malformed,
  parseDecimal,
  parseRequirements,
  type CompressionKey,
  type StreamEntry,
  type StreamHeader,
} from './stream-reader';

export const STREAM2_PART = 'stream2';
/** The mandatory params a stream2 reader understands (for Bundle2ReaderOptions.knownParts). */
export const STREAM2_PARAMS: readonly string[] = ['bytecount', 'filecount', 'requirements'];

const VFS_STORE = 0x73; // 's'
const VFS_CACHE = 0x63; // 'c'
/** vfs byte + two uvarints of at most 8 bytes */
const MAX_ENTRY_PREFIX = 17;

export class Stream2Reader extends CountedStreamReader {
  constructor(header: StreamHeader, payload: ByteSource) {
    super(header, payload);
  }

  protected async readEntry(): Promise<StreamEntry> {
    const src = this.src;
    if (src.buffered < MAX_ENTRY_PREFIX + 256) {
      // slow path: the entry header may straddle payload chunks
      if (await src.atEof()) throw this.missingEntries();
      return readEntrySlow(src);
    }
    // fast path, no await: vfs, lengths and (usually) the name are in the current chunk
    const vfs = src.tryReadExact(1)![0]!;
    // the vfs key is checked before the varints, as the slow path does: the same refusal in any split
    if (vfs !== VFS_STORE && vfs !== VFS_CACHE) checkEntryPrefix(vfs, 0, 0);
    const nameLength = src.tryReadUvarint();
    const size = src.tryReadUvarint();
    checkEntryPrefix(vfs, nameLength, size);
    const name = src.tryReadExact(nameLength) ?? (await src.readExact(nameLength));
    return { vfs: vfs === VFS_STORE ? 's' : 'c', name: latin1(name), size };
  }

  /**
   * readEntry without awaiting: only a well-formed header wholly in the current chunk. Anything
   * else (a straddling header, an unknown vfs, a length beyond the limits, a varint readUvarint
   * would reject) is given back for readEntry to report, so errors do not depend on the split.
   */
  protected tryReadEntry(): StreamEntry | undefined {
    const src = this.src;
    const start = src.buffered;
    const head = src.tryReadExact(1);
    if (head === null) return undefined;
    const vfs = head[0]!;
    let nameLength = -1;
    let size = -1;
    if (vfs === VFS_STORE || vfs === VFS_CACHE) {
      try {
        nameLength = src.tryReadUvarint();
        if (nameLength >= 0) size = src.tryReadUvarint();
      } catch {
        size = -1;
      }
    }
    const name =
      size >= 0 && nameLength <= MAX_NAME_LENGTH && size <= MAX_ENTRY_SIZE
        ? src.tryReadExact(nameLength)
        : null;
    if (name === null) {
      src.unread(start - src.buffered);
      return undefined;
    }
    return { vfs: vfs === VFS_STORE ? 's' : 'c', name: latin1(name), size };
  }

  protected async checkEnd(): Promise<void> {
    if (!(await this.src.atEof())) throw this.trailingData();
  }
}

async function readEntrySlow(src: ByteSource): Promise<StreamEntry> {
  const vfs = await src.readByte();
  if (vfs !== VFS_STORE && vfs !== VFS_CACHE) checkEntryPrefix(vfs, 0, 0);
  const nameLength = await src.readUvarint();
  const size = await src.readUvarint();
  checkEntryPrefix(vfs, nameLength, size);
  const name = latin1(await src.readExact(nameLength));
  return { vfs: vfs === VFS_STORE ? 's' : 'c', name, size };
}

function checkEntryPrefix(vfs: number, nameLength: number, size: number): void {
  if (vfs !== VFS_STORE && vfs !== VFS_CACHE) {
    throw malformed(`unknown stream2 vfs key 0x${vfs.toString(16).padStart(2, '0')} (only s and c exist)`);
  }
  if (nameLength > MAX_NAME_LENGTH) throw limitError('entry name length', nameLength, MAX_NAME_LENGTH);
  if (size > MAX_ENTRY_SIZE) throw limitError('entry size', size, MAX_ENTRY_SIZE);
}

/** Header of a stream2 part from its params (handlestreamv2bundle), compression of the container. */
export function stream2Header(
  part: Pick<Bundle2Part, 'params'>,
  compression: CompressionKey = 'UN',
): StreamHeader {
  const param = (key: string): string => {
    const v = part.params.get(key);
    if (v === undefined) throw malformed(`stream2 part without the ${key} parameter`);
    return v;
  };
  const bytes = parseDecimal(param('bytecount'), 'byte count', MAX_TOTAL_BYTES);
  const files = parseDecimal(param('filecount'), 'file count', MAX_FILES);
  checkAnnouncedCounts(files, bytes);
  const quoted = param('requirements');
  if (quoted.length > MAX_REQUIREMENTS_FIELD)
    throw limitError('requirements field', quoted.length, MAX_REQUIREMENTS_FIELD);
  const requirements = parseRequirements(unquote(quoted));
  return { format: 'stream-v2', files, bytes, requirements, compression };
}

/** A reader of a stream2 part's entries (the part must be of type stream2). */
export function readStream2Part(part: Bundle2Part, compression: CompressionKey = 'UN'): Stream2Reader {
  if (part.type !== STREAM2_PART) {
    throw new SluiceError('MALFORMED', `expected a stream2 part, got ${JSON.stringify(part.type)}`);
  }
  return new Stream2Reader(stream2Header(part, compression), part.payload);
}

/** The part's mandatory params, in hg's order (bytecount, filecount, requirements). */
export function stream2Params(files: number, bytes: number, requirements: readonly string[]): Param[] {
  // _formatrequirementsspec: `shared` is dropped, the rest sorted and quoted
  const reqs = requirements.filter((r) => r !== 'shared').sort();
  return [
    ['bytecount', String(bytes)],
    ['filecount', String(files)],
    ['requirements', quote(reqs.join(','))],
  ];
}

/** `vfs | uvarint(len(name)) | uvarint(size) | name` (_emit2). */
export function stream2EntryHeader(vfs: 's' | 'c', name: string, size: number): Buffer {
  const nameBytes = latin1Bytes(name);
  const out = Buffer.allocUnsafe(1 + 8 + 8 + nameBytes.length);
  out[0] = vfs === 's' ? VFS_STORE : VFS_CACHE;
  let at = writeUvarint(out, 1, nameBytes.length);
  at = writeUvarint(out, at, size);
  nameBytes.copy(out, at);
  return out.subarray(0, at + nameBytes.length);
}

/** util.uvarintencode into `out` at `at`; returns the end offset. */
export function writeUvarint(out: Uint8Array, at: number, value: number): number {
  if (!Number.isSafeInteger(value) || value < 0)
    throw new SluiceError('USAGE', `invalid uvarint value ${value}`);
  while (value >= 0x80) {
    out[at++] = (value % 0x80) | 0x80;
    value = Math.floor(value / 0x80);
  }
  out[at++] = value;
  return at;
}
